//! Command lines that hide a failure from retry or break the hint file,
//! said once before the first attempt (found through wrappers: `sudo apt-get
//! update`), whatever preset is in force:
//!
//! - `apt-get update` (and `apt update`) exits 0 when a mirror fails (it
//!   only warns), so retry sees a success: `--error-on=any` makes it fail;
//! - `wget -q` prints nothing, not even the status of an HTTP error, so a
//!   404 cannot be told from a 503 (and no Retry-After can be read):
//!   `-nv` keeps the errors, `-S` shows the headers;
//! - `curl -D "$RETRY_HINT_FILE"` typed in the caller's shell: the shell
//!   expands the variable before retry sets it (to nothing: curl gets an
//!   empty file name), and quoted it is a file literally named so. Only a
//!   shell started by retry sees it: `sh -c 'curl -D "$RETRY_HINT_FILE" ...'`.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use super::wrapped::{Target, target};

/// What to say about `command` before the first attempt.
pub(crate) fn said_before_start(command: &[OsString]) -> Vec<String> {
    let Target::Command { start, .. } = target(command, &|_| false) else {
        return Vec::new();
    };
    let program = command
        .get(start)
        .and_then(|p| Path::new(p).file_name())
        .and_then(OsStr::to_str)
        .unwrap_or_default();
    let args: Vec<&str> = command
        .get(start + 1..)
        .unwrap_or_default()
        .iter()
        .map(|arg| arg.to_str().unwrap_or_default())
        .collect();
    let mut said = Vec::new();
    match program {
        "apt-get" | "apt" if hides_a_failed_mirror(&args) => said.push(format!(
            "{program} update exits 0 when a mirror fails (it only warns), so retry would see a success and never retry it: add --error-on=any (apt 2.1.16 and later; -o APT::Update::Error-Mode=any) to have a failed mirror fail the attempt"
        )),
        "wget" if is_quiet_wget(&args) => said.push(
            "wget -q prints nothing, not even the status of an HTTP error, so retry cannot tell a 404 (permanent) from a 503 (worth retrying) nor see a Retry-After: use -nv (--no-verbose) instead, and -S to show the response headers"
                .to_string(),
        ),
        "curl" => said.extend(hint_file_slip(&args)),
        _ => {}
    }
    said
}

/// `apt-get update` without `--error-on=any` (or its configuration form).
fn hides_a_failed_mirror(args: &[&str]) -> bool {
    let updates = args.contains(&"update");
    let errors_on_any = args
        .windows(2)
        .any(|pair| pair[0] == "-o" && pair[1].starts_with("APT::Update::Error-Mode="))
        || args
            .iter()
            .any(|&arg| arg == "--error-on=any" || arg.starts_with("-oAPT::Update::Error-Mode="))
        || args.windows(2).any(|pair| pair == ["--error-on", "any"]);
    updates && !errors_on_any
}

/// wget's short options that take a value (`-O FILE`, `-OFILE`).
const WGET_VALUED: &str = "OoPUeatTwQiBlARDIX";

/// `wget -q` / `--quiet` (also in a bundle of short flags: `-qO-`), not the
/// value of an option (`-O -q` writes to a file named `-q`).
fn is_quiet_wget(args: &[&str]) -> bool {
    let mut words = args.iter().take_while(|&&arg| arg != "--");
    while let Some(&arg) = words.next() {
        if arg == "--quiet" {
            return true;
        }
        let Some(bundle) = arg.strip_prefix('-').filter(|b| !b.starts_with('-')) else {
            continue;
        };
        for (at, flag) in bundle.char_indices() {
            if flag == 'q' {
                return true;
            }
            if WGET_VALUED.contains(flag) {
                // The rest of the bundle is the value, else the next word.
                if at + flag.len_utf8() == bundle.len() {
                    words.next();
                }
                break;
            }
        }
    }
    false
}

/// curl's header file (`-D FILE`, `--dump-header FILE`, `-DFILE`,
/// `--dump-header=FILE`) in one of the two forms that cannot work.
fn hint_file_slip(args: &[&str]) -> Option<String> {
    let mut files = Vec::new();
    for (i, &arg) in args.iter().enumerate() {
        if arg == "-D" || arg == "--dump-header" {
            files.push(args.get(i + 1).copied().unwrap_or_default());
        } else if let Some(file) = arg.strip_prefix("--dump-header=") {
            files.push(file);
        } else if let Some(file) = arg.strip_prefix("-D") {
            files.push(file);
        }
    }
    let fix = "retry sets RETRY_HINT_FILE for the command only, so let a shell it starts read it: retry -- sh -c 'curl -D \"$RETRY_HINT_FILE\" ...'";
    files.iter().find_map(|&file| {
        if file.is_empty() {
            Some(format!(
                "curl -D got an empty file name: your shell expanded \"$RETRY_HINT_FILE\" before retry ran (it is set only for the command); {fix}"
            ))
        } else if file.contains("$RETRY_HINT_FILE") || file.contains("${RETRY_HINT_FILE}") {
            Some(format!(
                "curl -D would write a file literally named {file}: no shell is there to expand it; {fix}"
            ))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(words: &[&str]) -> Vec<String> {
        said_before_start(&words.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn apt_update_without_error_on_any_is_said_through_wrappers() {
        for command in [
            &["apt-get", "update"][..],
            &["sudo", "apt-get", "-q", "update"],
            &["apt", "update"],
        ] {
            let words = said(command);
            assert_eq!(words.len(), 1, "{command:?}");
            assert!(words[0].contains("--error-on=any"), "{words:?}");
        }
        for quiet in [
            &["apt-get", "update", "--error-on=any"][..],
            &["apt-get", "-o", "APT::Update::Error-Mode=any", "update"],
            &["apt-get", "install", "-y", "curl"],
        ] {
            assert!(said(quiet).is_empty(), "{quiet:?}");
        }
    }

    #[test]
    fn a_quiet_wget_is_told_to_use_nv() {
        for command in [
            &["wget", "-q", "https://x"][..],
            &["wget", "-qO-", "u"],
            &["wget", "--quiet", "u"],
        ] {
            assert!(
                said(command)[0].starts_with("wget -q prints nothing"),
                "{command:?}"
            );
        }
        assert!(said(&["wget", "-nv", "-O", "q", "u"]).is_empty());
        assert!(said(&["wget", "-O", "-q", "u"]).is_empty());
    }

    #[test]
    fn the_two_broken_hint_file_forms_of_curl_are_named() {
        let empty = said(&["curl", "-fsS", "-D", "", "https://x"]);
        assert!(
            empty[0].starts_with("curl -D got an empty file name"),
            "{empty:?}"
        );
        assert!(empty[0].contains("sh -c 'curl -D \"$RETRY_HINT_FILE\" ...'"));
        let literal = said(&["curl", "--dump-header=$RETRY_HINT_FILE", "u"]);
        assert!(
            literal[0].contains("a file literally named $RETRY_HINT_FILE"),
            "{literal:?}"
        );
        assert!(said(&["curl", "-D", "/dev/stderr", "u"]).is_empty());
        assert!(said(&["sh", "-c", "curl -D \"$RETRY_HINT_FILE\" u"]).is_empty());
    }
}
