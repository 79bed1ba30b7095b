//! The byte stream to the server: a TCP connection (with TLS on top for
//! `rediss://`) or a Unix socket, made and then read and written within
//! the [`Deadline`]. A name lookup or a Unix socket's connect, which take
//! no timeout, run on a helper thread that is waited for until then.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use super::deadline::Deadline;
use super::trouble::Trouble;
use crate::sys::net::UnixStream;

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
pub(super) struct Timed<S> {
    pub(super) socket: S,
    pub(super) deadline: Deadline,
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

pub(super) type Tls = rustls::StreamOwned<rustls::ClientConnection, Timed<TcpStream>>;

/// The stream to the server, of whichever kind the URL names.
pub(super) enum Stream {
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

pub(super) fn tcp(host: &str, port: u16, deadline: &Deadline) -> Result<TcpStream, Trouble> {
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

pub(super) fn unix(path: PathBuf, deadline: &Deadline) -> Result<UnixStream, Trouble> {
    off_thread(deadline, move || UnixStream::connect(path))
}

/// TLS with `config` (see `tls`); the handshake runs on the timed socket.
pub(super) fn tls(
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
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    use super::super::{Connection, Deadline, Reply, Trouble};
    use super::TcpStream;
    use crate::state::redis::tls::Trust;
    use crate::state::store::Patience;

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
    #[allow(clippy::too_many_lines, reason = "a table of hostile replies")]
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
        let info = |url: String| crate::state::redis::url::parse(&url).unwrap();
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
        let info =
            crate::state::redis::url::parse(&format!("rediss://localhost:{port}/0")).unwrap();
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
