//! What the data of a preset cannot say: which flag to add to the command so
//! that retry can judge better. The command line stays as the user wrote
//! it; retry only says, once a run, what to add. Each piece of advice is
//! worded from the rules actually in force (a `--stop-on-exit 22`, a user's
//! curl preset), not from the built-in preset's:
//!
//! - curl run without `-f` (`--fail`) exits 0 on an HTTP error: a 503 is a
//!   success. Said before the first attempt.
//! - curl run with `-s` and without `-S` prints no status, so an exit 22
//!   (an HTTP error) cannot be told apart: a 404 is retried like a 503 when
//!   22 is transient, a 503 stops like a 404 when it is permanent. `-S`
//!   lets retry tell them apart.
//! - curl (or wget) got a 429 or 503 but retry saw no response headers, so
//!   a `Retry-After` cannot be honoured: `-D /dev/stderr` (wget: `-S`) shows
//!   them where retry reads; headers sent to stdout (`-i`, `-D -`) are read
//!   only under `--scan-stdout`.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use crate::outcome::{Ending, ProcessEnd};
use crate::policy::classify::{Class, Observation, classify};
use crate::policy::rules::{RuleSet, RuleSource, Rules};
use crate::scan::ScanResult;

/// The tool whose command line is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tool {
    Curl,
    Wget,
}

/// What retry may say about one run's command line.
#[derive(Debug)]
pub(crate) struct Advice {
    tool: Option<Tool>,
    /// curl: `-S` / `--show-error` is on the command line.
    shows_errors: bool,
    /// The response headers reach the scanned output.
    shows_headers: bool,
    /// curl: the headers go to stdout (`-i`, `-D -`), which is not scanned.
    headers_to_stdout: bool,
    said_silent: bool,
    said_headers: bool,
}

impl Advice {
    /// Advice for `command` when the curl (or wget) preset is in force,
    /// directly or through a wrapper (`timeout 30 curl ...`).
    pub(crate) fn new(rules: &Rules, command: &[OsString], scan_stdout: bool) -> Advice {
        let (tool, args) = tool_of(rules, command);
        let flags = match tool {
            Some(Tool::Curl) => curl_flags(args, scan_stdout),
            Some(Tool::Wget) => CurlFlags {
                shows_errors: true,
                shows_headers: wget_shows_headers(args),
                ..CurlFlags::default()
            },
            None => CurlFlags {
                shows_errors: true,
                shows_headers: true,
                ..CurlFlags::default()
            },
        };
        Advice {
            tool,
            shows_errors: flags.shows_errors,
            shows_headers: flags.shows_headers,
            headers_to_stdout: flags.headers_to_stdout,
            said_silent: false,
            said_headers: false,
        }
    }

    /// Warnings worth giving after an attempt that ended so and printed
    /// `scan` (each at most once a run).
    pub(crate) fn after_attempt(
        &mut self,
        ending: &Ending,
        scan: &ScanResult,
        rules: &Rules,
    ) -> Vec<String> {
        let mut said = Vec::new();
        let (Some(tool), Some(set)) = (self.tool, preset_set(rules)) else {
            return said;
        };
        if ending.timed_out {
            return said;
        }
        let status = reported_status(set, scan);
        let class = judged(ending, scan, rules).class;
        if tool == Tool::Curl
            && !self.said_silent
            && !self.shows_errors
            && ending.process == ProcessEnd::Exited(22)
            && status.is_none()
            && !any_output_rule_matched(set, scan)
            // A flag of the user's that decides exit 22 (--stop-on-exit 22,
            // --retry-on-exit) comes before every status: -S would change
            // nothing.
            && !flags_decide(rules, 22)
        {
            self.said_silent = true;
            said.push(silent_advice(class));
        }
        // A Retry-After matters only when there is a retry to time.
        if rules.retry_after
            && class != Class::Permanent
            && !self.said_headers
            && !self.shows_headers
            && scan.response.is_empty()
            && let Some(status) = status.filter(|s| s == "429" || s == "503")
        {
            self.said_headers = true;
            said.push(match tool {
                Tool::Curl if self.headers_to_stdout => format!(
                    "curl got HTTP {status} and prints its response headers to stdout (-i or -D -), which retry does not scan, so it cannot see a Retry-After: add --scan-stdout to retry, or write them to stderr with -D /dev/stderr"
                ),
                Tool::Curl => format!(
                    "curl got HTTP {status} but prints no response headers, so retry cannot see a Retry-After: add -D /dev/stderr to the curl command to let retry honour it"
                ),
                Tool::Wget => format!(
                    "wget got HTTP {status} but prints no response headers, so retry cannot see a Retry-After: add -S (--server-response) to the wget command to let retry honour it"
                ),
            });
        }
        said
    }
}

