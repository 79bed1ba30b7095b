//! The embedded store on Windows: one JSON file per record in a state
//! directory (`%LOCALAPPDATA%\retry\state` by default), as on Unix.
//!
//! - Trust: the state directory is made where missing; under
//!   `%LOCALAPPDATA%` it inherits the profile's ACL (the user, SYSTEM and
//!   the administrators). A symlink or a directory where a state or lock
//!   file should be is never followed or read.
//! - Concurrency: every update holds an exclusive lock on `NAME.lock`
//!   (`LockFileEx`), taken at once when free, else waited for on a thread
//!   of its own while this one watches the store's time limit and console
//!   events; the lock goes when its handle closes, also when retry dies.
//! - Bounded: a state file is read up to [`MAX_RECORD_BYTES`].
//! - Crash safety: the new state replaces the old through
//!   `safe_fs::replace` (a new file, flushed, then `MoveFileExW` with
//!   `MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH`); a temporary
//!   name a killed writer left behind is removed by the next update, which
//!   holds the lock.

#[path = "../absent.rs"]
mod absent;
#[path = "../case.rs"]
mod case;
#[path = "../names.rs"]
mod names;
#[path = "../records.rs"]
mod records;
#[path = "../waiting.rs"]
mod waiting;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::store::{
    Interrupted, Kind, Loaded, MAX_RECORD_BYTES, Patience, SIGNAL_SLICE, Store, too_large,
};
use crate::safe_fs::replace::{NewMode, Options, Replacement};
use crate::sys::fd::OwnedFd;
use names::{Names, temporary_name};
use waiting::LockWait;

pub(crate) struct FileStore {
    /// For messages, and where every file is.
    dir: PathBuf,
    /// The state directory, held open: it cannot be renamed or removed
    /// while the store is in use.
    handle: OwnedFd,
    /// The longest wait for a lock.
    timeout: Duration,
}

/// Wait for the lock on `file` on a thread of its own; the locked file
/// comes back on the channel (dropping it frees the lock).
fn wait_for_lock(file: File) -> io::Result<std::sync::mpsc::Receiver<io::Result<File>>> {
    let (send, receive) = std::sync::mpsc::sync_channel(1);
    let waiter = move || {
        let locked = crate::sys::fs::lock_exclusive(&file, true).map(|_| file);
        let _ = send.send(locked);
    };
    crate::sys::thread::spawn_with_signals_blocked("retry-lock", 64 * 1024, waiter).map(|_| receive)
}

impl FileStore {
    /// Use `dir`, creating it if missing.
    pub(crate) fn open(dir: &Path, timeout: Duration) -> Result<FileStore> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the state directory {}", dir.display()))?;
        Self::opened(dir, timeout)
    }

    fn opened(dir: &Path, timeout: Duration) -> Result<FileStore> {
        let handle = crate::safe_fs::open_directory(dir)
            .with_context(|| format!("state directory {}", dir.display()))?;
        Ok(FileStore {
            dir: dir.to_path_buf(),
            handle,
            timeout,
        })
    }

    /// Use `dir` only to read records: nothing is made; a missing directory
    /// holds no records.
    pub(crate) fn open_to_read(dir: &Path, timeout: Duration) -> Result<Box<dyn Store>> {
        if !dir.exists() {
            return Ok(Box::new(absent::AbsentDir::new(dir)));
        }
        Ok(Box::new(Self::opened(dir, timeout)?))
    }

    /// What stands at `file` when it is not a regular file (not following
    /// a symlink).
    fn special(&self, file: &str) -> Result<Option<&'static str>> {
        match std::fs::symlink_metadata(self.dir.join(file)) {
            Ok(meta) if meta.file_type().is_symlink() => Ok(Some("a symlink")),
            Ok(meta) if meta.is_dir() => Ok(Some("a directory")),
            Ok(_) => Ok(None),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err).with_context(|| format!("{}", self.dir.join(file).display())),
        }
    }

    /// Take the record's lock: at once when it is free; else on a thread,
    /// until the store's time limit, or sooner as `patience` says.
    fn lock(&self, names: &Names, patience: Patience) -> Result<File> {
        let path = self.dir.join(&names.lock);
        if let Some(what) = self.special(&names.lock)? {
            bail!(
                "the lock file {} is {what}: refusing to open it (remove it)",
                path.display()
            );
        }
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("opening the lock file {}", path.display()))?;
        let started = Instant::now();
        if crate::sys::fs::lock_exclusive(&file, false)
            .with_context(|| format!("locking {}", path.display()))?
        {
            return Ok(file);
        }
        let waiting = wait_for_lock(file).with_context(|| format!("locking {}", path.display()))?;
        LockWait {
            lock: &path,
            record: &self.dir.join(&names.json),
            started,
            timeout: self.timeout,
            patience,
        }
        .until_locked(&waiting)
    }

    /// Remove temporary files a killed writer of this record left behind
    /// (the lock is held).
    fn remove_temporaries(&self, names: &Names) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let file = entry.file_name();
            if names.is_temporary(file.as_encoded_bytes()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// Read the record, bounded: a missing file is `Missing`; a symlink, a
    /// directory or an oversized file is corrupt.
    fn load(&self, names: &Names) -> Loaded {
        match self.special(&names.json) {
            Ok(Some(what)) => {
                return Loaded::Corrupt(format!("it is {what}, not a regular file; not opened"));
            }
            Ok(None) => {}
            Err(err) => return Loaded::Unreadable(err.root_cause().to_string()),
        }
        let file = match crate::safe_fs::open_read_nofollow(&self.dir.join(&names.json)) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Loaded::Missing,
            Err(err) => return Loaded::Unreadable(err.to_string()),
        };
        let mut bytes = Vec::new();
        match file
            .take(MAX_RECORD_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
        {
            Ok(_) if bytes.len() > MAX_RECORD_BYTES => Loaded::Corrupt(too_large()),
            Ok(_) => Loaded::Bytes(bytes),
            Err(err) => Loaded::Unreadable(err.to_string()),
        }
    }

    /// Replace the record with `text`, atomically.
    fn store(&self, names: &Names, text: &[u8]) -> Result<()> {
        let replaced = self
            .handle
            .try_clone()
            .map_err(|err| {
                crate::safe_fs::replace::Trouble::Failed(crate::safe_fs::replace::Step::Create, err)
            })
            .and_then(|dir| {
                let options = Options {
                    mode: NewMode::Exactly(0o600),
                    durable: names.durable,
                    guard: false,
                    unnamed: false,
                };
                let stem = names.stem.clone();
                let temporary = move || OsString::from(temporary_name(&stem));
                let mut replacement =
                    Replacement::new(dir, OsStr::new(&names.json), options, Box::new(temporary))?;
                replacement.write_all(text)?;
                replacement.commit()
            });
        replaced.map_err(|trouble| names::trouble(&self.dir, names, trouble))
    }
}
