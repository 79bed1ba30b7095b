//! RESP2, the Redis protocol: commands encoded as arrays of bulk strings
//! ([`Connection::send`]), and replies decoded ([`Connection::read`]) with
//! every length bounded: a bulk string holds a record at most, an array a
//! few items, nested twice at most.

use std::io::Write;

use super::Connection;
use super::trouble::{Trouble, nonsense};
use crate::state::store::{MAX_RECORD_BYTES, one_line};

/// The longest bulk string read: one record and the byte that shows it is
/// too long.
const MAX_BULK: usize = MAX_RECORD_BYTES + 1;
/// The most items in an array reply (EXEC answers one per queued command).
const MAX_ITEMS: i64 = 16;

/// One reply.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::state::redis) enum Reply {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// For messages about a reply that was not the one expected.
    pub(in crate::state::redis) fn unexpected(&self) -> Trouble {
        match self {
            Reply::Error(text) => Trouble::Server(text.clone()),
            other => Trouble::Other(format!(
                "an unexpected reply: {}",
                one_line(&format!("{other:?}"))
            )),
        }
    }
}

impl Connection {
    /// Send `commands` in one write (a pipeline).
    pub(in crate::state::redis) fn send(&mut self, commands: &[Vec<&[u8]>]) -> Result<(), Trouble> {
        let mut out = Vec::new();
        for command in commands {
            out.extend_from_slice(format!("*{}\r\n", command.len()).as_bytes());
            for arg in command {
                out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
                out.extend_from_slice(arg);
                out.extend_from_slice(b"\r\n");
            }
        }
        self.stream.write_all(&out)?;
        self.stream.flush()?;
        Ok(())
    }

    /// Read one reply.
    pub(in crate::state::redis) fn read(&mut self) -> Result<Reply, Trouble> {
        self.reply(0)
    }

    fn reply(&mut self, depth: usize) -> Result<Reply, Trouble> {
        let line = self.line()?;
        let Some((&kind, rest)) = line.split_first() else {
            return Err(nonsense("an empty line"));
        };
        let text = || String::from_utf8_lossy(rest).into_owned();
        Ok(match kind {
            b'+' => Reply::Status(text()),
            b'-' => Reply::Error(text()),
            b':' => Reply::Int(number(rest)?),
            b'$' => match number(rest)? {
                -1 => Reply::Bulk(None),
                n if (0..=MAX_BULK as i64).contains(&n) => {
                    let n = n as usize;
                    let mut body = self.exact(n + 2)?;
                    if !body.ends_with(b"\r\n") {
                        return Err(nonsense("a bulk string without its end"));
                    }
                    body.truncate(n);
                    Reply::Bulk(Some(body))
                }
                n => {
                    return Err(Trouble::Other(format!(
                        "a reply of {n} bytes, more than any record"
                    )));
                }
            },
            b'*' => match number(rest)? {
                -1 => Reply::Array(None),
                n if (0..=MAX_ITEMS).contains(&n) && depth < 2 => {
                    let mut items = Vec::new();
                    for _ in 0..n {
                        items.push(self.reply(depth + 1)?);
                    }
                    Reply::Array(Some(items))
                }
                n => return Err(nonsense(&format!("an array of {n} items"))),
            },
            _ => return Err(nonsense(&one_line(&String::from_utf8_lossy(&line)))),
        })
    }
}

fn number(digits: &[u8]) -> Result<i64, Trouble> {
    std::str::from_utf8(digits)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| {
            nonsense(&format!(
                "{:?} for a number",
                String::from_utf8_lossy(digits)
            ))
        })
}
