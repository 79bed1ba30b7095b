//! The embedded store: one JSON file per record (`NAME.json` for a
//! circuit) in a state directory.
//!
//! - Trust: the state directory is reached only through directories that
//!   root or we own and no one else can write (see `dir`), and every file
//!   in it is opened relative to that checked directory with `O_NOFOLLOW`:
//!   a symlink, FIFO or device where a state or lock file should be is never
//!   followed or opened for reading. Files are created 0600.
//! - Concurrency: every update holds an exclusive `flock` on `NAME.lock`
//!   (a file of its own, since the state file is replaced, not rewritten).
//!   A lock another process holds is waited for in the kernel's queue, on
//!   a thread of its own, while this one watches the store's time limit
//!   (`--state-timeout`) and signals: the wait ends with an error, never
//!   hangs, and a waiter gets the lock as soon as it is free (a loop of
//!   sleeps left it free between tries: of 400 runs started at once, 114
//!   gave up after 1 s; none now, BENCHMARKS.md).
//! - Bounded: a state file is read up to [`MAX_RECORD_BYTES`]; anything
//!   larger is corrupt, and the caller treats it as the record's default.
//! - Crash safety: the new state replaces the old through
//!   `safe_fs::replace` (an unnamed temporary file, `O_TMPFILE`, in the
//!   directory, fsynced, linked in under a temporary name and renamed over
//!   the old one); a crash or SIGKILL at any instant leaves the old state
//!   or the new one, never a torn one. Where the file system has no
//!   `O_TMPFILE`, a named temporary file does the same.
//!   Either way, a temporary name a killed writer left behind is removed by
//!   the next update, which holds the lock and so knows that no writer of
//!   that record is still at work.

mod absent;
mod case;
mod dir;
mod names;
mod records;
mod waiting;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::sys::fs::{mode_bits, raw_mode};
use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

use super::store::{
    Interrupted, Kind, Loaded, MAX_RECORD_BYTES, Patience, SIGNAL_SLICE, Store, too_large,
};
use crate::safe_fs::replace::{NewMode, Options, Replacement, Step, Trouble};
use names::{Names, temporary_name};
use waiting::LockWait;

pub(crate) struct FileStore {
    /// For messages.
    dir: PathBuf,
    /// The checked state directory: every file is reached through it.
    fd: OwnedFd,
    /// The longest wait for a lock.
    timeout: Duration,
    /// Write through `O_TMPFILE` when the file system has it (tests turn
    /// it off to try the named fallback).
    unnamed: bool,
}

/// Wait for the exclusive `flock` on `fd` in the kernel's queue, on a
/// thread of its own; the lock (with `fd`) comes back on the channel. A
/// blocking `flock` cannot be given a time limit, and a signal handler
/// installed with `SA_RESTART` (as retry's are) restarts it; so the wait
/// happens where it can block, and the caller looks at the clock and at
/// signals meanwhile. A caller that stops waiting drops the receiver: the
/// thread then closes `fd` when it gets the lock, which frees it at once.
/// The thread blocks every signal, so they keep reaching the main thread.
fn wait_for_lock(
    fd: OwnedFd,
) -> std::io::Result<std::sync::mpsc::Receiver<rustix::io::Result<OwnedFd>>> {
    let (send, receive) = std::sync::mpsc::sync_channel(1);
    let waiter = move || {
        let locked = rustix::fs::flock(&fd, FlockOperation::LockExclusive).map(|()| fd);
        // Nobody waits any more: `fd` (and the lock) go with the message.
        let _ = send.send(locked);
    };
    crate::sys::thread::spawn_with_signals_blocked("retry-lock", 64 * 1024, waiter).map(|_| receive)
}

/// What a non-regular file is, for messages.
fn file_type_name(mode: u32) -> &'static str {
    match FileType::from_raw_mode(raw_mode(mode)) {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symlink",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "not a regular file",
    }
}

fn is_regular(mode: u32) -> bool {
    FileType::from_raw_mode(raw_mode(mode)) == FileType::RegularFile
}

