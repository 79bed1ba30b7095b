//! The rules that judge a failed attempt, as data: one [`RuleSet`] per
//! source (the command line's own flags first, then a preset's), each with
//! its exit-code lists and its output patterns. [`Rules`] holds them in
//! precedence order with every pattern compiled once, so a bad pattern is a
//! usage error before anything runs. [`PatternCompiler`] compiles them, all
//! of a run's patterns against one total size limit.

use regex::bytes::Regex;
use regex_automata::{meta, util::syntax};

use crate::scan::PatternSet;
use crate::values::CodeSet;

/// Where a rule set comes from; messages name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RuleSource {
    CommandLine,
    Preset {
        name: String,
        /// Where it was defined: `built-in (presets/http.toml)` or a path.
        origin: String,
        /// Chosen from the command's file name, not by `--preset NAME`.
        automatic: bool,
        /// How the command was found when a wrapper runs it or its name
        /// carries a version: `apt-get, run by sudo`.
        through: Option<String>,
    },
}

impl RuleSource {
    /// A preset's source, named by `--preset NAME`.
    #[cfg(test)]
    pub(crate) fn preset(name: &str) -> RuleSource {
        RuleSource::Preset {
            name: name.to_string(),
            origin: "built-in".to_string(),
            automatic: false,
            through: None,
        }
    }

    /// How a preset came to apply, for `-v` and `--explain`: `preset git
    /// (built-in (presets/vcs.toml)), chosen from the command name; --preset
    /// none turns it off`.
    pub(crate) fn preset_line(&self) -> Option<String> {
        let RuleSource::Preset {
            name,
            origin,
            automatic,
            through,
        } = self
        else {
            return None;
        };
        Some(if let (true, Some(through)) = (automatic, through) {
            format!(
                "preset {name} from {origin}, chosen from the command {through} (--preset none turns it off)"
            )
        } else if *automatic {
            format!(
                "preset {name} from {origin}, chosen from the command name (--preset none turns it off)"
            )
        } else {
            format!("preset {name} from {origin}, named by --preset")
        })
    }
}

/// A piece of a preset's `means` template: `curl reported HTTP {1}`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    Text(&'a str),
    /// `{{` or `}}`.
    Brace(char),
    /// `{N}`: capture group N of the matched line.
    Group(usize),
}

/// Split `means` into text, escaped braces and `{N}` groups.
pub(crate) fn template_pieces(means: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut pieces = Vec::new();
    let mut rest = means;
    while let Some(at) = rest.find(['{', '}']) {
        if at > 0 {
            pieces.push(Piece::Text(&rest[..at]));
        }
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("{{") {
            pieces.push(Piece::Brace('{'));
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            pieces.push(Piece::Brace('}'));
            rest = after;
        } else if let Some(close) = tail.strip_prefix('{').and_then(|t| t.find('}')) {
            let number = &tail[1..=close];
            match number.parse::<usize>() {
                Ok(n) if number.bytes().all(|b| b.is_ascii_digit()) => {
                    pieces.push(Piece::Group(n));
                }
                _ => {
                    return Err(format!(
                        "'{{{number}}}' is not a group number (write {{{{ and }}}} for braces)"
                    ));
                }
            }
            rest = &tail[close + 2..];
        } else {
            return Err("a lone brace (write {{ or }})".to_string());
        }
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest));
    }
    Ok(pieces)
}

/// `means` with `{N}` replaced by group N of `regex` on `line` (empty when
/// the group took no part; control characters escaped, at most 80
/// characters each). Without a line, the template's groups read `?`.
pub(crate) fn render_means(means: &str, regex: &Regex, line: Option<&[u8]>) -> String {
    let Ok(pieces) = template_pieces(means) else {
        return means.to_string();
    };
    let captures = line.and_then(|line| regex.captures(line));
    let mut text = String::new();
    for piece in pieces {
        match piece {
            Piece::Text(part) => text.push_str(part),
            Piece::Brace(brace) => text.push(brace),
            Piece::Group(n) => match &captures {
                Some(captures) => {
                    if let Some(group) = captures.get(n) {
                        let group = String::from_utf8_lossy(group.as_bytes());
                        text.push_str(&crate::text::sanitize_line(&group, 80));
                    }
                }
                None => text.push('?'),
            },
        }
    }
    text
}

