//! Where a successful attempt's stdout goes when it does not stream straight
//! through: `--buffer-stdout` and `-o FILE`.
//!
//! Each attempt's stdout is held in a file (truncated before every attempt)
//! that only retry writes: the attempt's pump copies the attempt's own pipe
//! into it, so nothing the attempt leaves running can write there after the
//! attempt. Only a successful run's is delivered, and nothing else ever
//! reaches the caller:
//!
//! - `--buffer-stdout`: a spool in `$TMPDIR`, unnamed, copied to retry's own
//!   stdout after the success.
//! - `-o FILE`: a [`Replacement`] of FILE, made before the first attempt in
//!   FILE's own directory: unnamed (`O_TMPFILE`) until the final rename
//!   over FILE, so that FILE is replaced atomically and a run that is
//!   killed leaves nothing behind. Where the filesystem has no `O_TMPFILE`,
//!   a named `.retry-out-*.tmp` stands in: it is locked while its run
//!   lives, removed when the run ends, and a later run in the same
//!   directory removes one its run left behind.
//!
//! It must not decide what a failure does to the run: the runner does.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

use crate::run::error_text;
use crate::safe_fs;
use crate::safe_fs::replace::{NewMode, Options, Refusal, Replacement, Step, Trouble};
use crate::sys::fd::{AsFd, Outlet};

/// Prefix and suffix of the named temporary files of `-o` (the fallback, and
/// the moment between linking an unnamed file and renaming it).
const TEMP_PREFIX: &str = ".retry-out-";
const TEMP_SUFFIX: &str = ".tmp";
/// A named temporary file older than this, that no live run holds locked,
/// was left by a run that was killed.
const STALE_AFTER: Duration = Duration::from_secs(60);
/// The mode of a new FILE, before the umask.
const NEW_FILE_MODE: u32 = 0o644;

/// Each attempt's stdout, held until the run is over.
pub(crate) struct HeldStdout {
    target: Target,
}

enum Target {
    /// `--buffer-stdout`: retry's own stdout; the spool lives in `dir`.
    Stdout { file: File, dir: PathBuf },
    /// `-o FILE`: FILE as the user gave it (for messages), and what is
    /// to replace it.
    Output {
        path: PathBuf,
        replacement: Replacement,
    },
}

impl HeldStdout {
    /// `--buffer-stdout`: a spool in `$TMPDIR`.
    pub(crate) fn spool() -> Result<HeldStdout> {
        let dir = safe_fs::temp_dir();
        let file = tempfile::tempfile_in(&dir).with_context(|| {
            format!(
                "creating the --buffer-stdout spool in {}",
                safe_fs::shown_temp_dir(&dir)
            )
        })?;
        Ok(HeldStdout {
            target: Target::Stdout { file, dir },
        })
    }

    /// `-o FILE`: check FILE and its directory and create the file that
    /// attempts write to, before anything runs.
    pub(crate) fn output(path: &Path) -> Result<HeldStdout> {
        Self::output_with(path, true)
    }

    fn output_with(path: &Path, unnamed: bool) -> Result<HeldStdout> {
        let shown = path.display();
        let Some((dir_path, name)) = safe_fs::split_file_path(path) else {
            bail!("-o {shown}: not a file name");
        };
        // No symlink another user planted on the way is followed.
        let dir = safe_fs::open_directory(dir_path).map_err(|err| {
            anyhow!(
                "-o {shown}: cannot use the directory {}: {}",
                dir_path.display(),
                error_text(&err)
            )
        })?;
        // Left by runs that were killed: ours by name (and owner), older
        // than a minute, and held by no live run.
        safe_fs::remove_stale(dir.as_fd(), TEMP_PREFIX, TEMP_SUFFIX, STALE_AFTER);
        let options = Options {
            mode: NewMode::LikeTarget(NEW_FILE_MODE),
            durable: true,
            guard: true,
            unnamed,
        };
        let replacement =
            Replacement::new(dir, name, options, Box::new(temp_name)).map_err(|trouble| {
                match trouble {
                    Trouble::Refused(refusal @ Refusal::NotRegular(_)) => anyhow!(
                        "-o {shown}: {}: -o replaces only a regular file",
                        describe(&refusal, "is")
                    ),
                    Trouble::Refused(refusal) => {
                        anyhow!("-o {shown}: {}", describe(&refusal, "is"))
                    }
                    Trouble::Failed(Step::Look, err) => anyhow!("-o {shown}: {}", error_text(&err)),
                    Trouble::Failed(_, err) => anyhow!(
                        "-o {shown}: cannot create a file in {}: {}",
                        dir_path.display(),
                        error_text(&err)
                    ),
                }
            })?;
        // Held for the life of the run (and of any process that holds the
        // file as its stdout): a later run never removes a live one.
        safe_fs::hold(replacement.file());
        Ok(HeldStdout {
            target: Target::Output {
                path: path.to_owned(),
                replacement,
            },
        })
    }