impl FileStore {
    /// Use `dir`, creating it (0700) if missing; refuse it unless it and
    /// every directory above it are safe from other users (see `dir`).
    /// `timeout` bounds the wait for a lock another process holds.
    pub(crate) fn open(dir: &Path, timeout: Duration) -> Result<FileStore> {
        let fd = dir::open_private(dir)?;
        Ok(FileStore {
            dir: dir.to_path_buf(),
            fd,
            timeout,
            unnamed: true,
        })
    }

    /// Use `dir` only to read records ([`Store::read_blob`]): checked as
    /// for [`FileStore::open`], but nothing is made and no lock is taken,
    /// so a read-only directory (or file system) will do. A missing
    /// directory holds no records.
    pub(crate) fn open_to_read(dir: &Path, timeout: Duration) -> Result<Box<dyn Store>> {
        match dir::open_existing(dir) {
            Ok(fd) => Ok(Box::new(FileStore {
                dir: dir.to_path_buf(),
                fd,
                timeout,
                unnamed: true,
            })),
            Err(err) if err.is::<dir::NotThere>() => Ok(Box::new(absent::AbsentDir::new(dir))),
            Err(err) => Err(err),
        }
    }

    /// What stands at `file` when it is not a regular file (not following
    /// a symlink), so that a FIFO or device is never even opened.
    fn special(&self, file: &str) -> Result<Option<&'static str>> {
        match rustix::fs::statat(&self.fd, file, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if !is_regular(mode_bits(stat.st_mode)) => {
                Ok(Some(file_type_name(mode_bits(stat.st_mode))))
            }
            Ok(_) | Err(Errno::NOENT) => Ok(None),
            Err(err) => Err(err).with_context(|| format!("{}", self.dir.join(file).display())),
        }
    }

    /// Take the record's lock: at once when it is free; else in the
    /// kernel's queue ([`wait_for_lock`]), until the store's time limit, or
    /// sooner as `patience` says (the run's deadline; a signal to retry,
    /// looked at every [`SIGNAL_SLICE`]).
    fn lock(&self, names: &Names, patience: Patience) -> Result<OwnedFd> {
        let path = self.dir.join(&names.lock);
        if let Some(what) = self.special(&names.lock)? {
            bail!(
                "the lock file {} is {what}: refusing to open it (remove it)",
                path.display()
            );
        }
        let fd = match rustix::fs::openat(
            &self.fd,
            names.lock.as_str(),
            OFlags::RDWR
                | OFlags::CREATE
                | OFlags::NOFOLLOW
                | OFlags::NONBLOCK
                | OFlags::NOCTTY
                | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) {
            Ok(fd) => fd,
            Err(Errno::LOOP) => bail!(
                "the lock file {} is a symlink: refusing to follow it (remove it)",
                path.display()
            ),
            Err(err) => {
                return Err(err)
                    .with_context(|| format!("opening the lock file {}", path.display()));
            }
        };
        let stat = rustix::fs::fstat(&fd).with_context(|| format!("{}", path.display()))?;
        if !is_regular(mode_bits(stat.st_mode)) {
            bail!(
                "the lock file {} is {}: refusing it (remove it)",
                path.display(),
                file_type_name(mode_bits(stat.st_mode))
            );
        }
        let started = Instant::now();
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(fd),
            Err(Errno::WOULDBLOCK | Errno::INTR) => {}
            Err(err) => return Err(err).with_context(|| format!("locking {}", path.display())),
        }
        let waiting = wait_for_lock(fd).with_context(|| format!("locking {}", path.display()))?;
        LockWait {
            lock: &path,
            record: &self.dir.join(&names.json),
            started,
            timeout: self.timeout,
            patience,
        }
        .until_locked(&waiting)
    }

    /// Remove temporary files a killed writer of this record left behind.
    /// Called with the lock held: no writer of this record is at work, so
    /// every one of its temporary names is stale.
    fn remove_temporaries(&self, names: &Names) {
        let Ok(entries) = rustix::fs::Dir::read_from(&self.fd) else {
            return;
        };
        for entry in entries.flatten() {
            let file = entry.file_name();
            if names.is_temporary(file.to_bytes()) {
                let _ = rustix::fs::unlinkat(&self.fd, file, AtFlags::empty());
            }
        }
    }

    /// Read the record, bounded: a missing file is `Missing`; a symlink,
    /// FIFO, device or oversized file is corrupt (never followed, opened
    /// or read whole).
    fn load(&self, names: &Names) -> Loaded {
        match self.special(&names.json) {
            Ok(Some(what)) => {
                return Loaded::Corrupt(format!("it is {what}, not a regular file; not opened"));
            }
            Ok(None) => {}
            Err(err) => return Loaded::Unreadable(err.root_cause().to_string()),
        }
        let fd = match rustix::fs::openat(
            &self.fd,
            names.json.as_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Loaded::Missing,
            Err(Errno::LOOP) => {
                return Loaded::Corrupt("it is a symlink, not a regular file; not followed".into());
            }
            Err(err) => return Loaded::Unreadable(err.to_string()),
        };
        match rustix::fs::fstat(&fd) {
            Ok(stat) if is_regular(mode_bits(stat.st_mode)) => {}
            Ok(stat) => {
                return Loaded::Corrupt(format!(
                    "it is {}, not a regular file",
                    file_type_name(mode_bits(stat.st_mode))
                ));
            }
            Err(err) => return Loaded::Unreadable(err.to_string()),
        }
        let mut bytes = Vec::new();
        match File::from(fd)
            .take(MAX_RECORD_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
        {
            Ok(_) if bytes.len() > MAX_RECORD_BYTES => Loaded::Corrupt(too_large()),
            Ok(_) => Loaded::Bytes(bytes),
            Err(err) => Loaded::Unreadable(err.to_string()),
        }
    }

    /// Replace the record with `text`, atomically (and durably, when its
    /// kind asks it). The state directory is ours alone: whatever stands
    /// at the record's name (a corrupt record: a symlink, a FIFO) is
    /// replaced. Where an unnamed file cannot be named (no `/proc`), the
    /// record is written again through a named one.
    fn store(&self, names: &Names, text: &[u8]) -> Result<()> {
        match self.replace(names, text, self.unnamed) {
            Err(Trouble::Failed(Step::Name, _)) if self.unnamed => self.replace(names, text, false),
            other => other,
        }
        .map_err(|trouble| names::trouble(&self.dir, names, trouble))
    }

    /// One try at replacing the record with `text`.
    fn replace(&self, names: &Names, text: &[u8], unnamed: bool) -> Result<(), Trouble> {
        let dir = self
            .fd
            .try_clone()
            .map_err(|err| Trouble::Failed(Step::Create, err))?;
        let options = Options {
            mode: NewMode::Exactly(0o600),
            durable: names.durable,
            guard: false,
            unnamed,
        };
        let stem = names.stem.clone();
        let temporary = move || OsString::from(temporary_name(&stem));
        let mut replacement =
            Replacement::new(dir, OsStr::new(&names.json), options, Box::new(temporary))?;
        replacement.write_all(text)?;
        replacement.commit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuit::breaker::{CircuitState, Phase};
    use crate::circuit::{CIRCUIT, CircuitStore};
    use crate::safe_fs::sorted_names as names_in;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    const SECOND: Duration = Duration::from_secs(1);

    fn private() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    #[test]
    fn state_round_trips_and_files_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(&dir.path().join("state"), SECOND).unwrap();
        let updated = store
            .update("job", &mut |state| {
                state.failures = 2;
                state.phase = Phase::Open;
            })
            .unwrap();
        assert!(updated.warning.is_none());
        let again = store.update("job", &mut |_| {}).unwrap();
        assert_eq!(again.state.failures, 2);
        assert_eq!(again.state.phase, Phase::Open);
        let mode = std::fs::metadata(dir.path().join("state/job.json"))
            .unwrap()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = std::fs::metadata(dir.path().join("state")).unwrap().mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        // The format on disk is unchanged: pretty JSON and a newline.
        let text = std::fs::read_to_string(dir.path().join("state/job.json")).unwrap();
        let expected = serde_json::to_string_pretty(&again.state).unwrap() + "\n";
        assert_eq!(text, expected);
    }

    #[test]
    fn a_corrupt_state_is_reported_and_read_as_closed() {
        let dir = private();
        let store = FileStore::open(dir.path(), SECOND).unwrap();
        std::fs::write(dir.path().join("job.json"), "{\"phase\": \"op").unwrap();
        let updated = store.update("job", &mut |_| {}).unwrap();
        assert!(updated.warning.unwrap().contains("corrupt"));
        assert_eq!(updated.state, CircuitState::default());
    }

    #[test]
    fn a_directory_writable_by_others_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = FileStore::open(dir.path(), SECOND).err().unwrap();
        assert!(err.to_string().contains("writable by others"), "{err}");
    }

    #[test]
    fn an_oversized_state_is_corrupt_and_not_read_whole() {
        let dir = private();
        let store = FileStore::open(dir.path(), SECOND).unwrap();
        // A valid open state, padded past the bound.
        let open = serde_json::json!({
            "phase": "open", "failures": 3, "open_until_ms": crate::state::now_ms() + 3_600_000,
            "cooldown_ms": 3_600_000, "probe": null, "updated_ms": 0
        });
        let mut text = " ".repeat(MAX_RECORD_BYTES);
        text.push_str(&open.to_string());
        std::fs::write(dir.path().join("job.json"), &text).unwrap();
        let updated = store.update("job", &mut |_| {}).unwrap();
        let warning = updated.warning.unwrap();
        assert!(
            warning.contains("corrupt") && warning.contains("64 KiB"),
            "{warning}"
        );
        assert_eq!(updated.state.phase, Phase::Closed);
        // Just under the bound is read.
        std::fs::write(dir.path().join("job.json"), open.to_string()).unwrap();
        assert_eq!(
            store.update("job", &mut |_| {}).unwrap().state.phase,
            Phase::Open
        );
    }

    #[test]
    fn a_symlinked_state_file_is_not_followed_and_its_target_is_untouched() {
        let dir = private();
        let outside = private();
        let target = outside.path().join("target.json");
        let open = serde_json::json!({
            "phase": "open", "failures": 3, "open_until_ms": crate::state::now_ms() + 3_600_000,
            "cooldown_ms": 3_600_000, "probe": null, "updated_ms": 0
        })
        .to_string();
        std::fs::write(&target, &open).unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("job.json")).unwrap();
        let store = FileStore::open(dir.path(), SECOND).unwrap();
        let updated = store.update("job", &mut |_| {}).unwrap();
        assert!(updated.warning.unwrap().contains("symlink"));
        assert_eq!(updated.state.phase, Phase::Closed);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), open);
        // The link itself was replaced by a regular file.
        assert!(
            std::fs::symlink_metadata(dir.path().join("job.json"))
                .unwrap()
                .is_file()
        );
    }

    #[test]
    fn a_fifo_state_file_is_not_opened() {
        let dir = private();
        crate::sys::fs::make_fifo(&dir.path().join("job.json")).unwrap();
        let store = FileStore::open(dir.path(), SECOND).unwrap();
        let started = Instant::now();
        let updated = store.update("job", &mut |_| {}).unwrap();
        assert!(started.elapsed() < SECOND);
        assert!(updated.warning.unwrap().contains("FIFO"));
        assert!(
            std::fs::symlink_metadata(dir.path().join("job.json"))
                .unwrap()
                .is_file()
        );
    }

    #[test]
    fn a_special_or_symlinked_lock_file_is_refused() {
        let dir = private();
        let store = FileStore::open(dir.path(), SECOND).unwrap();
        crate::sys::fs::make_fifo(&dir.path().join("f.lock")).unwrap();
        let err = store.update("f", &mut |_| {}).err().unwrap().to_string();
        assert!(err.contains("FIFO"), "{err}");
        let elsewhere = private();
        std::os::unix::fs::symlink(elsewhere.path().join("x"), dir.path().join("s.lock")).unwrap();
        let err = store.update("s", &mut |_| {}).err().unwrap().to_string();
        assert!(err.contains("symlink"), "{err}");
        assert!(!elsewhere.path().join("x").exists());
    }

    #[test]
    fn a_held_lock_times_out_instead_of_hanging() {
        let dir = private();
        let store = FileStore::open(dir.path(), Duration::from_millis(200)).unwrap();
        store.update("held", &mut |_| {}).unwrap();
        let holder = File::open(dir.path().join("held.lock")).unwrap();
        rustix::fs::flock(&holder, FlockOperation::LockExclusive).unwrap();
        let started = Instant::now();
        let err = store.update("held", &mut |_| {}).err().unwrap().to_string();
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(200) && waited < SECOND,
            "{waited:?}"
        );
        assert!(
            err.contains("could not lock") && err.contains("within 200ms"),
            "{err}"
        );
        assert!(err.contains("held by another process"), "{err}");
        drop(holder);
        store.update("held", &mut |_| {}).unwrap();
    }

    #[test]
    fn updates_leave_no_temporary_files_either_way() {
        for unnamed in [true, false] {
            let dir = private();
            let mut store = FileStore::open(dir.path(), SECOND).unwrap();
            store.unnamed = unnamed;
            for failures in 1..4 {
                store.update("job", &mut |s| s.failures = failures).unwrap();
            }
            assert_eq!(
                names_in(dir.path()),
                ["job.json", "job.lock"],
                "unnamed: {unnamed}"
            );
            let mode = std::fs::metadata(dir.path().join("job.json"))
                .unwrap()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
            assert_eq!(store.update("job", &mut |_| {}).unwrap().state.failures, 3);
        }
    }

    #[test]
    fn names_that_differ_only_in_case_keep_files_of_their_own() {
        let dir = private();
        let store = FileStore::open(dir.path(), SECOND).unwrap();
        store.update("api", &mut |s| s.failures = 1).unwrap();
        store.update("API", &mut |s| s.failures = 7).unwrap();
        store.update("Api", &mut |s| s.failures = 3).unwrap();
        // Lowercase names keep the files they always had.
        assert_eq!(
            names_in(dir.path()),
            [
                "API~7.json",
                "API~7.lock",
                "Api~1.json",
                "Api~1.lock",
                "api.json",
                "api.lock"
            ]
        );
        for (name, failures) in [("api", 1), ("API", 7), ("Api", 3)] {
            let state = store.update(name, &mut |_| {}).unwrap().state;
            assert_eq!(state.failures, failures, "{name}");
        }
        assert!(store.location(&CIRCUIT, "API").ends_with("/API~7.json"));
        // A killed writer's temporary file of `API` is `API`'s to remove.
        std::fs::write(dir.path().join(".API~7.Ab12Cd.tmp"), "").unwrap();
        std::fs::write(dir.path().join(".api.Ab12Cd.tmp"), "").unwrap();
        store.update("API", &mut |_| {}).unwrap();
        assert!(!dir.path().join(".API~7.Ab12Cd.tmp").exists());
        assert!(dir.path().join(".api.Ab12Cd.tmp").exists());
    }

    #[test]
    fn stale_temporary_files_of_the_record_are_removed_under_the_lock() {
        let dir = private();
        let store = FileStore::open(dir.path(), SECOND).unwrap();
        for file in [
            ".job.AbC123.tmp",
            ".job.x.AbC123.tmp",
            ".job.toolong1.tmp",
            "other",
        ] {
            std::fs::write(dir.path().join(file), "").unwrap();
        }
        store.update("job", &mut |_| {}).unwrap();
        assert_eq!(
            names_in(dir.path()),
            [
                ".job.toolong1.tmp",
                ".job.x.AbC123.tmp",
                "job.lock",
                "other"
            ]
        );
    }

    #[test]
    fn another_kind_of_record_has_files_of_its_own() {
        let kind = Kind {
            file_prefix: "budget-",
            ..CIRCUIT
        };
        let dir = private();
        let store = FileStore::open(dir.path(), SECOND).unwrap();
        store
            .update_blob(&kind, "api", Patience::default(), &mut |loaded| {
                assert!(matches!(loaded, Loaded::Missing));
                Ok(Some(serde_json::json!({"tokens": 3})))
            })
            .unwrap();
        store.update("api", &mut |s| s.failures = 1).unwrap();
        assert_eq!(
            names_in(dir.path()),
            ["api.json", "api.lock", "budget-api.json", "budget-api.lock"]
        );
        store
            .update_blob(&kind, "api", Patience::default(), &mut |loaded| {
                match loaded {
                    Loaded::Bytes(bytes) => assert_eq!(
                        serde_json::from_slice::<serde_json::Value>(bytes).unwrap()["tokens"],
                        3
                    ),
                    other => panic!("{other:?}"),
                }
                Ok(None)
            })
            .unwrap();
    }
}
