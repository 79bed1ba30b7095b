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
//! URLs are parsed by `url`, and TLS trusts what `tls` says.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use super::tls::Trust;
use super::url::{Addr, RedisUrl};
use crate::process::signals::terminating_arrived;
use crate::state::store::{Interrupted, MAX_RECORD_BYTES, Patience, SIGNAL_SLICE, one_line};

/// The longest reply line (status, error, length) read.
const MAX_LINE: usize = 4096;
/// The longest bulk string read: one record and the byte that shows it is
/// too long.
const MAX_BULK: usize = MAX_RECORD_BYTES + 1;
/// The most items in an array reply (EXEC answers one per queued command).
const MAX_ITEMS: i64 = 16;

/// The time limit of one exchange, from its start: the store's own, or the
/// run's deadline when that comes first; and whether a signal to retry
/// ends it (see [`Patience`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Deadline {
    pub(super) started: Instant,
    end: Option<Instant>,
    /// `end` is the run's deadline, not the store's limit.
    pub(super) by_run: bool,
    signals: bool,
}

impl Deadline {
    pub(super) fn new(limit: Duration, patience: Patience) -> Deadline {
        let started = Instant::now();
        let (end, by_run) = patience.end(started, limit);
        Deadline {
            started,
            end,
            by_run,
            signals: patience.signals,
        }
    }

    /// The time left (`None`: no limit), or a timeout once none is, or
    /// [`Interrupted`] once a signal to retry ends the exchange.
    fn left(&self) -> io::Result<Option<Duration>> {
        if self.signals && terminating_arrived() {
            return Err(io::Error::other(Interrupted));
        }
        match self.end {
            None => Ok(None),
            Some(end) => {
                let left = end.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    Err(io::ErrorKind::TimedOut.into())
                } else {
                    Ok(Some(left))
                }
            }
        }
    }

    /// How long the next blocking call may wait: the time left, cut into
    /// slices when a signal must be noticed meanwhile.
    fn slice(&self) -> io::Result<Option<Duration>> {
        let left = self.left()?;
        if !self.signals {
            return Ok(left);
        }
        Ok(Some(
            left.map_or(SIGNAL_SLICE, |left| left.min(SIGNAL_SLICE)),
        ))
    }

    /// `pause`, cut short so that it ends by the deadline at the latest.
    pub(super) fn clamp(&self, pause: Duration) -> Duration {
        match self.end {
            None => pause,
            Some(end) => pause.min(end.saturating_duration_since(Instant::now())),
        }
    }

    /// Sleep `pause`, ending by the deadline at the latest, and at once
    /// (with [`Interrupted`]) when a signal to retry ends the exchange.
    pub(super) fn pause(&self, pause: Duration) -> io::Result<()> {
        let wake = Instant::now() + self.clamp(pause);
        loop {
            if self.signals && terminating_arrived() {
                return Err(io::Error::other(Interrupted));
            }
            let left = wake.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            std::thread::sleep(left.min(SIGNAL_SLICE));
        }
    }
}

/// What went wrong in an exchange.
#[derive(Debug)]
pub(super) enum Trouble {
    TimedOut,
    Refused,
    /// AUTH was refused: the server's words.
    Auth(String),
    /// An error reply: the server's words.
    Server(String),
    /// Anything else (I/O, TLS, a reply that makes no sense): what.
    Other(String),
    /// Not Redis's doing: the record's own code failed.
    Record(anyhow::Error),
    /// A signal to retry ended the exchange.
    Interrupted,
}

impl From<io::Error> for Trouble {
    fn from(err: io::Error) -> Trouble {
        if err
            .get_ref()
            .is_some_and(<dyn std::error::Error + Send + Sync>::is::<Interrupted>)
        {
            return Trouble::Interrupted;
        }
        if let Some(tls) = err
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Trouble::Other(tls_trouble(tls));
        }
        match err.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => Trouble::TimedOut,
            io::ErrorKind::ConnectionRefused => Trouble::Refused,
            io::ErrorKind::UnexpectedEof => closed(),
            _ => Trouble::Other(err.to_string()),
        }
    }
}

/// A TLS failure, and what to do about the common one: a certificate
/// from a CA retry does not trust.
fn tls_trouble(err: &rustls::Error) -> String {
    match err {
        rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer) => format!(
            "{err} (no trusted CA signed the server's certificate: --state-ca FILE or RETRY_STATE_CA adds one)"
        ),
        other => other.to_string(),
    }
}

fn closed() -> Trouble {
    Trouble::Other("the server closed the connection".into())
}

fn nonsense(what: &str) -> Trouble {
    Trouble::Other(format!("a reply that is not Redis protocol: {what}"))
}

