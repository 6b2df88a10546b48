//! TLS to the store, as PostgreSQL's own clients do it: the address's `sslmode` and
//! `sslrootcert` mean what they mean to libpq, so an address copied from a managed offering's
//! console works unchanged.
//!
//! - `disable`: never encrypted.
//! - `prefer` (the default): encrypted when the server offers it, the certificate not checked.
//! - `require`: always encrypted; the certificate is checked against `sslrootcert` when one is
//!   named (as libpq does), not otherwise.
//! - `verify-ca`: encrypted, and the certificate must chain to a trusted root.
//! - `verify-full`: `verify-ca`, and the certificate must name the host.
//!
//! Trusted roots: the `sslrootcert` file (PEM), or the system's (`sslrootcert=system`, and the
//! default for the `verify-` modes when `~/.postgresql/root.crt` does not exist).

use crate::address::Address;
use crate::TeamError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::PathBuf;
use std::sync::Arc;
use tokio_postgres::config::SslMode;
use tokio_postgres::tls::MakeTlsConnect;

/// libpq's `sslmode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// Where trusted roots come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// None named: nothing is checked (`prefer`, `require`), or the default applies.
    Unnamed,
    /// The operating system's store.
    System,
    /// A PEM file.
    File(PathBuf),
}

/// The TLS part of an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    pub mode: Mode,
    pub roots: Roots,
}

/// Takes `sslmode` and `sslrootcert` out of an address, in either of libpq's forms (the client
/// library knows neither the `verify-` modes nor the root file); the rest of the address is
/// left as it was.
pub fn split_tls(address: &str) -> Result<(String, Tls), TeamError> {
    let mut parsed = Address::parse(address)?;
    let mode = match parsed.take("sslmode")?.as_deref() {
        None | Some("prefer") => Mode::Prefer,
        Some("disable" | "allow") => Mode::Disable,
        Some("require") => Mode::Require,
        Some("verify-ca") => Mode::VerifyCa,
        Some("verify-full") => Mode::VerifyFull,
        Some(other) => {
            return Err(TeamError::Url(format!(
                "sslmode={other}: use disable, prefer, require, verify-ca or verify-full"
            )))
        }
    };
    let roots = match parsed.take("sslrootcert")?.as_deref() {
        None => Roots::Unnamed,
        Some("system") => Roots::System,
        Some(path) => Roots::File(PathBuf::from(path)),
    };
    Ok((parsed.render(), Tls { mode, roots }))
}

impl Tls {
    /// What the client library is told.
    pub fn ssl_mode(&self) -> SslMode {
        match self.mode {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }

    /// The TLS configuration that checks what this mode asks for.
    pub fn client_config(&self) -> Result<rustls::ClientConfig, TeamError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = match (&self.roots, self.mode) {
            (Roots::File(path), _) => Some(roots_from_file(path)?),
            (Roots::System, Mode::Require | Mode::VerifyCa | Mode::VerifyFull) => {
                Some(system_roots()?)
            }
            (Roots::Unnamed, Mode::VerifyCa | Mode::VerifyFull) => {
                let default = std::env::var_os("HOME")
                    .map(|h| PathBuf::from(h).join(".postgresql/root.crt"))
                    .filter(|p| p.is_file());
                Some(match default {
                    Some(path) => roots_from_file(&path)?,
                    None => system_roots()?,
                })
            }
            _ => None,
        };
        let check = match roots {
            Some(roots) => Some(
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| TeamError::Tls(e.to_string()))?,
            ),
            None => None,
        };
        let verifier = Verifier {
            check,
            check_name: self.mode == Mode::VerifyFull,
            provider: provider.clone(),
        };
        Ok(rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TeamError::Tls(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth())
    }
}

/// The client library's TLS connector for our configuration. It asks for a host name even for
/// a Unix socket (which has none and is never encrypted): any valid name does there.
#[derive(Clone)]
pub struct Connector(tokio_postgres_rustls::MakeRustlsConnect);

impl Connector {
    pub fn new(config: rustls::ClientConfig) -> Connector {
        Connector(tokio_postgres_rustls::MakeRustlsConnect::new(config))
    }
}

impl<S> MakeTlsConnect<S> for Connector
where
    tokio_postgres_rustls::MakeRustlsConnect: MakeTlsConnect<S>,
{
    type Stream = <tokio_postgres_rustls::MakeRustlsConnect as MakeTlsConnect<S>>::Stream;
    type TlsConnect = <tokio_postgres_rustls::MakeRustlsConnect as MakeTlsConnect<S>>::TlsConnect;
    type Error = <tokio_postgres_rustls::MakeRustlsConnect as MakeTlsConnect<S>>::Error;

    fn make_tls_connect(&mut self, host: &str) -> Result<Self::TlsConnect, Self::Error> {
        let host = if host.is_empty() { "localhost" } else { host };
        MakeTlsConnect::<S>::make_tls_connect(&mut self.0, host)
    }
}

fn roots_from_file(path: &std::path::Path) -> Result<RootCertStore, TeamError> {
    let mut roots = RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| TeamError::Tls(format!("sslrootcert {}: {e}", path.display())))?;
    for cert in certs {
        let cert =
            cert.map_err(|e| TeamError::Tls(format!("sslrootcert {}: {e}", path.display())))?;
        roots
            .add(cert)
            .map_err(|e| TeamError::Tls(format!("sslrootcert {}: {e}", path.display())))?;
    }
    if roots.is_empty() {
        return Err(TeamError::Tls(format!(
            "sslrootcert {}: no certificate in it",
            path.display()
        )));
    }
    Ok(roots)
}

fn system_roots() -> Result<RootCertStore, TeamError> {
    let mut roots = RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(TeamError::Tls(
            "no trusted root certificate on this system: name one with sslrootcert=PATH".into(),
        ));
    }
    Ok(roots)
}

/// Checks the server's certificate as the mode asks; the handshake's signatures are always
/// checked.
#[derive(Debug)]
struct Verifier {
    /// The chain check, when the mode asks for one.
    check: Option<Arc<WebPkiServerVerifier>>,
    /// Whether the certificate must name the host (`verify-full`).
    check_name: bool,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(check) = &self.check else {
            return Ok(ServerCertVerified::assertion());
        };
        match check.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tls_options_come_out_of_the_address_and_the_rest_stays() {
        let (url, tls) = split_tls(
            "postgres://ann@db.example.com:5432/memory?sslmode=verify-full&sslrootcert=/etc/ca.pem&application_name=x",
        )
        .unwrap();
        assert_eq!(
            url,
            "postgres://ann@db.example.com:5432/memory?application_name=x"
        );
        assert_eq!(tls.mode, Mode::VerifyFull);
        assert_eq!(tls.roots, Roots::File("/etc/ca.pem".into()));
        assert_eq!(tls.ssl_mode(), SslMode::Require);

        let (url, tls) = split_tls("postgres://ann@db/memory?sslmode=require").unwrap();
        assert_eq!(url, "postgres://ann@db/memory");
        assert_eq!(tls.mode, Mode::Require);
        let (_, tls) = split_tls("postgres://ann@db/memory").unwrap();
        assert_eq!(tls.mode, Mode::Prefer);
        assert!(split_tls("postgres://ann@db/memory?sslmode=always").is_err());
    }

    #[test]
    fn a_root_file_that_holds_no_certificate_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate").unwrap();
        let tls = Tls {
            mode: Mode::VerifyFull,
            roots: Roots::File(path.clone()),
        };
        let e = tls.client_config().unwrap_err().to_string();
        assert!(e.contains("ca.pem"), "{e}");
    }
}