/// Said before the first attempt: what `slips` finds (a failed mirror
/// hidden, a quiet wget, a hint file the caller's shell expanded), and curl
/// without `-f`, which takes an HTTP error for a success. Not when success is judged by the output
/// (`--until-output`) or curl writes the status out itself (`-w`).
pub(crate) fn at_start(rules: &Rules, command: &[OsString]) -> Vec<String> {
    let mut said = super::slips::said_before_start(command);
    let (Some(Tool::Curl), args) = tool_of(rules, command) else {
        return said;
    };
    let flags = curl_flags(args, false);
    if flags.fails || flags.writes_out || !rules.until_output.is_empty() {
        return said;
    }
    said.push(
        "curl runs without -f (--fail): it exits 0 on an HTTP error such as 503 or 404, so retry counts that as success; add -f (as in curl -fsS) to have HTTP errors judged"
            .to_string(),
    );
    said
}

/// The tool whose preset is in force, and its arguments (found through
/// wrappers: `sudo`, `env`, `timeout`, ...).
fn tool_of<'a>(rules: &Rules, command: &'a [OsString]) -> (Option<Tool>, &'a [OsString]) {
    let start = match super::wrapped::target(command, &|_| false) {
        super::wrapped::Target::Command { start, .. } => start,
        super::wrapped::Target::Hidden { .. } => return (None, &[]),
    };
    let program = command
        .get(start)
        .and_then(|p| Path::new(p).file_name())
        .and_then(OsStr::to_str);
    let preset = preset_set(rules).map(|set| match &set.source {
        RuleSource::Preset { name, .. } => name.as_str(),
        RuleSource::CommandLine => "",
    });
    let tool = match (preset, program) {
        (Some("curl"), Some("curl")) => Some(Tool::Curl),
        (Some("wget"), Some("wget")) => Some(Tool::Wget),
        _ => None,
    };
    (tool, command.get(start + 1..).unwrap_or_default())
}

/// The verdict of an attempt under the rules in force (the flags, then the
/// preset), as retry judges it.
fn judged(ending: &Ending, scan: &ScanResult, rules: &Rules) -> crate::policy::classify::Verdict {
    classify(
        &Observation {
            ending,
            hint: None,
            matched: &scan.matched,
            lines: &scan.lines,
            name_the_choice: false,
            throttling: None,
        },
        rules,
    )
}

/// Whether the command line's own exit-code lists decide `code`.
fn flags_decide(rules: &Rules, code: i32) -> bool {
    rules
        .sets
        .iter()
        .filter(|set| set.source == RuleSource::CommandLine)
        .any(|set| {
            set.retry_on_exit.is_some()
                || set
                    .stop_on_exit
                    .as_ref()
                    .is_some_and(|codes| codes.contains(code))
        })
}

/// What a silent curl's exit 22 comes to under the preset in force (a
/// user's curl preset may make it permanent), and what to add.
fn silent_advice(class: Class) -> String {
    if class == Class::Permanent {
        "curl printed no HTTP status (it runs with -s and without -S), and the curl preset in force stops on an exit 22 without one, so a 503 stops like a 404: add -S (as in curl -fsS) to let retry retry a 503 and stop on a 404".to_string()
    } else {
        "curl printed no HTTP status (it runs with -s and without -S), so exit 22 counts as transient and a 404 is retried like a 503: add -S (as in curl -fsS) to let retry stop at once on a 4xx".to_string()
    }
}

