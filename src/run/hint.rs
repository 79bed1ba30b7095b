//! The hint file (`$RETRY_HINT_FILE`), one way an attempt can tell retry how
//! long to wait, or whether to retry at all (the other, response headers in
//! its output, is `policy::server_wait`'s): its place, its reading, its
//! removal and its parser.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::outcome::Hint;
use crate::safe_fs::{self, Kind, PrivateDir, Unreadable};
use crate::scan::Response;
use crate::text::sanitize_line;
use crate::values::parse_duration;

/// The most a hint file may hold: one word needs a few bytes, but the
/// headers `curl -D` writes run to kilobytes (policies, cookies, tracing),
/// and to more with redirects; curl itself takes up to 300 kB a response.
const MAX_HINT_BYTES: usize = 256 * 1024;

/// The most of a hint file's content a message quotes.
const MAX_QUOTED_CHARS: usize = 60;

/// The hint file of a run, `DIR/hint` in a directory of the run's own (0700,
/// in `$TMPDIR`, else in memory: `safe_fs::PrivateDir`): no other user can
/// see its name, plant a FIFO or a symlink there, or write a hint. The
/// directory and whatever is in it go when the run ends, however it ends
/// (short of SIGKILL).
pub(crate) struct HintFile {
    /// `Err`: without `$TMPDIR`, no default place took the directory (an
    /// empty root: no `/tmp`), and why; the run goes on without a hint file.
    dir: Result<PrivateDir, String>,
    /// What an attempt left at the hint's path could not be removed (a
    /// directory tree deeper than the descriptors `remove_dir_all` may
    /// open, say): the next attempt gets a new directory, so its hint is
    /// neither refused nor mistaken for the old one.
    left_behind: bool,
}

impl HintFile {
    /// The hint file of a new run. Creating its directory in a `$TMPDIR` that is set can fail
    /// (a stale one): that is retry's own failure at set-up, as `mktemp`
    /// fails. Without `$TMPDIR`, a system with none of the default places
    /// (a chroot holding only the binary and a shell) must still run the
    /// command: it gets no hint file ([`HintFile::missing`] says why).
    pub(crate) fn for_run() -> anyhow::Result<HintFile> {
        let dir = match PrivateDir::new("retry-") {
            Ok(dir) => Ok(dir),
            Err(err) if !tmpdir_is_set() => Err(format!("{err:#}")),
            Err(err) => return Err(err),
        };
        Ok(HintFile {
            dir,
            left_behind: false,
        })
    }

    /// For a run without a hint file, the warning to give once, before
    /// its first attempt.
    pub(crate) fn missing(&self) -> Option<String> {
        let why = self.dir.as_ref().err()?;
        Some(format!(
            "no place for the hint file ({why}): RETRY_HINT_FILE is empty"
        ))
    }

    /// Before an attempt: a new directory if the run's went away (see
    /// `PrivateDir::is_ours`), so the attempt's hint is not lost, nor
    /// written where another user took its name. `Err` says why none could
    /// be made (the attempt then gets the old path). A run without a hint
    /// file stays without one (a warning said so at the start).
    pub(crate) fn prepare(&mut self) -> Result<(), String> {
        let Ok(old) = &self.dir else {
            return Ok(());
        };
        if old.is_ours() && !self.left_behind {
            return Ok(());
        }
        let dir = PrivateDir::new("retry-").map_err(|err| {
            format!(
                "hint file: the run's directory {} went away and no new one could be made: {err:#}",
                old.path().display()
            )
        })?;
        // The old one is dropped: removed only if it is still this user's.
        self.dir = Ok(dir);
        self.left_behind = false;
        Ok(())
    }

    /// The value of `RETRY_HINT_FILE`: the hint's path, or empty for a run
    /// without a hint file (empty, not unset, so that a variable inherited
    /// from an outer retry is not handed on: retry counts empty as unset).
    pub(crate) fn env_value(&self) -> OsString {
        self.path()
            .map_or_else(OsString::new, PathBuf::into_os_string)
    }

