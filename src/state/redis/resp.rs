//! A small Redis client for the fleet store: RESP2 over TCP, TLS or a Unix
//! socket, bounded in time and in size.
//!
//! The `redis` crate's connection sets socket timeouts per operation, so a
//! server that answers one byte at a time, each within the timeout, holds
//! it for as long as it likes. Here one [`Deadline`] covers the whole
//! exchange (resolving, connecting, the TLS handshake, AUTH and SELECT, and
//! every command after): before each read or write system call the
//! socket's timeout is set to the time left, and nothing starts once the
//! deadline has passed. Replies are bounded too: lines, bulk strings (a
//! record at most) and arrays (a few items) beyond their limits are
//! protocol errors, never allocations a server can size.
//!
//! - `deadline`: the [`Deadline`] of an exchange.
//! - `transport`: the stream to the server (TCP, TLS, Unix), every read
//!   and write within the deadline.
//! - `protocol`: RESP2 commands and [`Reply`]s; `reader`: the bounded read
//!   buffer under it.
//! - `trouble`: what went wrong, as [`Trouble`].
//!
//! Here: a [`Connection`], opened and authenticated.
//!
//! URLs are parsed by `url`, and TLS trusts what `tls` says.

use super::tls::Trust;
use super::url::{Addr, RedisUrl};

mod deadline;
mod protocol;
mod reader;
mod transport;
mod trouble;

pub(super) use deadline::Deadline;
pub(super) use protocol::Reply;
pub(super) use trouble::Trouble;

use transport::{Stream, Timed, tcp, tls, unix};

/// One connection, authenticated and on its database.
pub(super) struct Connection {
    stream: Stream,
    /// Bytes read and not yet used, from `at`.
    buf: Vec<u8>,
    at: usize,
}

impl Connection {
    /// Connect as `url` says, all within `deadline`; a TLS server's
    /// certificate is checked against the roots `trust` gives.
    pub(super) fn open(
        url: &RedisUrl,
        deadline: &Deadline,
        trust: &Trust,
    ) -> Result<Connection, Trouble> {
        let timed = |socket| Timed {
            socket,
            deadline: *deadline,
        };
        let stream = match &url.addr {
            Addr::Tcp { host, port } => Stream::Tcp(timed(tcp(host, *port, deadline)?)),
            Addr::Tls {
                host,
                port,
                insecure,
            } => {
                if *insecure {
                    return Err(Trouble::Other(
                        "#insecure is not supported: the server's certificate is always checked"
                            .into(),
                    ));
                }
                let socket = timed(tcp(host, *port, deadline)?);
                let config = trust
                    .config()
                    .map_err(|err| Trouble::Other(format!("TLS: {err}")))?;
                Stream::Tls(Box::new(tls(host, socket, config)?))
            }
            Addr::Unix(path) => Stream::Unix(Timed {
                socket: unix(path.clone(), deadline)?,
                deadline: *deadline,
            }),
        };
        let mut connection = Connection {
            stream,
            buf: Vec::new(),
            at: 0,
        };
        connection.handshake(url)?;
        Ok(connection)
    }

    /// From now on, every read and write ends by `deadline` (a connection
    /// opened within a share of the time goes on with all of it).
    pub(super) fn set_deadline(&mut self, deadline: Deadline) {
        match &mut self.stream {
            Stream::Tcp(s) => s.deadline = deadline,
            Stream::Unix(s) => s.deadline = deadline,
            Stream::Tls(s) => s.sock.deadline = deadline,
        }
    }

