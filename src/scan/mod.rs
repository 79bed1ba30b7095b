//! The pattern engine: which output patterns match a child's output, line
//! by line, over a stream that arrives in chunks.
//!
//! A pump (`run::pump`) reads raw chunks from the child's pipe, writes each
//! one on to its destination at once, and only then feeds the [`Scanner`],
//! which matches the patterns per line (`\n` or `\r` ends a line) on
//! bytes. Memory is bounded whatever the output: one chunk
//! plus one line window; the part of a longer line past the window is not
//! scanned.
//!
//! What a pattern means is defined line by line: pattern `p` matched when
//! `pattern.is_match(line)` for some line (cut to the window), whatever the
//! chunking. Asking that of every line for every pattern would be slow, so
//! the scanner works in three steps, each sound for any valid pattern:
//!
//! 1. `per_block`, one regex built from a *widened* form of every pattern
//!    (see `widen`) finds, in a run of whole lines, the first line where
//!    any pattern could match; most chunks have none and cost one search.
//!    The widened form matches a superset of what the pattern matches in a
//!    line and can never cross a line end, so a line it skips cannot match.
//! 2. On that candidate line, `per_line` (the widened patterns as one
//!    set) tells which patterns could match there.
//! 3. Only those, when not matched already, are asked exactly, with the
//!    pattern's own regex on the line alone.
//!
//! Widening also keeps the automata small: a Unicode class like `\w` or
//! `\p{L}` becomes its ASCII part plus "a UTF-8 lead byte it can start with,
//! then continuation bytes". Fifty such patterns as one exact set overflow
//! the lazy DFA's cache and fall back to the slow NFA simulation (0.5 MiB/s);
//! widened, the set stays on the lazy DFA.

mod headers;
mod widen;

use regex::bytes::Regex;
use regex_automata::{Input, MatchKind, PatternSet as Hits, meta};
use regex_syntax::hir::Hir;

pub(crate) use headers::{HeaderReader, Response};
use widen::widen;

/// Longest line (prefix) the scanner keeps for matching.
pub(crate) const LINE_WINDOW: usize = 64 * 1024;
/// Size of one read from the child's pipe, and of the pipe itself where
/// the system allows (`/proc/sys/fs/pipe-max-size` is 1 MiB by default).
pub(crate) const CHUNK: usize = 256 * 1024;

/// The patterns compiled once per run, shared by every pump.
#[derive(Debug)]
pub(crate) struct PatternSet {
    /// The patterns as given, numbered in order: step 3 asks them exactly.
    patterns: Vec<Regex>,
    /// Step 1: the alternation of every widened pattern, asked where the
    /// first candidate line of a run of lines is. (One regex picks far
    /// better literal prefilters than a set: 17x faster on `x_[0-9]{3}`.)
    /// `None` if it could not be built: every line is then a candidate.
    per_block: Option<meta::Regex>,
    /// Step 2: the widened patterns as a set (pattern `i` is rule `i`, the
    /// response headers' rule comes last). `None` if it could not be built:
    /// every pattern is then asked exactly.
    per_line: Option<meta::Regex>,
    /// Index in `per_line` of the rule that reads a response's status and
    /// rate-limit headers (`headers`), when they are wanted.
    headers: Option<usize>,
    /// Some pattern matches an empty line. `per_block` finds every line
    /// but one kind: the empty line between a `\r` and a `\n`, where its
    /// CRLF-mode `^` and `$` never match; such lines are checked apart.
    empty_line_matches: bool,
    /// Per pattern: keep the first line it matched (a preset's message
    /// quotes its capture groups). Empty: keep none.
    keep_line: Vec<bool>,
}

/// How much of a matched line is kept for a message's capture groups.
pub(crate) const KEPT_LINE: usize = 1024;

/// Compiled size limit of the widened automata (each user pattern is
/// limited to 10 MiB on its own, all of them to 64 MiB together; widened,
/// they are no bigger). Past it, the prefilters give way to the exact step.
const SIZE_LIMIT: usize = 64 * 1024 * 1024;

