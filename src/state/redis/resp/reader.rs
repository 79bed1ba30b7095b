//! The read buffer of a connection: a reply is read a line or an exact
//! number of bytes at a time, one system call per fill, and a line longer
//! than [`MAX_LINE`] is a protocol error, never a growing allocation.

use std::io::{self, Read};

use super::Connection;
use super::trouble::{Trouble, closed, nonsense};
use crate::state::store::one_line;

/// The longest reply line (status, error, length) read.
const MAX_LINE: usize = 4096;

impl Connection {
    /// One line, without its CR LF, at most `MAX_LINE` long.
    pub(super) fn line(&mut self) -> Result<Vec<u8>, Trouble> {
        let mut searched = 0;
        loop {
            let pending = &self.buf[self.at..];
            if let Some(pos) = memchr::memchr(b'\n', &pending[searched..]) {
                let end = searched + pos;
                let Some(line) = pending[..end].strip_suffix(b"\r") else {
                    return Err(nonsense(&one_line(&String::from_utf8_lossy(
                        &pending[..end],
                    ))));
                };
                let line = line.to_vec();
                self.at += end + 1;
                return Ok(line);
            }
            searched = pending.len();
            if searched > MAX_LINE {
                return Err(nonsense(&format!(
                    "a line longer than {MAX_LINE} bytes, starting {}",
                    one_line(&String::from_utf8_lossy(&pending[..80]))
                )));
            }
            self.fill()?;
        }
    }

    /// Exactly `n` bytes.
    pub(super) fn exact(&mut self, n: usize) -> Result<Vec<u8>, Trouble> {
        while self.buf.len() - self.at < n {
            self.fill()?;
        }
        let bytes = self.buf[self.at..self.at + n].to_vec();
        self.at += n;
        Ok(bytes)
    }

    /// Read what the socket has (one system call), keeping what is unused.
    fn fill(&mut self) -> Result<(), Trouble> {
        if self.at > 0 {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        let mut chunk = [0u8; 4096];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(closed()),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err.into()),
            }
        }
    }
}
