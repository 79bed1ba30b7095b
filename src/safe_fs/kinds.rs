//! What stands at a path, and reading a small file whole but bounded: the
//! same on every system (how a file's kind is read is each system's:
//! `Kind::of`).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// What stands at a path (Windows shows no FIFO or socket).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(windows, allow(dead_code))]
pub(crate) enum Kind {
    Regular,
    Directory,
    Symlink,
    Fifo,
    Device,
    Socket,
}

impl Kind {
    /// For messages: "a FIFO", "a symlink", ...
    pub(crate) fn described(self) -> &'static str {
        match self {
            Kind::Regular => "a regular file",
            Kind::Directory => "a directory",
            Kind::Symlink => "a symlink",
            Kind::Fifo => "a FIFO",
            Kind::Device => "a device",
            Kind::Socket => "a socket",
        }
    }
}

/// What stands at `path` itself (a symlink is not followed); `None` when
/// nothing does.
pub(crate) fn kind_at(path: &Path) -> io::Result<Option<Kind>> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(Kind::of(meta.file_type()))),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// Why a small file another process wrote was not read.
#[derive(Debug)]
pub(crate) enum Unreadable {
    /// Something other than a regular file stands there.
    NotRegular(Kind),
    /// More than the bound.
    TooLong,
    Io(io::Error),
}

/// At most `limit` bytes of `file`; `None` if it holds more.
pub(crate) fn read_bounded(file: &mut File, limit: usize) -> io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() <= limit).then_some(bytes))
}
