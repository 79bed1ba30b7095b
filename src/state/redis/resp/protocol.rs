//! RESP2, the Redis protocol: commands encoded as arrays of bulk strings
//! ([`Connection::send`]), and replies decoded ([`Connection::read`]) with
//! every length bounded: a bulk string holds a record at most, an array a
//! few items, nested twice at most (a description of the deployment, as
//! `CLUSTER SLOTS`, more: [`Connection::read_large`]).

use std::io::Write;

use super::Connection;
use super::trouble::{Trouble, nonsense};
use crate::state::store::{MAX_RECORD_BYTES, one_line};

/// The longest bulk string read: one record and the byte that shows it is
/// too long.
const MAX_BULK: usize = MAX_RECORD_BYTES + 1;
/// How large a reply may be: the most items in one array, arrays nested
/// how deep, the longest bulk string, and the replies (items at any depth)
/// and bytes in all.
#[derive(Clone, Copy)]
struct Bounds {
    items: i64,
    depth: usize,
    bulk: usize,
    replies: usize,
    bytes: usize,
}

/// A reply to a command on a record: a few items, nested twice at most,
/// a record and a byte in a bulk string.
const SMALL: Bounds = Bounds {
    items: 16,
    depth: 2,
    bulk: MAX_BULK,
    replies: 64,
    bytes: 2 * MAX_BULK + 4096,
};
/// A description of the deployment (`CLUSTER SLOTS`: a range per slot at
/// most, each with its nodes and their metadata; `ROLE`): larger, still
/// bounded, so a server can make it cost a few MiB, never more.
const LARGE: Bounds = Bounds {
    items: 16384,
    depth: 4,
    bulk: 1024,
    replies: 200_000,
    bytes: 4 << 20,
};

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

    /// Read one reply to a command on a record.
    pub(in crate::state::redis) fn read(&mut self) -> Result<Reply, Trouble> {
        self.reply(0, SMALL, &mut (SMALL.replies, SMALL.bytes))
    }

    /// Read one reply that describes the deployment (`CLUSTER SLOTS`,
    /// `ROLE`): more items, nested deeper, still bounded.
    pub(in crate::state::redis) fn read_large(&mut self) -> Result<Reply, Trouble> {
        self.reply(0, LARGE, &mut (LARGE.replies, LARGE.bytes))
    }

    /// One reply within `bounds`; `left` counts down the replies and bytes
    /// the whole reply may still hold.
    fn reply(
        &mut self,
        depth: usize,
        bounds: Bounds,
        left: &mut (usize, usize),
    ) -> Result<Reply, Trouble> {
        let line = self.line()?;
        match (left.0.checked_sub(1), left.1.checked_sub(line.len() + 2)) {
            (Some(replies), Some(bytes)) => *left = (replies, bytes),
            _ => {
                return Err(Trouble::Other(
                    "a reply larger than any answer expected".into(),
                ));
            }
        }
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
                n if (0..=bounds.bulk as i64).contains(&n) && n as usize + 2 <= left.1 => {
                    let n = n as usize;
                    left.1 -= n + 2;
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
                n if (0..=bounds.items).contains(&n) && depth < bounds.depth => {
                    let mut items = Vec::new();
                    for _ in 0..n {
                        items.push(self.reply(depth + 1, bounds, left)?);
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