impl PatternSet {
    /// Compile `patterns`, numbered in the order given, and the rule that
    /// reads response headers (Retry-After and the rate-limit fields) when
    /// wanted.
    pub(crate) fn new(patterns: &[Regex], want_headers: bool) -> PatternSet {
        let patterns = patterns.to_vec();
        let mut sources: Vec<&str> = patterns.iter().map(Regex::as_str).collect();
        let headers = want_headers.then(|| {
            sources.push(headers::WIDENED);
            sources.len() - 1
        });
        // Each source was accepted by the regex crate with its default
        // flags, which these parser settings repeat (`regex::bytes`: no
        // UTF-8 requirement); a failure only costs the fast path. One
        // parser per source: a parser keeps the flags a bare `(?-u)` set
        // for the next pattern it parses.
        let widened: Option<Vec<Hir>> = sources
            .iter()
            .map(|source| {
                let mut parser = regex_syntax::ParserBuilder::new().utf8(false).build();
                parser.parse(source).ok().map(widen)
            })
            .collect();
        let config = meta::Config::new()
            .utf8_empty(false)
            .nfa_size_limit(Some(SIZE_LIMIT));
        let (per_block, per_line) = match widened {
            Some(hirs) => (
                meta::Builder::new()
                    .configure(config.clone())
                    .build_from_hir(&Hir::alternation(hirs.clone()))
                    .ok(),
                meta::Builder::new()
                    .configure(config.match_kind(MatchKind::All))
                    .build_many_from_hir(&hirs)
                    .ok(),
            ),
            None => (None, None),
        };
        let empty_line_matches = patterns.iter().any(|p| p.is_match(b""));
        PatternSet {
            patterns,
            per_block,
            per_line,
            headers,
            empty_line_matches,
            keep_line: Vec::new(),
        }
    }

    /// Keep the first matching line (at most [`KEPT_LINE`] bytes) of the
    /// patterns flagged here, by their numbers.
    pub(crate) fn keep_lines(&mut self, flags: Vec<bool>) {
        self.keep_line = flags;
    }

    /// How many rules steps 1 and 2 know: the patterns, then the headers.
    fn rules(&self) -> usize {
        self.patterns.len() + usize::from(self.headers.is_some())
    }
}

/// What the scanner saw in one stream of one attempt.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ScanResult {
    /// Per pattern of the set: did some line match?
    pub(crate) matched: Vec<bool>,
    /// The status and rate-limit headers of the last response printed
    /// (read only when asked for: `--retry-after`).
    pub(crate) response: Response,
    /// Per pattern flagged by [`PatternSet::keep_lines`]: the first line it
    /// matched, cut at [`KEPT_LINE`] bytes. Empty when none is flagged.
    pub(crate) lines: Vec<Option<Vec<u8>>>,
}

impl ScanResult {
    pub(crate) fn merge(&mut self, other: &ScanResult) {
        if self.matched.len() < other.matched.len() {
            self.matched.resize(other.matched.len(), false);
        }
        for (mine, theirs) in self.matched.iter_mut().zip(&other.matched) {
            *mine |= *theirs;
        }
        if !other.response.is_empty() {
            self.response.clone_from(&other.response);
        }
        if self.lines.len() < other.lines.len() {
            self.lines.resize(other.lines.len(), None);
        }
        for (mine, theirs) in self.lines.iter_mut().zip(&other.lines) {
            if mine.is_none() {
                mine.clone_from(theirs);
            }
        }
    }
}

/// Per-line matcher over a stream that arrives in arbitrary chunks.
pub(crate) struct Scanner<'a> {
    set: &'a PatternSet,
    line: Vec<u8>,
    result: ScanResult,
    /// This scanner's own search state for the prefilters (no pool).
    block_cache: Option<meta::Cache>,
    line_cache: Option<meta::Cache>,
    hits: Hits,
    /// Patterns not matched yet: at 0 (and no headers wanted) nothing
    /// more can be learnt from the stream.
    unmatched: usize,
    /// The response headers read so far (when wanted).
    headers: HeaderReader,
    /// The last line end passed while a header block was open was a `\r`:
    /// an empty line ended by `\n` right after it is the second half of a
    /// CRLF, not the blank line that ends the block.
    after_cr: bool,
}