/// One reply.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Reply {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// For messages about a reply that was not the one expected.
    pub(super) fn unexpected(&self) -> Trouble {
        match self {
            Reply::Error(text) => Trouble::Server(text.clone()),
            other => Trouble::Other(format!(
                "an unexpected reply: {}",
                one_line(&format!("{other:?}"))
            )),
        }
    }
}

trait Socket: Read + Write {
    fn limit_reads(&self, left: Option<Duration>) -> io::Result<()>;
    fn limit_writes(&self, left: Option<Duration>) -> io::Result<()>;
}

impl Socket for TcpStream {
    fn limit_reads(&self, left: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(left)
    }
    fn limit_writes(&self, left: Option<Duration>) -> io::Result<()> {
        self.set_write_timeout(left)
    }
}

impl Socket for UnixStream {
    fn limit_reads(&self, left: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(left)
    }
    fn limit_writes(&self, left: Option<Duration>) -> io::Result<()> {
        self.set_write_timeout(left)
    }
}

/// A socket whose every read and write ends by the deadline.
struct Timed<S> {
    socket: S,
    deadline: Deadline,
}

/// A socket timeout shows as EAGAIN: say what it is.
fn expired(err: io::Error) -> io::Error {
    if err.kind() == io::ErrorKind::WouldBlock {
        io::ErrorKind::TimedOut.into()
    } else {
        err
    }
}

/// A socket's timeout or a signal ended the call: the deadline (asked again
/// by the caller) says whether to give up.
fn cut_short(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

impl<S: Socket> Read for Timed<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            self.socket.limit_reads(self.deadline.slice()?)?;
            match self.socket.read(buf) {
                Err(err) if cut_short(&err) => {}
                other => return other.map_err(expired),
            }
        }
    }
}

impl<S: Socket> Write for Timed<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            self.socket.limit_writes(self.deadline.slice()?)?;
            match self.socket.write(buf) {
                Err(err) if cut_short(&err) => {}
                other => return other.map_err(expired),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.socket.flush()
    }
}

type Tls = rustls::StreamOwned<rustls::ClientConnection, Timed<TcpStream>>;

