//! Whom a `rediss://` connection trusts: the public web roots
//! (webpki-roots, built in, so a container without a CA bundle still
//! reaches a server with a public certificate), the system's trust store,
//! and the CA certificates of `--state-ca` (or `RETRY_STATE_CA`).
//!
//! The system store comes from `rustls-native-certs`, the rustls project's
//! own reader of it (pure Rust here): it finds the distribution's bundle
//! (`/etc/ssl/certs/ca-certificates.crt` on Debian, and the other usual
//! places) and honours `SSL_CERT_FILE` and `SSL_CERT_DIR`, as OpenSSL does,
//! so a private CA the administrator installed system-wide is trusted with
//! no flag at all. Reading it takes a few milliseconds, so it is read at
//! the first `rediss://` connection of a store, never for `redis://`.

use std::io::Read;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// One certificate, DER-encoded.
pub(crate) type Certificate = CertificateDer<'static>;

/// The most a CA file may hold: far more than any bundle (Debian's whole
/// system bundle is about 220 KB).
const MAX_CA_BYTES: u64 = 16 << 20;

/// `path` opened for reading, followed through symlinks (CA bundles are
/// often links), when it is a regular file. Opened without blocking, so a
/// FIFO with no writer cannot hold retry before anything runs.
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use crate::sys::fs::{Mode, OFlags};
    let file = std::fs::File::from(crate::sys::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?);
    let kind = crate::safe_fs::Kind::of(file.metadata()?.file_type());
    if kind != crate::safe_fs::Kind::Regular {
        return Err(std::io::Error::other(format!(
            "{}, not a regular file",
            kind.described()
        )));
    }
    Ok(file)
}

/// The certificates of the PEM file at `path`, each usable as a trust
/// anchor. The error says why not in a few words (the caller names the
/// flag or variable and the file).
pub(crate) fn read_ca(path: &Path) -> Result<Vec<Certificate>, String> {
    let mut pem = Vec::new();
    open_regular(path)
        .and_then(|file| file.take(MAX_CA_BYTES + 1).read_to_end(&mut pem))
        .map_err(|err| format!("cannot read it ({err})"))?;
    if pem.len() as u64 > MAX_CA_BYTES {
        return Err(format!(
            "more than {} MiB: not a file of CA certificates",
            MAX_CA_BYTES >> 20
        ));
    }
    let certificates = Certificate::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| format!("not PEM ({err})"))?;
    if certificates.is_empty() {
        return Err(
            "no certificate in it (PEM, '-----BEGIN CERTIFICATE-----' blocks, is expected)".into(),
        );
    }
    let mut roots = rustls::RootCertStore::empty();
    for (n, certificate) in certificates.iter().enumerate() {
        roots.add(certificate.clone()).map_err(|err| {
            format!(
                "certificate {} of {} is not usable as a CA ({err})",
                n + 1,
                certificates.len()
            )
        })?;
    }
    Ok(certificates)
}

/// The TLS settings of one store, made once, at its first `rediss://`
/// connection.
#[derive(Debug, Default)]
pub(crate) struct Trust {
    extra: Vec<Certificate>,
    config: OnceLock<Arc<rustls::ClientConfig>>,
}

impl Trust {
    /// Trust `extra` besides the web roots and the system's store.
    pub(crate) fn new(extra: Vec<Certificate>) -> Trust {
        Trust {
            extra,
            config: OnceLock::new(),
        }
    }

    /// The client settings: no client certificate, the server's checked
    /// against every root above.
    pub(super) fn config(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        if let Some(config) = self.config.get() {
            return Ok(config.clone());
        }
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        // A store that is missing or partly unreadable adds what it can:
        // the other roots still apply.
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        for certificate in &self.extra {
            // Checked when the file was read: cannot fail here.
            roots
                .add(certificate.clone())
                .map_err(|err| format!("--state-ca: {err}"))?;
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|err| err.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(self.config.get_or_init(|| Arc::new(config)).clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(contents: &[u8]) -> Result<Vec<Certificate>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, contents).unwrap();
        read_ca(&path)
    }

    #[test]
    fn a_missing_empty_or_non_pem_file_is_refused_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_ca(&dir.path().join("missing.pem")).unwrap_err();
        assert!(err.starts_with("cannot read it ("), "{err}");
        let err = read_ca(dir.path()).unwrap_err();
        assert!(err.starts_with("cannot read it ("), "{err}");
        for contents in [
            &b""[..],
            b"hello\n",
            b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        ] {
            let err = read(contents).unwrap_err();
            assert!(err.starts_with("no certificate in it"), "{err}");
        }
        let err =
            read(b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n").unwrap_err();
        assert!(err.starts_with("not PEM ("), "{err}");
        let err =
            read(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").unwrap_err();
        assert!(
            err.starts_with("certificate 1 of 1 is not usable as a CA"),
            "{err}"
        );
    }

    /// A CA of the test's own, made by openssl (`None`: no openssl here).
    fn made_ca(dir: &Path, name: &str) -> Option<Vec<u8>> {
        let path = dir.join(name);
        let made = std::process::Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            ])
            .args(["-subj", &format!("/CN={name}"), "-keyout"])
            .arg(dir.join(format!("{name}.key")))
            .arg("-out")
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        made.then(|| std::fs::read(path).unwrap())
    }

    #[test]
    #[allow(clippy::print_stderr)] // a test that cannot run here says why
    fn every_certificate_of_a_bundle_is_read_and_other_blocks_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let (Some(one), Some(two)) = (made_ca(dir.path(), "one"), made_ca(dir.path(), "two"))
        else {
            eprintln!("SKIPPED: no openssl to make test certificates");
            return;
        };
        let key = std::fs::read(dir.path().join("one.key")).unwrap();
        let bundle = [&b"a comment\n"[..], &one, &key, &two].concat();
        assert_eq!(read(&bundle).unwrap().len(), 2);
        let trust = Trust::new(read(&bundle).unwrap());
        assert!(trust.config().is_ok());
    }

    #[test]
    fn the_settings_are_made_once() {
        let trust = Trust::new(Vec::new());
        let first = trust.config().unwrap();
        let second = trust.config().unwrap();
        assert!(Arc::ptr_eq(&first, &second));
    }
}
