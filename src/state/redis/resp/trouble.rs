//! What can go wrong in an exchange with Redis, from an I/O or TLS error
//! or a reply that is not the protocol, in words fit for one message line.

use std::io;

use crate::state::store::{Interrupted, one_line_within};

/// What went wrong in an exchange.
#[derive(Debug)]
pub(in crate::state::redis) enum Trouble {
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

impl Trouble {
    /// In a few words, a server's cut short: for a message that lists what
    /// each of several servers said.
    pub(in crate::state::redis) fn brief(&self) -> String {
        match self {
            Trouble::TimedOut => "no answer in time".into(),
            Trouble::Refused => "connection refused".into(),
            Trouble::Auth(text) => {
                format!("authentication failed ({})", one_line_within(text, 100))
            }
            Trouble::Server(text) | Trouble::Other(text) => one_line_within(text, 100),
            Trouble::Record(err) => one_line_within(&err.to_string(), 100),
            Trouble::Interrupted => "interrupted".into(),
        }
    }
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

pub(super) fn closed() -> Trouble {
    Trouble::Other("the server closed the connection".into())
}

pub(super) fn nonsense(what: &str) -> Trouble {
    Trouble::Other(format!("a reply that is not Redis protocol: {what}"))
}