/// The preset's rule set, when one is in force.
fn preset_set(rules: &Rules) -> Option<&RuleSet> {
    rules
        .sets
        .iter()
        .find(|set| matches!(set.source, RuleSource::Preset { .. }))
}

fn any_output_rule_matched(set: &RuleSet, scan: &ScanResult) -> bool {
    set.stop_on_output
        .iter()
        .chain(&set.throttle_on_output)
        .chain(&set.retry_on_output)
        .any(|rule| scan.matched.get(rule.slot) == Some(&true))
}

/// The HTTP status a matched transient rule of the preset quotes as its
/// first group (`curl reported HTTP {1}`).
fn reported_status(set: &RuleSet, scan: &ScanResult) -> Option<String> {
    set.throttle_on_output
        .iter()
        .chain(&set.retry_on_output)
        .chain(&set.stop_on_output)
        .filter(|rule| scan.matched.get(rule.slot) == Some(&true))
        .find_map(|rule| {
            let line = scan.lines.get(rule.slot)?.as_deref()?;
            let group = rule.regex.captures(line)?.get(1)?;
            let text = std::str::from_utf8(group.as_bytes()).ok()?;
            text.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| text.to_string())
        })
}

/// curl's short options that take an argument: in a bundle (`-sSo file`)
/// everything after one of them is its value.
const CURL_SHORT_WITH_VALUE: &str = "AbcCdDeEFHKmoPQrtTuUwxXyYz";

/// What curl's arguments say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CurlFlags {
    /// `-S` / `--show-error`.
    shows_errors: bool,
    /// The response headers reach the scanned output.
    shows_headers: bool,
    /// `-i` or `-D -` send the headers to stdout, which is not scanned.
    headers_to_stdout: bool,
    /// `-f`, `--fail` or `--fail-with-body`: an HTTP error exits 22.
    fails: bool,
    /// `-w` / `--write-out`: curl prints the status for the caller.
    writes_out: bool,
}

/// curl's arguments, read as curl reads them.
fn curl_flags(args: &[OsString], scan_stdout: bool) -> CurlFlags {
    let mut flags = CurlFlags::default();
    let header_file = |flags: &mut CurlFlags, file: Option<&str>| match file {
        Some("/dev/stderr" | "/dev/fd/2" | "/proc/self/fd/2") => flags.shows_headers = true,
        Some("-") if scan_stdout => flags.shows_headers = true,
        Some("-") => flags.headers_to_stdout = true,
        _ => {}
    };
    let mut words = args.iter().map(|arg| arg.to_string_lossy());
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (long, None),
            };
            match name {
                "show-error" => flags.shows_errors = true,
                "fail" | "fail-with-body" => flags.fails = true,
                "verbose" | "trace" | "trace-ascii" => flags.shows_headers = true,
                "include" | "show-headers" if scan_stdout => flags.shows_headers = true,
                "include" | "show-headers" => flags.headers_to_stdout = true,
                "dump-header" => {
                    let file = value.or_else(|| words.next().map(std::borrow::Cow::into_owned));
                    header_file(&mut flags, file.as_deref());
                }
                "write-out" => {
                    flags.writes_out = true;
                    if value.is_none() {
                        words.next();
                    }
                }
                _ => {}
            }
            continue;
        }
        let Some(bundle) = word.strip_prefix('-').filter(|b| !b.is_empty()) else {
            continue;
        };
        for (at, letter) in bundle.char_indices() {
            match letter {
                'S' => flags.shows_errors = true,
                'f' => flags.fails = true,
                'v' => flags.shows_headers = true,
                'i' if scan_stdout => flags.shows_headers = true,
                'i' => flags.headers_to_stdout = true,
                _ => {}
            }
            if CURL_SHORT_WITH_VALUE.contains(letter) {
                let rest = &bundle[at + letter.len_utf8()..];
                let value = if rest.is_empty() {
                    words.next().map(std::borrow::Cow::into_owned)
                } else {
                    Some(rest.to_string())
                };
                match letter {
                    'D' => header_file(&mut flags, value.as_deref()),
                    'w' => flags.writes_out = true,
                    _ => {}
                }
                break;
            }
        }
    }
    flags
}