enum Stream {
    Tcp(Timed<TcpStream>),
    Unix(Timed<UnixStream>),
    Tls(Box<Tls>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

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

    /// Send `commands` in one write (a pipeline).
    pub(super) fn send(&mut self, commands: &[Vec<&[u8]>]) -> Result<(), Trouble> {
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
    pub(super) fn read(&mut self) -> Result<Reply, Trouble> {
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

    /// One line, without its CR LF, at most `MAX_LINE` long.
    fn line(&mut self) -> Result<Vec<u8>, Trouble> {
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
    fn exact(&mut self, n: usize) -> Result<Vec<u8>, Trouble> {
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

/// Run a blocking call that has no timeout of its own (a name lookup, a
/// Unix socket's connect) on a helper thread, and stop waiting for it at
/// the deadline; the thread ends by itself.
fn off_thread<T: Send + 'static>(
    deadline: &Deadline,
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> Result<T, Trouble> {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("retry-store".into())
        .spawn(move || {
            let _ = sender.send(work());
        })
        .map_err(Trouble::from)?;
    loop {
        let answer = match deadline.slice()? {
            Some(wait) => receiver.recv_timeout(wait),
            None => receiver.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match answer {
            Ok(result) => return Ok(result?),
            // Time left or a signal: the deadline says at the next turn.
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Err(Trouble::TimedOut),
        }
    }
}

fn tcp(host: &str, port: u16, deadline: &Deadline) -> Result<TcpStream, Trouble> {
    let addresses = if let Ok(ip) = host.parse::<IpAddr>() {
        vec![SocketAddr::new(ip, port)]
    } else {
        let name = (host.to_string(), port);
        off_thread(deadline, move || {
            name.to_socket_addrs().map(Iterator::collect::<Vec<_>>)
        })
        .map_err(|trouble| match trouble {
            Trouble::Other(why) => Trouble::Other(format!("cannot resolve {host}: {why}")),
            other => other,
        })?
    };
    let mut last = Trouble::Other(format!("{host} has no address"));
    for address in addresses {
        let connected = match deadline.left()? {
            Some(left) => TcpStream::connect_timeout(&address, left),
            None => TcpStream::connect(address),
        };
        match connected {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(err) => last = err.into(),
        }
    }
    Err(last)
}

fn unix(path: PathBuf, deadline: &Deadline) -> Result<UnixStream, Trouble> {
    off_thread(deadline, move || UnixStream::connect(path))
}

/// TLS with `config` (see `tls`); the handshake runs on the timed socket.
fn tls(
    host: &str,
    socket: Timed<TcpStream>,
    config: Arc<rustls::ClientConfig>,
) -> Result<Tls, Trouble> {
    let failed = |err: &dyn std::fmt::Display| Trouble::Other(format!("TLS: {err}"));
    let name =
        rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|err| failed(&err))?;
    let connection = rustls::ClientConnection::new(config, name).map_err(|err| failed(&err))?;
    Ok(rustls::StreamOwned::new(connection, socket))
}

#[cfg(test)]
#[allow(clippy::print_stderr)] // a test that cannot run here says why
mod tests {
    use super::*;
    use std::net::TcpListener;

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
        let info = super::super::url::parse(&format!("redis://127.0.0.1:{port}/0")).unwrap();
        (info, server)
    }

    #[test]
    fn a_pause_never_outlasts_the_deadline() {
        let second = Duration::from_secs(1);
        let deadline = Deadline::new(Duration::from_millis(100), Patience::default());
        assert!(deadline.clamp(second) <= Duration::from_millis(100));
        assert_eq!(deadline.clamp(Duration::ZERO), Duration::ZERO);
        let spent = Deadline::new(Duration::ZERO, Patience::default());
        assert_eq!(spent.clamp(second), Duration::ZERO);
        let unlimited = Deadline {
            started: Instant::now(),
            end: None,
            by_run: false,
            signals: false,
        };
        assert_eq!(unlimited.clamp(second), second);
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

    fn run(program: &str, args: &[&str], dir: &std::path::Path) -> bool {
        std::process::Command::new(program)
            .args(args)
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    }

    /// The whole TLS path against a real `redis-server --tls-port`, with a
    /// certificate authority of the test's own (which neither the webpki
    /// roots nor the system's store contain).
    #[test]
    fn tls_to_a_real_server_works_and_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(
            d.join("leaf.ext"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        let made = run(
            "openssl",
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                "/CN=retry test CA",
            ],
            d,
        ) && run(
            "openssl",
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "leaf.key",
                "-out",
                "leaf.csr",
                "-subj",
                "/CN=localhost",
            ],
            d,
        ) && run(
            "openssl",
            &[
                "x509",
                "-req",
                "-in",
                "leaf.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "leaf.pem",
                "-days",
                "2",
                "-extfile",
                "leaf.ext",
            ],
            d,
        ) && run(
            "openssl",
            &["x509", "-in", "ca.pem", "-outform", "der", "-out", "ca.der"],
            d,
        );
        if !made {
            eprintln!("SKIPPED: no openssl to make test certificates");
            return;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let Ok(mut server) = std::process::Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--tls-port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .args(["--tls-cert-file", "leaf.pem", "--tls-key-file", "leaf.key"])
            .args([
                "--tls-auth-clients",
                "no",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .current_dir(d)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
        else {
            eprintln!("SKIPPED: no redis-server");
            return;
        };
        let end = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > end || server.try_wait().unwrap().is_some() {
                let _ = server.kill();
                eprintln!("SKIPPED: redis-server without TLS support");
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let trusting = Trust::new(vec![std::fs::read(d.join("ca.der")).unwrap().into()]);
        let info = |url: String| super::super::url::parse(&url).unwrap();
        let deadline = Deadline::new(Duration::from_secs(5), Patience::default());
        let result = Connection::open(
            &info(format!("rediss://localhost:{port}/1")),
            &deadline,
            &trusting,
        )
        .and_then(|mut connection| {
            connection.send(&[vec![b"PING"]])?;
            connection.read()
        });
        // Not trusted by the webpki roots and the system's: refused, in one line.
        let untrusted = Connection::open(
            &info(format!("rediss://localhost:{port}/0")),
            &deadline,
            &Trust::default(),
        )
        .and_then(|mut connection| {
            connection.send(&[vec![b"PING"]])?;
            connection.read()
        });
        let _ = server.kill();
        let _ = server.wait();
        assert_eq!(result.unwrap(), Reply::Status("PONG".into()));
        match untrusted {
            Err(Trouble::Other(why)) => {
                assert!(why.contains("certificate") && !why.contains('\n'), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_silent_tls_handshake_ends_at_the_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let held = listener.accept();
            std::thread::sleep(Duration::from_secs(2));
            drop(held);
        });
        let info = super::super::url::parse(&format!("rediss://localhost:{port}/0")).unwrap();
        let started = Instant::now();
        // The handshake happens with the first command.
        let result = Connection::open(
            &info,
            &Deadline::new(Duration::from_millis(300), Patience::default()),
            &Trust::default(),
        )
        .and_then(|mut connection| {
            connection.send(&[vec![b"PING"]])?;
            connection.read()
        });
        assert!(matches!(result, Err(Trouble::TimedOut)), "{result:?}");
        assert!(started.elapsed() < Duration::from_millis(1200));
        server.join().unwrap();
    }
}