/// Largest compiled size of one output pattern (the regex crate's size
/// limit): generous, but a pathological pattern fails at once instead of
/// eating memory.
pub(crate) const PATTERN_SIZE_LIMIT: usize = 10 * 1024 * 1024;

/// Largest compiled size of all the output patterns of a run together (the
/// flags' and the chosen preset's): the heap their engines keep. The limit
/// per pattern alone let 100 patterns like `\w{200}x1` take 1.2 GB and 6 s
/// to start; building takes about 3.5 times what is kept, for a moment.
pub(crate) const TOTAL_SIZE_LIMIT: usize = 64 * 1024 * 1024;

/// The most output patterns a run may have (flags and preset together).
/// Matching a line against the set allocates with the square of the count:
/// 8 000 patterns took 75 MB, 8 500 asked for 10 GB and aborted. A thousand
/// take 13 MB, far more than any rule set needs.
pub(crate) const MOST_PATTERNS: usize = 1000;

/// What a built-in preset's pattern is charged, unmeasured: more than any
/// keeps (a unit test checks each), so a run of a built-in preset does not
/// build its patterns twice.
pub(crate) const BUILTIN_PATTERN_SIZE: usize = 256 * 1024;

/// Compiles the output patterns of one run against [`TOTAL_SIZE_LIMIT`]:
/// each is built with a size limit no larger than what is left, so the
/// memory is bounded before it is spent, then charged what it keeps.
#[derive(Debug)]
pub(crate) struct PatternCompiler {
    left: usize,
    /// Patterns compiled so far: at most [`MOST_PATTERNS`].
    count: usize,
}

impl Default for PatternCompiler {
    fn default() -> Self {
        PatternCompiler {
            left: TOTAL_SIZE_LIMIT,
            count: 0,
        }
    }
}

impl PatternCompiler {
    /// A compiler with `total` bytes to share, for tests.
    #[cfg(test)]
    pub(crate) fn with_total(total: usize) -> PatternCompiler {
        PatternCompiler {
            left: total,
            count: 0,
        }
    }

    /// Compile `pattern` as `regex::bytes` does, within what is left.
    pub(crate) fn compile(&mut self, pattern: &str) -> Result<Regex, String> {
        let limit = PATTERN_SIZE_LIMIT.min(self.left);
        let kept = self.measure(pattern, limit)?;
        self.charge(pattern, limit, kept)
    }

    /// Compile a built-in preset's pattern, charged [`BUILTIN_PATTERN_SIZE`].
    pub(crate) fn compile_builtin(&mut self, pattern: &str) -> Result<Regex, String> {
        self.charge(
            pattern,
            PATTERN_SIZE_LIMIT.min(self.left),
            BUILTIN_PATTERN_SIZE,
        )
    }

    /// The heap the engine of `pattern` keeps, built within `limit`.
    pub(crate) fn measure(&self, pattern: &str, limit: usize) -> Result<usize, String> {
        // `regex` does not tell what its engine keeps: the same engine,
        // built with the same settings (`regex::bytes`), does.
        Ok(meta::Builder::new()
            .configure(
                meta::Config::new()
                    .nfa_size_limit(Some(limit))
                    .utf8_empty(false),
            )
            .syntax(syntax::Config::new().utf8(false))
            .build(pattern)
            .map_err(|err| match (err.syntax_error(), err.size_limit()) {
                (Some(syntax), _) => syntax.to_string(),
                (None, Some(_)) if limit < PATTERN_SIZE_LIMIT => self.too_much(),
                (None, Some(limit)) => {
                    format!("Compiled regex exceeds size limit of {limit} bytes.")
                }
                (None, None) => err.to_string(),
            })?
            .memory_usage())
    }

