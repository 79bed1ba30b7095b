//! A run's private directory (for the hint file): where it goes (`$TMPDIR`,
//! else a file system in memory), that it is still the run's, and its
//! removal; and where the spools go.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::random_name;

/// A directory only this user can enter (0700), in the temporary
/// directory; removed with all it holds when dropped.
pub(crate) struct PrivateDir(PathBuf);

impl PrivateDir {
    /// A new one, named `prefix` and random characters (as mkdtemp does),
    /// in the first of [`runtime_bases`] that takes it.
    pub(crate) fn new(prefix: &str) -> Result<PrivateDir> {
        let mut failure = None;
        for base in runtime_bases() {
            match create_private_dir(&base, prefix) {
                Ok(path) => return Ok(PrivateDir(path)),
                Err(err) => failure = Some((base, err)),
            }
        }
        let (base, err) = failure.expect("runtime_bases is never empty");
        // A stale TMPDIR (a removed session directory) is the usual cause:
        // say where the place came from.
        let from = if tmpdir().is_some() { " ($TMPDIR)" } else { "" };
        bail!(
            "creating a private directory in {}{from}: {err}",
            base.display()
        )
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// Is the directory still there, and this user's? It can go while a
    /// run goes on: systemd-logind removes a user's files in `/dev/shm`
    /// (`RemoveIPC`) and their `$XDG_RUNTIME_DIR` when their last session
    /// ends, also under a run from cron or a service; a cleaner sweeps
    /// `/tmp`. Its name is then free, for another user too.
    pub(crate) fn is_ours(&self) -> bool {
        owned_by_us(&self.0, true)
    }
}

/// Is what stands at `path` (not followed) this user's, and a directory
/// when `dir`?
fn owned_by_us(path: &Path, dir: bool) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| {
        meta.uid() == rustix::process::geteuid().as_raw() && (meta.is_dir() || !dir)
    })
}

fn create_private_dir(base: &Path, prefix: &str) -> io::Result<PathBuf> {
    let mut tries = 0;
    loop {
        let path = base.join(random_name(prefix));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Ok(path),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists && tries < 100 => {
                tries += 1;
            }
            Err(err) => return Err(err),
        }
    }
}

/// Where a run's private directory may go, best first: `$TMPDIR` when it
/// is set (made absolute), as the user asked. Otherwise a file system in
/// memory, so that a plain run writes nothing to disk (a directory made
/// and removed on an ext4 `/tmp` cost a quarter of a millisecond of a
/// 2 ms run: BENCHMARKS.md): `$XDG_RUNTIME_DIR` when it is what the XDG
/// base directory specification says it must be (the user's own, 0700),
/// then, for root only, `/dev/shm` when it is shared as `/tmp` is (sticky,
/// root's), then `/tmp`. Only root's, because systemd-logind removes other
/// users' files in `/dev/shm` when their last session ends (`RemoveIPC`,
/// on by default; root and system users are spared), also under a run
/// that goes on: the name of its directory, which anyone can list there,
/// would then be free for another user to take while an attempt writes
/// its hint ([`PrivateDir::is_ours`] catches it only between attempts).
/// `$XDG_RUNTIME_DIR` can go the same way, but nobody else can make
/// anything in it. A place that refuses the directory (full, read-only) passes
/// the turn to the next; so does one in memory with less than
/// [`MIN_ROOM`] free, which still takes the directory (an empty one needs
/// no block) but not the hint written there.
fn runtime_bases() -> Vec<PathBuf> {
    if let Some(tmpdir) = tmpdir() {
        return vec![absolute(tmpdir)];
    }
    let euid = rustix::process::geteuid().as_raw();
    let mut bases = Vec::with_capacity(3);
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        let own_and_private = |meta: &std::fs::Metadata| {
            meta.is_dir() && meta.uid() == euid && meta.mode() & 0o777 == 0o700
        };
        if runtime.is_absolute()
            && std::fs::metadata(&runtime).is_ok_and(|m| own_and_private(&m))
            && has_room(&runtime)
        {
            bases.push(runtime);
        }
    }
    let shared_like_tmp = |meta: &std::fs::Metadata| {
        meta.is_dir() && meta.uid() == 0 && meta.mode() & 0o1777 == 0o1777
    };
    let shm = Path::new("/dev/shm");
    if euid == 0 && std::fs::metadata(shm).is_ok_and(|m| shared_like_tmp(&m)) && has_room(shm) {
        bases.push(shm.to_path_buf());
    }
    bases.push(PathBuf::from("/tmp"));
    bases
}

/// The least free space a file system in memory must have to hold a
/// run's directory: a full `/dev/shm` (64 MiB in a container, and shared
/// by every user) is common enough.
const MIN_ROOM: u64 = 1 << 20;

/// Has the file system of `dir` at least [`MIN_ROOM`] free for this user?
/// (A tmpfs without a size limit counts no blocks at all.)
fn has_room(dir: &Path) -> bool {
    rustix::fs::statvfs(dir).is_ok_and(|stat| {
        stat.f_blocks == 0 || stat.f_bavail.saturating_mul(stat.f_frsize) >= MIN_ROOM
    })
}

/// Where the spools go: `$TMPDIR`, else `/tmp`.
pub(crate) fn temp_dir() -> PathBuf {
    tmpdir().unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// [`temp_dir`]'s `dir` for messages: `/var/tmp (TMPDIR)`, or `/tmp`
/// when TMPDIR is not set (naming an unset variable sends the reader to
/// the wrong place).
pub(crate) fn shown_temp_dir(dir: &Path) -> String {
    if tmpdir().is_some() {
        format!("{} (TMPDIR)", dir.display())
    } else {
        format!("{} (TMPDIR is not set)", dir.display())
    }
}

/// `$TMPDIR` when it is set and not empty (an empty variable counts as
/// unset, as everywhere in retry; std's `temp_dir` would take it for the
/// current directory).
fn tmpdir() -> Option<PathBuf> {
    std::env::var_os("TMPDIR")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// A relative path made absolute against the current directory (else
/// /tmp), so paths handed to children hold wherever they run.
fn absolute(path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        return path;
    }
    std::env::current_dir().map_or_else(|_| PathBuf::from("/tmp"), |cwd| cwd.join(path))
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        // Usually empty by now (the hint file is removed after each
        // attempt): one rmdir. Otherwise the walk, which does not follow
        // symlinks: a child that replaced the directory with a link loses
        // the link, nothing else (rmdir refuses a link: ENOTDIR). What
        // another user put there, after the directory was removed under the
        // run, is left alone.
        if std::fs::remove_dir(&self.0).is_err() && owned_by_us(&self.0, false) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