/// wget prints the response headers to stderr with `-S`/`--server-response`
/// or `-d`/`--debug`.
fn wget_shows_headers(args: &[OsString]) -> bool {
    args.iter().any(|arg| {
        let word = arg.to_string_lossy();
        matches!(word.as_ref(), "--server-response" | "--debug")
            || (word.starts_with('-')
                && !word.starts_with("--")
                && word[1..]
                    .chars()
                    .take_while(|c| !"eoaODPUTwQYt".contains(*c))
                    .any(|c| c == 'S' || c == 'd'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn curls_show_error_and_header_flags_are_found_in_bundles_and_long_forms() {
        let flags = |args: &[&str], scan| {
            let f = curl_flags(&words(args), scan);
            (f.shows_errors, f.shows_headers)
        };
        assert_eq!(flags(&["-fs", "http://x"], false), (false, false));
        assert_eq!(flags(&["-fsS", "http://x"], false), (true, false));
        assert_eq!(flags(&["--show-error", "-f"], false), (true, false));
        assert_eq!(flags(&["-fsSv", "http://x"], false), (true, true));
        assert_eq!(flags(&["-fsSD", "/dev/stderr", "u"], false), (true, true));
        assert_eq!(flags(&["-D", "-", "-fsS", "u"], false), (true, false));
        assert_eq!(flags(&["-D", "-", "-fsS", "u"], true), (true, true));
        assert_eq!(flags(&["--dump-header=/dev/stderr"], false), (false, true));
        assert_eq!(flags(&["-i", "-f"], false), (false, false));
        assert_eq!(flags(&["-i", "-f"], true), (false, true));
        // -o takes the rest of the bundle: the S in its value is no flag.
        assert_eq!(flags(&["-fsoS.txt", "u"], false), (false, false));
        assert_eq!(flags(&["-H", "X-S: v", "-fs"], false), (false, false));
    }

    #[test]
    fn curls_fail_write_out_and_headers_to_stdout_are_found() {
        let f = |args: &[&str]| curl_flags(&words(args), false);
        assert!(f(&["-fsS", "u"]).fails);
        assert!(f(&["--fail-with-body", "u"]).fails);
        assert!(f(&["--fail", "u"]).fails);
        assert!(!f(&["-sS", "u"]).fails);
        assert!(!f(&["-o", "f", "u"]).fails);
        // -H takes "f" as its value: not -f.
        assert!(!f(&["-H", "f", "u"]).fails);
        assert!(!f(&["-sSH", "f", "u"]).fails);
        assert!(f(&["-w", "%{http_code}", "u"]).writes_out);
        assert!(f(&["-sw%{http_code}", "u"]).writes_out);
        assert!(f(&["--write-out", "%{http_code}", "u"]).writes_out);
        assert!(f(&["-i", "u"]).headers_to_stdout);
        assert!(f(&["-D", "-", "u"]).headers_to_stdout);
        assert!(f(&["--dump-header=-", "u"]).headers_to_stdout);
        assert!(!f(&["-D", "/dev/stderr", "u"]).headers_to_stdout);
        assert!(!curl_flags(&words(&["-i", "u"]), true).headers_to_stdout);
    }

    #[test]
    fn wgets_header_flags() {
        assert!(wget_shows_headers(&words(&["-S", "u"])));
        assert!(wget_shows_headers(&words(&["-qS", "u"])));
        assert!(wget_shows_headers(&words(&["--server-response", "u"])));
        assert!(!wget_shows_headers(&words(&["-q", "u"])));
        assert!(!wget_shows_headers(&words(&["-O", "S", "u"])));
    }
}