    fn charge(&mut self, pattern: &str, limit: usize, kept: usize) -> Result<Regex, String> {
        if kept > self.left {
            return Err(self.too_much());
        }
        if self.count == MOST_PATTERNS {
            return Err(format!(
                "a run may have at most {MOST_PATTERNS} output patterns (flags and preset together)"
            ));
        }
        let regex = regex::bytes::RegexBuilder::new(pattern)
            .size_limit(limit)
            .build()
            .map_err(|err| err.to_string())?;
        self.left -= kept;
        self.count += 1;
        Ok(regex)
    }

    fn too_much(&self) -> String {
        format!(
            "all the patterns of a run (flags and preset together) may compile to {} MiB, \
             and this one does not fit in the {:.1} MiB left",
            TOTAL_SIZE_LIMIT >> 20,
            self.left as f64 / f64::from(1 << 20)
        )
    }
}

/// One output pattern and how messages name it.
#[derive(Clone, Debug)]
pub(crate) struct OutputRule {
    pub(crate) regex: Regex,
    /// The pattern as given, or what a preset's pattern means.
    pub(crate) shown: String,
    /// Its number in the compiled [`PatternSet`], given by [`Rules::new`].
    pub(crate) slot: usize,
    /// `shown` quotes capture groups (`{1}`): the scanner keeps the first
    /// matching line for it.
    pub(crate) captures: bool,
}

impl OutputRule {
    pub(crate) fn new(regex: Regex, shown: impl Into<String>) -> OutputRule {
        OutputRule {
            regex,
            shown: shown.into(),
            slot: 0,
            captures: false,
        }
    }

    /// A preset's rule, named by its `means` template.
    pub(crate) fn with_means(regex: Regex, means: &str) -> OutputRule {
        let captures = template_pieces(means)
            .is_ok_and(|pieces| pieces.iter().any(|p| matches!(p, Piece::Group(_))));
        OutputRule {
            captures,
            ..OutputRule::new(regex, means)
        }
    }

    /// How messages name this rule for a matched `line`.
    pub(crate) fn describe(&self, line: Option<&[u8]>) -> String {
        if self.captures {
            render_means(&self.shown, &self.regex, line)
        } else {
            self.shown.clone()
        }
    }

    /// A rule named by its own pattern.
    #[cfg(test)]
    pub(crate) fn from_regex(regex: Regex) -> OutputRule {
        let shown = regex.as_str().to_string();
        OutputRule::new(regex, shown)
    }
}

/// A preset's exit-code rule, kept to name the verdict in messages (the
/// verdict itself comes from `stop_on_exit` and `retry_on_exit`).
#[derive(Clone, Debug)]
pub(crate) struct ExitRule {
    pub(crate) permanent: bool,
    /// A transient rule that knows the failure is throttling.
    pub(crate) throttled: bool,
    pub(crate) codes: CodeSet,
    pub(crate) means: String,
}

/// The rules of one source.
#[derive(Clone, Debug)]
pub(crate) struct RuleSet {
    pub(crate) source: RuleSource,
    pub(crate) stop_on_exit: Option<CodeSet>,
    pub(crate) retry_on_exit: Option<CodeSet>,
    pub(crate) stop_on_output: Vec<OutputRule>,
    pub(crate) retry_on_output: Vec<OutputRule>,
    /// A preset's throttled output rules: transient, and the server asked
    /// to slow down (judged before `retry_on_output`: the more it knows).
    pub(crate) throttle_on_output: Vec<OutputRule>,
    /// A preset's exit rules in file order: what each code means. A code in
    /// a transient rule of a preset without `retry_on_exit` (its other
    /// failures are left to retry's defaults) is transient by its rule.
    pub(crate) exit_rules: Vec<ExitRule>,
}

impl RuleSet {
    /// A set with no rules from `source`.
    pub(crate) fn empty(source: RuleSource) -> RuleSet {
        RuleSet {
            source,
            stop_on_exit: None,
            retry_on_exit: None,
            stop_on_output: Vec::new(),
            retry_on_output: Vec::new(),
            throttle_on_output: Vec::new(),
            exit_rules: Vec::new(),
        }
    }