    /// Where attempts write their stdout.
    pub(crate) fn file(&self) -> &File {
        match &self.target {
            Target::Stdout { file, .. } => file,
            Target::Output { replacement, .. } => replacement.file(),
        }
    }

    /// Before an attempt: forget the previous attempt's output.
    pub(crate) fn reset(&self) -> Result<()> {
        let mut handle = self.file();
        handle
            .set_len(0)
            .and_then(|()| handle.seek(SeekFrom::Start(0)))
            .map(|_| ())
            .with_context(|| format!("resetting {}", self.describe()))
    }

    /// How many bytes the last attempt wrote.
    pub(crate) fn held_bytes(&self) -> u64 {
        self.file().metadata().map_or(0, |m| m.len())
    }

    /// For messages: where the output is held.
    pub(crate) fn describe(&self) -> String {
        match &self.target {
            Target::Stdout { dir, .. } => {
                format!(
                    "the --buffer-stdout spool in {}",
                    safe_fs::shown_temp_dir(dir)
                )
            }
            Target::Output { path, .. } => {
                format!("the temporary file of -o {}", path.display())
            }
        }
    }

    /// The run did not succeed: what to say about the output dropped.
    pub(crate) fn dropped(&self) -> Option<String> {
        let bytes = self.held_bytes();
        match &self.target {
            Target::Stdout { .. } if bytes > 0 => Some(format!(
                "dropped the last attempt's stdout ({}): --buffer-stdout passes on only a successful attempt's",
                plural_bytes(bytes)
            )),
            Target::Stdout { .. } => None,
            Target::Output { path, replacement } => {
                let kept = if replacement.target_exists() {
                    "keeps its old content"
                } else {
                    "was not created"
                };
                Some(format!(
                    "{} {kept}; the last attempt's stdout ({}) was dropped",
                    path.display(),
                    plural_bytes(bytes)
                ))
            }
        }
    }

    /// The run succeeded: pass the output on. An error is retry's own
    /// failure: the output could not be delivered. A reader of stdout that
    /// takes nothing is waited for until `give_up` says so (a signal, the
    /// run's deadline).
    pub(crate) fn deliver(self, give_up: &dyn Fn() -> bool) -> Result<()> {
        match self.target {
            Target::Stdout { file, .. } => emit(&file, give_up).map_err(|err| {
                anyhow!(
                    "writing the command's output to stdout: {}; the successful attempt's output was not delivered",
                    error_text(&err)
                )
            }),
            Target::Output { path, replacement } => commit(&path, replacement),
        }
    }
}

