//! What the data of a preset cannot say: which flag to add to the command so
//! that retry can judge better. The command line stays as the user wrote
//! it; retry only says, once a run, what to add:
//!
//! - curl run with `-s` and without `-S` prints no status, so exit 22 (an
//!   HTTP error) is taken as transient and a 404 is retried like a 503:
//!   `-S` lets retry stop at once on a 4xx;
//! - curl (or wget) got a 429 or 503 but prints no response headers, so a
//!   `Retry-After` cannot be seen: `-D /dev/stderr` (wget: `-S`) lets retry
//!   honour it.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use crate::policy::rules::{RuleSet, RuleSource, Rules};
use crate::process::{Ending, ProcessEnd};
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
    said_silent: bool,
    said_headers: bool,
}

impl Advice {
    /// Advice for `command` when the curl (or wget) preset is in force.
    pub(crate) fn new(rules: &Rules, command: &[OsString], scan_stdout: bool) -> Advice {
        let program = command
            .first()
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
        let args = command.get(1..).unwrap_or_default();
        let (shows_errors, shows_headers) = match tool {
            Some(Tool::Curl) => curl_flags(args, scan_stdout),
            Some(Tool::Wget) => (true, wget_shows_headers(args)),
            None => (true, true),
        };
        Advice {
            tool,
            shows_errors,
            shows_headers,
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
        if tool == Tool::Curl
            && !self.said_silent
            && !self.shows_errors
            && ending.process == ProcessEnd::Exited(22)
            && status.is_none()
            && !any_output_rule_matched(set, scan)
        {
            self.said_silent = true;
            said.push(
                "curl printed no HTTP status (it runs with -s and without -S), so exit 22 counts as transient and a 404 is retried like a 503: add -S (as in curl -fsS) to let retry stop at once on a 4xx".to_string(),
            );
        }
        if rules.retry_after
            && !self.said_headers
            && !self.shows_headers
            && scan.response.is_empty()
            && let Some(status) = status.filter(|s| s == "429" || s == "503")
        {
            self.said_headers = true;
            said.push(match tool {
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

/// `(-S given, response headers reach the scanned output)` for curl's
/// arguments.
fn curl_flags(args: &[OsString], scan_stdout: bool) -> (bool, bool) {
    let mut show_error = false;
    let mut headers = false;
    let to_stderr = |file: &str| {
        matches!(file, "/dev/stderr" | "/dev/fd/2" | "/proc/self/fd/2")
            || (file == "-" && scan_stdout)
    };
    let mut words = args.iter().map(|arg| arg.to_string_lossy());
    while let Some(word) = words.next() {
        if let Some(long) = word.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (long, None),
            };
            match name {
                "show-error" => show_error = true,
                "verbose" | "trace" | "trace-ascii" => headers = true,
                "include" => headers |= scan_stdout,
                "dump-header" => {
                    let file = value.or_else(|| words.next().map(std::borrow::Cow::into_owned));
                    headers |= file.is_some_and(|f| to_stderr(&f));
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
                'S' => show_error = true,
                'v' => headers = true,
                'i' => headers |= scan_stdout,
                _ => {}
            }
            if CURL_SHORT_WITH_VALUE.contains(letter) {
                let rest = &bundle[at + letter.len_utf8()..];
                let value = if rest.is_empty() {
                    words.next().map(std::borrow::Cow::into_owned)
                } else {
                    Some(rest.to_string())
                };
                if letter == 'D' {
                    headers |= value.is_some_and(|f| to_stderr(&f));
                }
                break;
            }
        }
    }
    (show_error, headers)
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
        let flags = |args: &[&str], scan| curl_flags(&words(args), scan);
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
    fn wgets_header_flags() {
        assert!(wget_shows_headers(&words(&["-S", "u"])));
        assert!(wget_shows_headers(&words(&["-qS", "u"])));
        assert!(wget_shows_headers(&words(&["--server-response", "u"])));
        assert!(!wget_shows_headers(&words(&["-q", "u"])));
        assert!(!wget_shows_headers(&words(&["-O", "S", "u"])));
    }
}