    /// AUTH (only with a password) and SELECT (only for a database other
    /// than 0), in one round trip.
    fn handshake(&mut self, url: &RedisUrl) -> Result<(), Trouble> {
        let db = url.db.to_string();
        let mut auth: Vec<&[u8]> = vec![b"AUTH"];
        if let Some(user) = &url.username {
            auth.push(user.as_bytes());
        }
        let mut commands: Vec<Vec<&[u8]>> = Vec::new();
        if let Some(password) = &url.password {
            auth.push(password.as_bytes());
            commands.push(auth);
        }
        if url.db != 0 {
            commands.push(vec![b"SELECT", db.as_bytes()]);
        }
        if commands.is_empty() {
            return Ok(());
        }
        self.send(&commands)?;
        for command in &commands {
            match self.read()? {
                Reply::Status(_) => {}
                Reply::Error(text) if command[0] == b"AUTH" => return Err(Trouble::Auth(text)),
                Reply::Error(text) => {
                    return Err(Trouble::Server(format!("SELECT {db}: {text}")));
                }
                other => return Err(other.unexpected()),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::state::store::Patience;

    /// A server that answers the first request with `reply`, then holds
    /// the connection for `hold`.
    fn answering(reply: &'static [u8], hold: Duration) -> (RedisUrl, std::thread::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(reply);
            std::thread::sleep(hold);
        });
        let info = crate::state::redis::url::parse(&format!("redis://127.0.0.1:{port}/0")).unwrap();
        (info, server)
    }

    fn one_reply(reply: &'static [u8]) -> Result<Reply, Trouble> {
        let (info, server) = answering(reply, Duration::from_millis(300));
        let deadline = Deadline::new(Duration::from_millis(200), Patience::default());
        let mut connection = Connection::open(&info, &deadline, &Trust::default())?;
        connection.send(&[vec![b"PING"]])?;
        let reply = connection.read();
        drop(connection);
        server.join().unwrap();
        reply
    }

    #[test]
    fn replies_are_read() {
        assert_eq!(one_reply(b"+OK\r\n").unwrap(), Reply::Status("OK".into()));
        assert_eq!(one_reply(b":42\r\n").unwrap(), Reply::Int(42));
        assert_eq!(one_reply(b"$-1\r\n").unwrap(), Reply::Bulk(None));
        assert_eq!(
            one_reply(b"$3\r\na\r\n\r\n").unwrap(),
            Reply::Bulk(Some(b"a\r\n".to_vec()))
        );
        assert_eq!(
            one_reply(b"*2\r\n+OK\r\n*-1\r\n").unwrap(),
            Reply::Array(Some(vec![Reply::Status("OK".into()), Reply::Array(None)]))
        );
    }

    #[test]
    fn oversized_or_malformed_replies_are_errors_not_allocations() {
        for reply in [
            &b"$99999999999\r\n"[..],
            b"*1000000\r\n",
            b"*1\r\n*1\r\n*1\r\n+OK\r\n",
            b"HTTP/1.1 400 Bad Request\r\n\r\n",
            b"+OK\n",
            b":x\r\n",
            b"\r\n",
        ] {
            let reply: &'static [u8] = Box::leak(reply.to_vec().into_boxed_slice());
            match one_reply(reply) {
                Err(Trouble::Other(why)) => assert!(!why.contains('\n'), "{why}"),
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(reply)),
            }
        }
    }

    #[test]
    fn a_line_that_never_ends_is_cut_off() {
        let long: &'static [u8] = Box::leak(
            format!("+{}", "O".repeat(10_000))
                .into_bytes()
                .into_boxed_slice(),
        );
        match one_reply(long) {
            Err(Trouble::Other(why)) => assert!(why.contains("longer than"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn silence_ends_at_the_deadline() {
        let (info, server) = answering(b"+O", Duration::from_secs(2));
        let started = Instant::now();
        let deadline = Deadline::new(Duration::from_millis(200), Patience::default());
        let result =
            Connection::open(&info, &deadline, &Trust::default()).and_then(|mut connection| {
                connection.send(&[vec![b"PING"]])?;
                connection.read()
            });
        let waited = started.elapsed();
        assert!(matches!(result, Err(Trouble::TimedOut)), "{result:?}");
        server.join().unwrap();
        assert!(
            waited >= Duration::from_millis(200) && waited < Duration::from_secs(1),
            "{waited:?}"
        );
    }
}