    /// The first exit rule naming `code`.
    pub(crate) fn exit_rule(&self, code: i32) -> Option<&ExitRule> {
        self.exit_rules
            .iter()
            .find(|rule| rule.codes.contains(code))
    }

    fn output_rules_mut(&mut self) -> impl Iterator<Item = &mut OutputRule> {
        self.stop_on_output
            .iter_mut()
            .chain(self.throttle_on_output.iter_mut())
            .chain(self.retry_on_output.iter_mut())
    }
}

/// Every rule set of a run in precedence order, and the compiled scanner.
#[derive(Debug)]
pub(crate) struct Rules {
    pub(crate) sets: Vec<RuleSet>,
    /// Read `Retry-After:` header lines in the scanned output.
    pub(crate) retry_after: bool,
    /// `--stop-on-timeout`: an attempt ended by a time limit is permanent.
    pub(crate) stop_on_timeout: bool,
    /// `--success-on-exit`: exit codes that count as success, besides 0.
    pub(crate) success_on_exit: Option<CodeSet>,
    /// `--until-output`: success also needs a line matching one of these.
    /// Numbered after every rule set's patterns.
    pub(crate) until_output: Vec<OutputRule>,
    /// The patterns compiled once; `None` when nothing is scanned for.
    pub(crate) patterns: Option<PatternSet>,
}

impl Rules {
    /// Number every output pattern (the rule sets', then `--until-output`'s)
    /// and compile them all.
    pub(crate) fn new(
        mut sets: Vec<RuleSet>,
        mut until_output: Vec<OutputRule>,
        retry_after: bool,
    ) -> Result<Rules, String> {
        let mut regexes = Vec::new();
        let mut keep_lines = Vec::new();
        let rules = sets
            .iter_mut()
            .flat_map(RuleSet::output_rules_mut)
            .chain(until_output.iter_mut());
        for rule in rules {
            rule.slot = regexes.len();
            regexes.push(rule.regex.clone());
            keep_lines.push(rule.captures);
        }
        let patterns = if regexes.is_empty() && !retry_after {
            None
        } else {
            let mut patterns = PatternSet::new(&regexes, retry_after)
                .map_err(|err| format!("compiling the output patterns: {err}"))?;
            patterns.keep_lines(keep_lines);
            Some(patterns)
        };
        Ok(Rules {
            sets,
            retry_after,
            stop_on_timeout: false,
            success_on_exit: None,
            until_output,
            patterns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_share_one_total_and_the_one_that_does_not_fit_is_refused() {
        let mut compiler = PatternCompiler::with_total(4 * 1024 * 1024);
        // Small patterns barely count.
        for _ in 0..100 {
            compiler.compile("connection refused|reset").unwrap();
        }
        assert!(compiler.left > 3 * 1024 * 1024, "{}", compiler.left);
        let mut kept = 0;
        let error = loop {
            match compiler.compile(r"\w{20}x") {
                Ok(_) => kept += 1,
                Err(error) => break error,
            }
        };
        assert!((2..40).contains(&kept), "{kept} fitted");
        assert!(error.contains("may compile to 64 MiB"), "{error}");
        assert!(compiler.left < 1024 * 1024, "{} left", compiler.left);
        // What is left still takes a small pattern.
        compiler.compile("timeout").unwrap();
    }

    #[test]
    fn a_run_has_at_most_a_thousand_patterns() {
        let mut compiler = PatternCompiler::default();
        for n in 0..MOST_PATTERNS {
            compiler.compile(&format!("a{n}")).unwrap();
        }
        let error = compiler.compile("one more").unwrap_err();
        assert_eq!(
            error,
            "a run may have at most 1000 output patterns (flags and preset together)"
        );
    }

    #[test]
    fn a_pattern_over_the_limit_of_one_pattern_says_so() {
        let error = PatternCompiler::default()
            .compile(r"\w{1000}\w{1000}")
            .unwrap_err();
        assert!(
            error.contains("exceeds size limit of 10485760 bytes"),
            "{error}"
        );
        let error = PatternCompiler::default().compile("x(").unwrap_err();
        assert!(error.contains("unclosed group"), "{error}");
    }
}