/// Copy the whole spool to retry's own stdout, waiting for a reader that
/// takes nothing until `give_up` says so.
fn emit(file: &File, give_up: &dyn Fn() -> bool) -> io::Result<()> {
    let mut stdout = Outlet::new(1);
    let mut buffer = vec![0u8; 256 * 1024];
    let mut offset = 0;
    loop {
        let count = match crate::sys::fs::read_at(file, &mut buffer, offset) {
            Ok(0) => return Ok(()),
            Ok(count) => count,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        stdout.write_all(&buffer[..count], give_up)?;
        offset += count as u64;
    }
}

/// Put the held output in place of FILE (`path`): mode (and, for root,
/// owner) like the file it replaces, data on disk, then one rename.
fn commit(path: &Path, replacement: Replacement) -> Result<()> {
    let shown = path.display().to_string();
    let fail = |what: &str, err: &io::Error| {
        anyhow!(
            "-o {shown}: {what}: {}; the successful attempt's output was not delivered, {shown} is left as it was",
            error_text(err)
        )
    };
    match replacement.commit() {
        // The rename itself on disk; a filesystem that cannot is no reason
        // to fail a delivery that happened.
        Ok(()) | Err(Trouble::Failed(Step::SyncDir, _)) => Ok(()),
        Err(Trouble::Refused(refusal)) => bail!(
            "-o {shown}: {}: left as it is; the successful attempt's output was not delivered",
            describe(&refusal, "is now")
        ),
        Err(Trouble::Failed(step, err)) => {
            let what = match step {
                Step::Look => "looking at it",
                Step::Mode => "setting its mode",
                Step::Name => "naming it",
                Step::Rename => "renaming it into place",
                Step::Create | Step::Write | Step::Sync | Step::SyncDir => "writing it",
            };
            Err(fail(what, &err))
        }
    }
}

/// Why what stands at FILE is not replaced, after "-o FILE: ", with `is`
/// ("is", "is now") for the tense.
fn describe(refusal: &Refusal, is: &str) -> String {
    match refusal {
        Refusal::NotRegular(mode) => format!(
            "{is} {}, not a regular file",
            crate::sys::fs::kind_name(*mode)
        ),
        Refusal::Planted { owner } => format!(
            "{is} owned by another user (uid {owner}) in a sticky directory others can write: not replaced (as fs.protected_regular would refuse to open it), so that no one else decides who reads the output"
        ),
    }
}

fn temp_name() -> OsString {
    format!("{TEMP_PREFIX}{:016x}{TEMP_SUFFIX}", rand::random::<u64>()).into()
}

fn plural_bytes(bytes: u64) -> String {
    if bytes == 1 {
        "1 byte".to_string()
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::safe_fs::sorted_names as listing;
    use crate::sys::tmpfile::UNNAMED_FILES;
    use rustix::fs::FlockOperation;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    use std::time::SystemTime;

    #[test]
    fn both_ways_of_holding_replace_the_file_and_leave_nothing_else() {
        for unnamed in [true, false].into_iter().filter(|&u| !u || UNNAMED_FILES) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("out");
            std::fs::write(&path, "old\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
            let held = HeldStdout::output_with(&path, unnamed).unwrap();
            assert_eq!(listing(dir.path()).len(), if unnamed { 1 } else { 2 });
            held.reset().unwrap();
            held.file().write_all(b"new\n").unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
            held.deliver(&|| false).unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o640, "unnamed: {unnamed}");
            assert_eq!(listing(dir.path()), ["out"]);
        }
    }

    #[test]
    fn a_named_temporary_file_is_removed_when_the_run_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let held = HeldStdout::output_with(&path, false).unwrap();
        held.file().write_all(b"partial").unwrap();
        assert!(held.dropped().unwrap().contains("was not created"));
        drop(held);
        assert!(listing(dir.path()).is_empty());
    }

    #[test]
    fn stale_temporary_files_go_and_live_or_fresh_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let old = SystemTime::now() - Duration::from_secs(600);
        let stale = dir.path().join(".retry-out-stale.tmp");
        File::create(&stale).unwrap().set_modified(old).unwrap();
        let fresh = dir.path().join(".retry-out-fresh.tmp");
        File::create(&fresh).unwrap();
        let live = dir.path().join(".retry-out-live.tmp");
        let held_open = File::create(&live).unwrap();
        held_open.set_modified(old).unwrap();
        rustix::fs::flock(&held_open, FlockOperation::NonBlockingLockExclusive).unwrap();
        let other = dir.path().join("unrelated.tmp");
        File::create(&other).unwrap().set_modified(old).unwrap();

        let _held = HeldStdout::output_with(&dir.path().join("out"), true).unwrap();
        let mut found = listing(dir.path());
        if !UNNAMED_FILES {
            // The held file itself is a named one here.
            found.retain(|name| !(name.starts_with(".retry-out-") && name.len() == 31));
        }
        assert_eq!(
            found,
            [
                ".retry-out-fresh.tmp",
                ".retry-out-live.tmp",
                "unrelated.tmp"
            ]
        );
    }

    #[test]
    fn only_a_regular_file_or_nothing_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let err = HeldStdout::output(dir.path()).err().unwrap().to_string();
        assert!(err.contains("is a directory"), "{err}");
        let err = HeldStdout::output(Path::new("/dev/null"))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("is a character device"), "{err}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("target", &link).unwrap();
        let err = HeldStdout::output(&link).err().unwrap().to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
        let err = HeldStdout::output(&dir.path().join("missing/out"))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("No such file or directory (ENOENT)"), "{err}");
        assert!(HeldStdout::output(&dir.path().join("new")).is_ok());
    }
}