    /// The hint's path; `None` for a run without a hint file.
    pub(crate) fn path(&self) -> Option<PathBuf> {
        self.dir.as_ref().ok().map(|dir| dir.path().join("hint"))
    }

    /// Read the attempt's hint and remove the file, so the next attempt
    /// starts without one. A word that is not a hint, or something that is
    /// not a small regular file (a FIFO, a symlink, a device: never opened
    /// for reading, so nothing blocks), is an error message, of one line.
    pub(crate) fn take(&mut self) -> Result<Option<HintContent>, String> {
        let Ok(dir) = &self.dir else {
            return Ok(None);
        };
        if !dir.is_ours() {
            // Whatever stands at its path now is not the run's: not read.
            return Err(format!(
                "hint file: the run's directory {} went away during the attempt; a hint written there is lost",
                dir.path().display()
            ));
        }
        let path = dir.path().join("hint");
        let read = safe_fs::read_small_regular(&path, MAX_HINT_BYTES);
        // Nothing there (most attempts): nothing to remove either.
        if !matches!(read, Ok(None)) {
            self.left_behind = remove(&path).is_err();
        }
        let left_behind = if self.left_behind {
            "; it could not be removed, so the next attempt gets a new directory"
        } else {
            ""
        };
        match read {
            Ok(None) => Ok(None),
            Ok(Some(bytes)) => parse_content(&String::from_utf8_lossy(&bytes)),
            Err(Unreadable::NotRegular(kind)) => Err(format!(
                "hint file is {}, ignored{left_behind}",
                kind.described()
            )),
            Err(Unreadable::TooLong) => Err(format!(
                "hint file is too long (more than {} KiB), ignored",
                MAX_HINT_BYTES / 1024
            )),
            Err(Unreadable::Io(err)) => Err(format!("hint file: cannot read it ({err}), ignored")),
        }
    }
}

/// Whatever the attempt left at the hint's path.
fn remove(path: &Path) -> std::io::Result<()> {
    if let Ok(Some(Kind::Directory)) = safe_fs::kind_at(path) {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
}

/// Is `$TMPDIR` set, and not empty (empty counts as unset, as in
/// `safe_fs`, whose places for the directory it decides)?
fn tmpdir_is_set() -> bool {
    std::env::var_os("TMPDIR").is_some_and(|value| !value.is_empty())
}

/// What an attempt left in its hint file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HintContent {
    /// One word.
    Word(Hint),
    /// The headers of an HTTP response (`curl -D "$RETRY_HINT_FILE"`): read
    /// like the response headers in the output, `--retry-after` or not.
    Headers(Box<Response>),
}

/// A word, else the headers of a response (a status line or a header
/// retry reads), else the word's problem.
fn parse_content(content: &str) -> Result<Option<HintContent>, String> {
    match parse_hint(content) {
        Ok(hint) => Ok(hint.map(HintContent::Word)),
        Err(problem) => {
            let response = Response::from_lines(content.lines().map(str::as_bytes));
            if response.is_empty() {
                Err(problem)
            } else {
                Ok(Some(HintContent::Headers(Box::new(response))))
            }
        }
    }
}

