//! Windows' `sys::net`: std has no Unix-domain sockets on Windows, so a
//! `redis+unix://` URL is refused there when it is connected to.

use std::io;
use std::path::Path;
use std::time::Duration;

/// Never made: [`UnixStream::connect`] refuses.
pub(crate) struct UnixStream(());

#[allow(
    clippy::unused_self,
    clippy::unnecessary_wraps,
    reason = "the same methods as std's UnixStream"
)]
impl UnixStream {
    pub(crate) fn connect(_path: impl AsRef<Path>) -> io::Result<UnixStream> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "Unix sockets are not available on Windows: use redis:// or rediss://",
        ))
    }

    pub(crate) fn set_read_timeout(&self, _left: Option<Duration>) -> io::Result<()> {
        Ok(())
    }

    pub(crate) fn set_write_timeout(&self, _left: Option<Duration>) -> io::Result<()> {
        Ok(())
    }
}

impl io::Read for UnixStream {
    fn read(&mut self, _buffer: &mut [u8]) -> io::Result<usize> {
        Ok(0)
    }
}

impl io::Write for UnixStream {
    fn write(&mut self, _bytes: &[u8]) -> io::Result<usize> {
        Err(io::ErrorKind::Unsupported.into())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