pub(crate) fn is_line_end(byte: u8) -> bool {
    byte == b'\n' || byte == b'\r'
}

/// The first line of `block` longer than [`LINE_WINDOW`], as its start and
/// end (the index of its line end, or the block's length).
fn long_line(block: &[u8]) -> Option<(usize, usize)> {
    let mut start = 0;
    while block.len() - start > LINE_WINDOW {
        if let Some(end) = memchr::memrchr2(b'\n', b'\r', &block[start..=start + LINE_WINDOW]) {
            start += end + 1;
        } else {
            let from = start + LINE_WINDOW + 1;
            let end =
                memchr::memchr2(b'\n', b'\r', &block[from..]).map_or(block.len(), |i| from + i);
            return Some((start, end));
        }
    }
    None
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(set: &'a PatternSet) -> Scanner<'a> {
        Scanner {
            set,
            line: Vec::new(),
            result: ScanResult {
                matched: vec![false; set.patterns.len()],
                response: Response::default(),
                lines: vec![None; set.keep_line.len()],
            },
            block_cache: set.per_block.as_ref().map(meta::Regex::create_cache),
            line_cache: set.per_line.as_ref().map(meta::Regex::create_cache),
            hits: Hits::new(set.rules()),
            unmatched: set.patterns.len(),
            headers: HeaderReader::default(),
            after_cr: false,
        }
    }

    pub(crate) fn feed(&mut self, mut chunk: &[u8]) {
        if self.unmatched == 0 && self.set.headers.is_none() {
            return;
        }
        let Some(first_end) = memchr::memchr2(b'\n', b'\r', chunk) else {
            self.keep(chunk);
            return;
        };
        // The line begun in earlier chunks ends here.
        self.keep(&chunk[..first_end]);
        self.finish_line(Some(chunk[first_end]));
        chunk = &chunk[first_end + 1..];
        // Whole lines, up to the last line end of the chunk.
        if let Some(last_end) = memchr::memrchr2(b'\n', b'\r', chunk) {
            self.scan_block(&chunk[..last_end], chunk[last_end]);
            chunk = &chunk[last_end + 1..];
        }
        self.keep(chunk);
    }

    /// The stream ended: a last line without a line end still counts.
    pub(crate) fn finish(mut self) -> ScanResult {
        if !self.line.is_empty() {
            self.finish_line(None);
        }
        self.result.response = self.headers.into_response();
        self.result
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = LINE_WINDOW.saturating_sub(self.line.len());
        self.line.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// The line kept in `line` ends with `end` (`None`: the stream's end).
    fn finish_line(&mut self, end: Option<u8>) {
        let line = std::mem::take(&mut self.line);
        self.scan_lines(&line, end);
        self.line = line;
        self.line.clear();
    }

    /// Whole lines, separated by line ends, the last ended by `end`. A line
    /// longer than the window is matched by its window only, so it is cut
    /// out of the run.
    fn scan_block(&mut self, mut block: &[u8], end: u8) {
        while let Some((start, long_end)) = long_line(block) {
            if start > 0 {
                self.scan_lines(&block[..start - 1], Some(block[start - 1]));
            }
            let after = block.get(long_end).copied().unwrap_or(end);
            self.scan_lines(&block[start..start + LINE_WINDOW], Some(after));
            if long_end == block.len() {
                return;
            }
            block = &block[long_end + 1..];
        }
        self.scan_lines(block, Some(end));
    }

    /// Lines separated by line ends, none longer than the window; `end`
    /// ends the last one (`None`: the stream's end).
    fn scan_lines(&mut self, block: &[u8], end: Option<u8>) {
        if self.set.per_block.is_none() {
            let mut at = 0;
            loop {
                at = match self.read_header_block(block, at, end) {
                    Some(at) => at,
                    None => return,
                };
                let line_end =
                    memchr::memchr2(b'\n', b'\r', &block[at..]).map_or(block.len(), |i| at + i);
                self.check_line(&block[at..line_end]);
                self.after_cr = block.get(line_end).copied().or(end) == Some(b'\r');
                if line_end == block.len() {
                    return;
                }
                at = line_end + 1;
            }
        }
        if self.set.empty_line_matches && memchr::memmem::find(block, b"\r\n").is_some() {
            self.check_line(b"");
        }
        let mut at = 0;
        loop {
            at = match self.read_header_block(block, at, end) {
                Some(at) => at,
                None => return,
            };
            let Some(found) = self.next_candidate(block, at) else {
                return;
            };
            // The leftmost match lies in the first line that has one (no
            // match crosses a line end); its end is in that line too.
            let start =
                memchr::memrchr2(b'\n', b'\r', &block[at..found]).map_or(at, |i| at + i + 1);
            let line_end =
                memchr::memchr2(b'\n', b'\r', &block[found..]).map_or(block.len(), |i| found + i);
            self.check_line(&block[start..line_end]);
            self.after_cr = block.get(line_end).copied().or(end) == Some(b'\r');
            if line_end == block.len() {
                return;
            }
            at = line_end + 1;
        }
    }

    /// While a response's header block is open, every line from `at` on
    /// goes to the header reader (and the patterns) one by one, until the
    /// block ends: where the search for candidates resumes, or `None` when
    /// the lines ran out first.
    fn read_header_block(&mut self, block: &[u8], mut at: usize, end: Option<u8>) -> Option<usize> {
        while self.headers.is_open() {
            if at > block.len() {
                return None;
            }
            let line_end =
                memchr::memchr2(b'\n', b'\r', &block[at..]).map_or(block.len(), |i| at + i);
            let line = &block[at..line_end];
            let ended_by = block.get(line_end).copied().or(end);
            if !(line.is_empty() && self.after_cr && ended_by == Some(b'\n')) {
                self.headers.observe(line);
            }
            self.after_cr = ended_by == Some(b'\r');
            if self.unmatched > 0 {
                self.check_line(line);
            }
            if line_end == block.len() {
                return None;
            }
            at = line_end + 1;
        }
        (at <= block.len()).then_some(at)
    }

    /// Step 1: where the leftmost widened match from `at` on ends.
    fn next_candidate(&mut self, block: &[u8], at: usize) -> Option<usize> {
        let (Some(per_block), Some(cache)) = (&self.set.per_block, self.block_cache.as_mut())
        else {
            return None;
        };
        per_block
            .search_half_with(cache, &Input::new(block).range(at..))
            .map(|found| found.offset())
    }

    /// Steps 2 and 3 on one line (no line end in it, at most the window).
    fn check_line(&mut self, line: &[u8]) {
        let mut hits = std::mem::replace(&mut self.hits, Hits::new(0));
        match (&self.set.per_line, self.line_cache.as_mut()) {
            (Some(per_line), Some(cache)) => {
                hits.clear();
                per_line.which_overlapping_matches_with(cache, &Input::new(line), &mut hits);
                for rule in hits.iter() {
                    self.confirm(rule.as_usize(), line);
                }
            }
            _ => {
                for rule in 0..self.set.rules() {
                    self.confirm(rule, line);
                }
            }
        }
        self.hits = hits;
    }

    /// Step 3: does rule `rule` really match `line`?
    fn confirm(&mut self, rule: usize, line: &[u8]) {
        if Some(rule) == self.set.headers {
            // An open block's lines reach the reader one by one already.
            if !self.headers.is_open() {
                self.headers.observe(line);
            }
        } else if !self.result.matched[rule] && self.set.patterns[rule].is_match(line) {
            self.result.matched[rule] = true;
            self.unmatched -= 1;
            if self.set.keep_line.get(rule) == Some(&true)
                && let Some(kept) = self.result.lines.get_mut(rule)
            {
                *kept = Some(line[..line.len().min(KEPT_LINE)].to_vec());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn set(stop: &[&str], retry: &[&str], retry_after: bool) -> PatternSet {
        let patterns = stop
            .iter()
            .chain(retry)
            .map(|source| Regex::new(source).unwrap())
            .collect::<Vec<_>>();
        PatternSet::new(&patterns, retry_after)
    }

    fn scan_in_chunks(set: &PatternSet, input: &[u8], chunk: usize) -> ScanResult {
        let mut scanner = Scanner::new(set);
        for piece in input.chunks(chunk) {
            scanner.feed(piece);
        }
        scanner.finish()
    }

    #[test]
    fn matches_lines_split_across_chunks() {
        let set = set(&["^fatal: disk$"], &["busy"], false);
        let input = b"ok\nsome fatal: disk\nfatal: disk\nstill going";
        for chunk in [1, 2, 3, 5, 7, 64, 4096] {
            let result = scan_in_chunks(&set, input, chunk);
            assert_eq!(result.matched, [true, false], "chunk size {chunk}");
        }
        assert_eq!(
            scan_in_chunks(&set, b"fatal: di", 4).matched,
            [false, false]
        );
    }

    #[test]
    fn a_match_never_spans_two_lines() {
        let set = set(&[r"a\sb"], &[], false);
        assert_eq!(scan_in_chunks(&set, b"xa\nb\n", 100).matched, [false]);
        assert_eq!(scan_in_chunks(&set, b"xa\rb\n", 100).matched, [false]);
        assert_eq!(scan_in_chunks(&set, b"xa b\n", 100).matched, [true]);
    }

    #[test]
    fn carriage_returns_end_lines_and_the_last_line_needs_no_newline() {
        let set = set(&["^100%$"], &[], false);
        assert_eq!(scan_in_chunks(&set, b" 10%\r 50%\r100%", 3).matched, [true]);
    }

    #[test]
    fn non_utf8_bytes_are_matched_as_bytes() {
        let set = set(&[r"(?-u)\xff"], &[], false);
        assert_eq!(scan_in_chunks(&set, b"a\rb\0c\xff\n", 2).matched, [true]);
    }

    #[test]
    fn a_huge_line_keeps_only_its_window() {
        let set = set(&["^x+$"], &["tail"], false);
        let mut scanner = Scanner::new(&set);
        let block = vec![b'x'; 1 << 20];
        for _ in 0..64 {
            scanner.feed(&block);
            assert!(scanner.line.len() <= LINE_WINDOW);
        }
        scanner.feed(b"tail\nnext");
        let result = scanner.finish();
        // The window held only x's: the first line matched; "tail" was past it.
        assert_eq!(result.matched, [true, false]);
    }

    #[test]
    fn a_line_longer_than_the_window_matches_by_its_window_inside_a_chunk() {
        // The long line lies between two line ends of one chunk, so it is
        // in the middle of a run of whole lines, not in the line buffer.
        let mut input = b"head\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', LINE_WINDOW));
        input.extend_from_slice(b"tail\nend\n");
        let window_only = set(&["^x+$"], &[], false);
        let past_window = set(&["tail"], &["^end$"], false);
        for chunk in [input.len(), CHUNK, LINE_WINDOW + 1, 4096] {
            // Its window holds only x's; "tail" lies past the window.
            let result = scan_in_chunks(&window_only, &input, chunk);
            assert_eq!(result.matched, [true], "chunk size {chunk}");
            let result = scan_in_chunks(&past_window, &input, chunk);
            assert_eq!(result.matched, [false, true], "chunk size {chunk}");
        }
    }

    #[test]
    fn mixed_flag_groups_keep_their_anchors_on_every_line() {
        // Issue 13, item 4: missed unless on the first line of a run.
        let set = set(
            &[r"(?i-m)^fatal", r"(?s-m)^a.b$"],
            &[r"(?x-m) ^ f a t a l $"],
            false,
        );
        let input = b"start\nmore\nFATAL: disk\naxb\nfatal\n";
        for chunk in [1, 3, input.len()] {
            let result = scan_in_chunks(&set, input, chunk);
            assert_eq!(result.matched, [true, true, true], "chunk size {chunk}");
        }
        let result = scan_in_chunks(&set, b"start\nno fatal\na\nb\n fatal\n", 100);
        assert_eq!(result.matched, [false, false, false]);
    }

    #[test]
    fn a_bare_flag_switch_stays_in_its_own_pattern() {
        // A regex-syntax parser reused for the next pattern would keep
        // `(?-u)` on and read `(?i)É` as bytes, missing "é".
        let set = set(&[r"(?-u)\xff", "(?i)É"], &[], false);
        assert_eq!(
            scan_in_chunks(&set, "é\n".as_bytes(), 100).matched,
            [false, true]
        );
    }

    #[test]
    fn the_empty_line_of_a_crlf_pair_is_a_line() {
        let set = set(&["^$"], &[r"^\s*$"], false);
        for input in [&b"a\nb\r\nc\n"[..], b"a\r\nb\n", b"\r\n"] {
            for chunk in [1, 2, 100] {
                let result = scan_in_chunks(&set, input, chunk);
                assert_eq!(
                    result.matched,
                    [true, true],
                    "{input:?} in chunks of {chunk}"
                );
            }
        }
        assert_eq!(
            scan_in_chunks(&set, b"a\nb\rc\n", 100).matched,
            [false, false]
        );
    }

    #[test]
    fn fifty_unicode_class_patterns_match_exactly() {
        let sources: Vec<String> = (1..=50).map(|i| format!(r"\w+\s+\p{{L}}+{i}$")).collect();
        let sources: Vec<&str> = sources.iter().map(String::as_str).collect();
        let set = set(&[], &sources, false);
        let input =
            "été 17\nnaïve Größe7\r日本 語x12\nwort wörter50\nabc déf3 \nab c1x\n".repeat(50);
        let result = scan_in_chunks(&set, input.as_bytes(), 1000);
        let expected: Vec<bool> = (1..=50).map(|i| [7, 12, 50].contains(&i)).collect();
        assert_eq!(result.matched, expected);
    }

    /// What the contract says: every line (`\n` or `\r` ends one; the
    /// text after the last line end is a line when not empty), cut to the
    /// window, matched alone by each pattern's own regex.
    fn reference(sources: &[&str], retry_after: bool, input: &[u8]) -> ScanResult {
        let regexes: Vec<Regex> = sources.iter().map(|s| Regex::new(s).unwrap()).collect();
        let mut lines: Vec<&[u8]> = input.split(|&b| b == b'\n' || b == b'\r').collect();
        if lines.last().is_some_and(|line| line.is_empty()) {
            lines.pop();
        }
        let mut result = ScanResult {
            matched: vec![false; regexes.len()],
            response: Response::default(),
            lines: Vec::new(),
        };
        for line in lines {
            let line = &line[..line.len().min(LINE_WINDOW)];
            for (matched, regex) in result.matched.iter_mut().zip(&regexes) {
                *matched |= regex.is_match(line);
            }
        }
        if retry_after {
            // The header block's lines: a CRLF ends one line, not two.
            let mut reader = HeaderReader::default();
            let mut rest = input;
            while !rest.is_empty() {
                let end = rest
                    .iter()
                    .position(|&b| is_line_end(b))
                    .unwrap_or(rest.len());
                reader.observe(&rest[..end.min(LINE_WINDOW)]);
                let ends = if rest[end..].starts_with(b"\r\n") {
                    2
                } else {
                    1
                };
                rest = &rest[(end + ends).min(rest.len())..];
            }
            result.response = reader.into_response();
        }
        result
    }

    fn scan_in_pieces(set: &PatternSet, input: &[u8], sizes: &[usize]) -> ScanResult {
        let mut scanner = Scanner::new(set);
        let mut rest = input;
        for &size in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (piece, tail) = rest.split_at(size.min(rest.len()));
            scanner.feed(piece);
            rest = tail;
        }
        scanner.finish()
    }

    /// The flags a group can set or clear.
    const FLAGS: [char; 7] = ['i', 'm', 's', 'x', 'U', 'u', 'R'];

    /// Pattern bodies that flags change: anchors, dots, classes holding
    /// line ends, case, Unicode, whitespace, attempts to span lines.
    const BODIES: &[&str] = &[
        "^fatal",
        "^fatal$",
        "fatal$",
        r"^a.b$",
        "a.b",
        "^.+$",
        "^.*$",
        r"a\sb",
        r"a\s*$",
        r"^\s*$",
        "^$",
        "^",
        "$",
        r"a[^a]b",
        r"a\Sb",
        r"a\Wb",
        r"\bfatal\b",
        r"\Bat",
        r"\b",
        r"\Afatal",
        r"fatal\z",
        r"\A\z",
        r"\w+\s+\p{L}+1$",
        r"\w+",
        "é",
        r"\bé",
        "FATAL",
        "a b # comment",
        r"a\ b",
        r"a.+?b",
        r"a\nb",
        r"a\r?\nb",
        r"a$\n^b",
        r"a(?:\r\n)?b",
        r"[\r\n]",
        "a.{0,3}b",
        r"b$\r?^x",
    ];

    /// Patterns outside the flags-and-body scheme: scoped groups, group
    /// switches mid-pattern, byte classes, word-boundary variants.
    const OTHERS: &[&str] = &[
        "(?m:^a)|b$",
        "x(?-m:$)",
        "(?m)a$(?-m)",
        "(?m)^a(?-m:$)",
        "(?i:F)atal",
        "(?s:a.)b",
        r"(?-u)\xff",
        r"(?-u:.)x",
        r"(?-u)[^a]",
        r"(?-u)\bx",
        r"(?-u:\b)x(?-u:\b)",
        r"(?-u)[\x80-\xff]{2}",
        r"[^\x00-\x7f]",
        r"\p{Greek}",
        r"^\p{L}+$",
        r"(?i)É",
        r"\b{start}a",
        r"a\b{end}",
        r"\b{start-half}x",
        r"x\b{end-half}",
        "[^x]*",
        "x*",
        r"\x0a",
        r"1\s*$",
        r"a\D",
        r"(?m)^\s*$",
        r"(?sm)^a.*b$",
    ];

    /// A flag group `(?on-off)` or `(?on-off:body)` over a body.
    fn flagged() -> impl Strategy<Value = String> {
        (
            proptest::collection::vec(0u8..3, FLAGS.len()),
            proptest::sample::select(BODIES),
            any::<bool>(),
        )
            .prop_map(|(states, body, scoped)| {
                let on: String = FLAGS
                    .iter()
                    .zip(&states)
                    .filter(|(_, s)| **s == 1)
                    .map(|(f, _)| *f)
                    .collect();
                let off: String = FLAGS
                    .iter()
                    .zip(&states)
                    .filter(|(_, s)| **s == 2)
                    .map(|(f, _)| *f)
                    .collect();
                let group = if off.is_empty() {
                    on
                } else {
                    format!("{on}-{off}")
                };
                match (group.is_empty(), scoped) {
                    (true, _) => body.to_string(),
                    (false, true) => format!("(?{group}:{body})"),
                    (false, false) => format!("(?{group}){body}"),
                }
            })
            .prop_filter("the regex crate takes it", |source| {
                Regex::new(source).is_ok()
            })
    }

    fn pattern() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => flagged(),
            1 => proptest::sample::select(OTHERS).prop_map(str::to_string),
        ]
    }

    /// Output made of pieces the patterns care about.
    fn output() -> impl Strategy<Value = Vec<u8>> {
        const PIECES: &[&[u8]] = &[
            b"a",
            b"b",
            b"x",
            b"1",
            b"_",
            b" ",
            b"\t",
            b"\x0b",
            b"\n",
            b"\r",
            b"\r\n",
            b"\n\r",
            b"fatal",
            b"FATAL",
            b"Fatal",
            b"at",
            b"a b",
            b"a\nb",
            b"a\rb",
            b"\xc3\xa9",
            b"\xc3\x89",
            b"\xce\xb1",
            b"\xe6\x97\xa5",
            b"\xff",
            b"\xc3",
            b"<",
            b"Retry-After: 7",
            b"retry-after:3",
            b"HTTP/1.1 429 ",
            b" < x-RateLimit-Reset: 60",
            b"RateLimit: \"d\";r=0;t=5",
            b"Date: ",
            b"< HTTP/2 503",
            b"< ",
            b"  HTTP/1.1 503 x",
            b"  Retry-After: 2",
        ];
        proptest::collection::vec(proptest::sample::select(PIECES), 0..40)
            .prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn scanning_matches_line_by_line_on_any_chunking(
            sources in proptest::collection::vec(pattern(), 1..6),
            retry_after in any::<bool>(),
            input in output(),
            sizes in proptest::collection::vec(1usize..12, 1..8),
            whole in any::<bool>(),
        ) {
            let sources: Vec<&str> = sources.iter().map(String::as_str).collect();
            let set = set(&sources, &[], retry_after);
            let sizes = if whole { vec![input.len().max(1)] } else { sizes };
            prop_assert_eq!(
                scan_in_pieces(&set, &input, &sizes),
                reference(&sources, retry_after, &input)
            );
        }
    }

    /// Lines just shorter and longer than the window, in chunks small and
    /// large enough to hold them whole.
    fn long_output() -> impl Strategy<Value = Vec<u8>> {
        let long = (
            LINE_WINDOW - 2..LINE_WINDOW + 3,
            proptest::sample::select(vec![&b"x"[..], b"\xc3\xa9"]),
        );
        (output(), long, output()).prop_map(|(before, (count, piece), after)| {
            let mut input = before;
            input.extend(piece.iter().cycle().take(count));
            input.extend_from_slice(&after);
            input
        })
    }

    proptest! {
        // Each case scans a 64 KiB line: fewer cases.
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn lines_around_the_window_match_by_their_window(
            sources in proptest::sample::subsequence(
                vec![r"^x+$", "x$", "^é+$", "fatal", "a.b", r"\w$", "^$"],
                1..3,
            ),
            input in long_output(),
            sizes in proptest::collection::vec(
                prop_oneof![1usize..5000, LINE_WINDOW - 10..CHUNK + 10],
                1..4,
            ),
        ) {
            let set = set(&sources, &[], false);
            prop_assert_eq!(
                scan_in_pieces(&set, &input, &sizes),
                reference(&sources, false, &input)
            );
        }
    }

    #[test]
    fn the_last_response_wins_and_its_body_is_no_header() {
        let set = set(&[], &[], true);
        let input = b"HTTP/1.1 503\r\nRetry-After: 120\r\n\r\nretry-after: 5\r\n< HTTP/2 429\r\n< retry-after: 9\r\n< \r\n<retry-after: 1\n";
        for chunk in [1, 2, 7, input.len()] {
            let result = scan_in_chunks(&set, input, chunk);
            assert_eq!(result.response.retry_after.as_deref(), Some("9"), "{chunk}");
            assert_eq!(result.response.status, Some(429));
        }
        let body = b"HTTP/1.1 200 OK\r\nContent-Type: text/yaml\r\n\r\nretry-after: 240\r\n";
        for chunk in [1, 3, body.len()] {
            let result = scan_in_chunks(&set, body, chunk);
            assert_eq!(
                (result.response.status, result.response.retry_after),
                (Some(200), None)
            );
        }
    }

    #[test]
    fn the_first_matching_line_is_kept_for_flagged_patterns_only() {
        let mut set = set(&["error: (\\d+)"], &["busy"], false);
        set.keep_lines(vec![true, false]);
        let result = scan_in_chunks(&set, b"error: 503\nbusy\nerror: 404\n", 5);
        assert_eq!(result.matched, [true, true]);
        assert_eq!(result.lines, [Some(b"error: 503".to_vec()), None]);
    }
}
