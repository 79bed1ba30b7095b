//! The embedded store: one JSON file per circuit in a state directory.
//!
//! - Concurrency: every update holds an exclusive `flock` on `NAME.lock`
//!   (the kernel queues the waiters; no sleep-and-retry loop). The lock is on
//!   a file of its own because the state file is replaced, not rewritten.
//! - Crash safety: the new state is written to a temporary file, fsynced and
//!   renamed over the old one, so a crash or SIGKILL at any instant leaves
//!   the old state or the new one, never a torn one.
//! - Safety: files are created 0600; a state directory that another user
//!   could write to (or that is not ours) is refused, since whoever can write
//!   it can open our circuits.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rustix::fs::FlockOperation;

use super::breaker::CircuitState;
use super::store::{Store, Updated};

pub(crate) struct FileStore {
    dir: PathBuf,
}

impl FileStore {
    /// Use `dir`, creating it (0700) if missing; refuse it if it is not
    /// owned by us or is writable by group or others.
    pub(crate) fn open(dir: &Path) -> Result<FileStore> {
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("creating the state directory {}", dir.display()))?;
        }
        let meta =
            std::fs::metadata(dir).with_context(|| format!("state directory {}", dir.display()))?;
        if !meta.is_dir() {
            bail!("state directory {} is not a directory", dir.display());
        }
        let uid = rustix::process::geteuid().as_raw();
        if meta.uid() != uid {
            bail!(
                "state directory {} belongs to uid {}, not to us (uid {uid}): refusing it",
                dir.display(),
                meta.uid()
            );
        }
        if meta.mode() & 0o022 != 0 {
            bail!(
                "state directory {} is writable by others (mode {:o}): refusing it, since anyone who can write there can open your circuits (chmod go-w it)",
                dir.display(),
                meta.mode() & 0o7777
            );
        }
        Ok(FileStore {
            dir: dir.to_path_buf(),
        })
    }

    fn state_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    fn lock(&self, name: &str) -> Result<File> {
        let path = self.dir.join(format!("{name}.lock"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("opening the lock file {}", path.display()))?;
        rustix::fs::flock(&file, FlockOperation::LockExclusive)
            .with_context(|| format!("locking {}", path.display()))?;
        Ok(file)
    }

    /// Read the state; a missing file is a closed circuit, an unreadable or
    /// corrupt one too, with a warning (it must never block jobs forever).
    fn load(&self, name: &str) -> (CircuitState, Option<String>) {
        let path = self.state_path(name);
        match std::fs::read(&path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                (CircuitState::default(), None)
            }
            Err(err) => (
                CircuitState::default(),
                Some(format!(
                    "cannot read the circuit state {}: {err}; treating the circuit as closed",
                    path.display()
                )),
            ),
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(state) => (state, None),
                Err(err) => (
                    CircuitState::default(),
                    Some(format!(
                        "the circuit state {} is corrupt ({err}); treating the circuit as closed",
                        path.display()
                    )),
                ),
            },
        }
    }

    fn store(&self, name: &str, state: &CircuitState) -> Result<()> {
        let path = self.state_path(name);
        // tempfile creates it 0600, in the same directory, so the rename is atomic.
        let mut temp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(&self.dir)
            .with_context(|| format!("creating a temporary file in {}", self.dir.display()))?;
        let mut text = serde_json::to_vec_pretty(state)?;
        text.push(b'\n');
        temp.write_all(&text).context("writing the circuit state")?;
        temp.as_file()
            .sync_all()
            .context("syncing the circuit state")?;
        temp.persist(&path)
            .with_context(|| format!("replacing {}", path.display()))?;
        // Make the rename itself durable.
        File::open(&self.dir)
            .and_then(|dir| dir.sync_all())
            .with_context(|| format!("syncing {}", self.dir.display()))?;
        Ok(())
    }
}

impl Store for FileStore {
    fn update(&self, name: &str, change: &mut dyn FnMut(&mut CircuitState)) -> Result<Updated> {
        let _lock = self.lock(name)?;
        let (mut state, warning) = self.load(name);
        let before = state.clone();
        change(&mut state);
        if state != before || warning.is_some() {
            self.store(name, &state)?;
        }
        Ok(Updated { state, warning })
    }

    fn describe(&self, name: &str) -> String {
        self.state_path(name).display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuit::breaker::Phase;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn state_round_trips_and_files_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(&dir.path().join("state")).unwrap();
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
    }

    #[test]
    fn a_corrupt_state_is_reported_and_read_as_closed() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("job.json"), "{\"phase\": \"op").unwrap();
        let updated = store.update("job", &mut |_| {}).unwrap();
        assert!(updated.warning.unwrap().contains("corrupt"));
        assert_eq!(updated.state, CircuitState::default());
    }

    #[test]
    fn a_directory_writable_by_others_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = FileStore::open(dir.path()).err().unwrap();
        assert!(err.to_string().contains("writable by others"), "{err}");
    }
}