/// Parse the hint file's content: one word, `permanent`, `transient`,
/// `throttled` or `retry-after=DURATION`. Surrounding white space is ignored; an empty file
/// is no hint.
pub(crate) fn parse_hint(content: &str) -> Result<Option<Hint>, String> {
    let word = content.trim();
    if word.is_empty() {
        return Ok(None);
    }
    match word.to_ascii_lowercase().as_str() {
        "permanent" => return Ok(Some(Hint::Permanent)),
        "transient" => return Ok(Some(Hint::Transient)),
        "throttled" => return Ok(Some(Hint::Throttled)),
        _ => {}
    }
    if let Some(value) = word.strip_prefix("retry-after=") {
        return parse_duration(value)
            .map(|d| Some(Hint::RetryAfter(d)))
            .map_err(|err| {
                format!(
                    "hint file: retry-after={}: {}",
                    sanitize_line(value, MAX_QUOTED_CHARS),
                    sanitize_line(&err, MAX_QUOTED_CHARS)
                )
            });
    }
    Err(format!(
        "hint file: '{}' is not one of permanent, transient, throttled, retry-after=DURATION",
        sanitize_line(word, MAX_QUOTED_CHARS)
    ))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn hint_words() {
        assert_eq!(parse_hint("permanent\n"), Ok(Some(Hint::Permanent)));
        assert_eq!(parse_hint(" transient "), Ok(Some(Hint::Transient)));
        assert_eq!(parse_hint("Throttled"), Ok(Some(Hint::Throttled)));
        assert_eq!(
            parse_hint("retry-after=1.5s"),
            Ok(Some(Hint::RetryAfter(Duration::from_millis(1500))))
        );
        assert_eq!(
            parse_hint("retry-after=3"),
            Ok(Some(Hint::RetryAfter(Duration::from_secs(3))))
        );
        assert_eq!(parse_hint(""), Ok(None));
        assert!(parse_hint("maybe").is_err());
        assert!(parse_hint("retry-after=soon").is_err());
    }

    #[test]
    fn a_bad_hint_is_quoted_on_one_short_line() {
        let err = parse_hint("1\nretry: forged\x1b[2J").unwrap_err();
        assert!(!err.contains('\n') && !err.contains('\x1b'), "{err}");
        assert!(err.contains("1\\nretry: forged\\e[2J"), "{err}");
        let err = parse_hint(&"y".repeat(5000)).unwrap_err();
        assert!(err.len() < 150, "{err}");
        let err = parse_hint("retry-after=\r\x07soon").unwrap_err();
        assert!(!err.contains('\r') && !err.contains('\x07'), "{err}");
    }

    #[test]
    #[cfg(unix)]
    fn the_hint_file_lives_in_a_private_directory_removed_at_the_end() {
        use std::os::unix::fs::MetadataExt;
        let mut hint = HintFile::for_run().unwrap();
        assert_eq!(hint.missing(), None);
        let path = hint.path().unwrap();
        assert_eq!(hint.env_value(), path.as_os_str());
        let dir = path.parent().unwrap().to_path_buf();
        assert!(path.is_absolute());
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o7777, 0o700);
        std::fs::write(&path, "permanent\n").unwrap();
        assert_eq!(hint.take(), Ok(Some(HintContent::Word(Hint::Permanent))));
        std::fs::write(&path, "HTTP/2 429\r\nretry-after: 3\r\n\r\n").unwrap();
        let Ok(Some(HintContent::Headers(response))) = hint.take() else {
            panic!("not read as headers");
        };
        assert_eq!(response.status, Some(429));
        assert_eq!(response.retry_after.as_deref(), Some("3"));
        assert!(!path.exists());
        assert_eq!(hint.take(), Ok(None));
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        assert_eq!(hint.take(), Err("hint file is a symlink, ignored".into()));
        assert!(std::fs::symlink_metadata(&path).is_err());
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("x"), "x").unwrap();
        assert_eq!(hint.take(), Err("hint file is a directory, ignored".into()));
        std::fs::write(&path, vec![b' '; MAX_HINT_BYTES + 1]).unwrap();
        assert!(hint.take().unwrap_err().contains("too long"));
        std::fs::write(dir.join("other"), "x").unwrap();
        drop(hint);
        assert!(!dir.exists());
    }

    #[test]
    fn a_run_without_a_hint_file_has_an_empty_variable_and_no_hint() {
        let mut hint = HintFile {
            dir: Err("creating a private directory in /tmp: No such file or directory".into()),
            left_behind: false,
        };
        assert_eq!(
            hint.missing().as_deref(),
            Some(
                "no place for the hint file (creating a private directory in /tmp: No such file or directory): RETRY_HINT_FILE is empty"
            )
        );
        assert_eq!(hint.path(), None);
        assert_eq!(hint.env_value(), OsString::new());
        assert_eq!(hint.prepare(), Ok(()));
        assert_eq!(hint.take(), Ok(None));
        assert_eq!(hint.prepare(), Ok(()));
    }
}
