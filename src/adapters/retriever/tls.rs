//! TLS for the pgvector retriever with rustls (no OpenSSL): libpq's `sslmode` and
//! `sslrootcert`, which tokio-postgres does not read itself, taken out of the DSN and turned
//! into a rustls client configuration.
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | - |
//! | `prefer` (default) | when the server offers it | not checked (as libpq) |
//! | `require` | always | not checked, unless `sslrootcert` is given (then as `verify-ca`) |
//! | `verify-ca` | always | signed by `sslrootcert` (else the Mozilla roots) |
//! | `verify-full` | always | as `verify-ca`, and issued for the host connected to |

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// A DSN with `sslmode` and `sslrootcert` taken out: what tokio-postgres reads, and the TLS
/// the connection asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// The DSN for tokio-postgres (`sslmode` as it knows it: disable, prefer or require).
    pub dsn: String,
    pub mode: Mode,
    pub root_cert: Option<PathBuf>,
}

/// Take `sslmode` and `sslrootcert` out of a URL (`postgresql://...?sslmode=verify-full`) or a
/// key-value DSN (`host=... sslmode=verify-full`). Errors name the parameter, never the DSN.
pub fn split(dsn: &str) -> Result<Split, String> {
    let url = dsn.starts_with("postgresql://") || dsn.starts_with("postgres://");
    let mut mode = None;
    let mut root_cert = None;
    let mut take = |key: &str, value: &str| -> Result<bool, String> {
        match key {
            "sslmode" => {
                mode = Some(match value {
                    "disable" => Mode::Disable,
                    "allow" | "prefer" => Mode::Prefer,
                    "require" => Mode::Require,
                    "verify-ca" => Mode::VerifyCa,
                    "verify-full" => Mode::VerifyFull,
                    other => return Err(format!(
                        "`sslmode={other}` is not one of disable, allow, prefer, require, verify-ca, verify-full"
                    )),
                });
                Ok(true)
            }
            "sslrootcert" => {
                root_cert = Some(PathBuf::from(value));
                Ok(true)
            }
            _ => Ok(false),
        }
    };
    let rest = if url {
        let (base, query) = dsn.split_once('?').unwrap_or((dsn, ""));
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if !take(k, &percent_decode(v))? {
                kept.push(pair);
            }
        }
        if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        }
    } else {
        let mut kept = Vec::new();
        for token in dsn.split_whitespace() {
            let (k, v) = token.split_once('=').unwrap_or((token, ""));
            if !take(k.trim(), v.trim_matches('\''))? {
                kept.push(token);
            }
        }
        kept.join(" ")
    };
    let mode = mode.unwrap_or(Mode::Prefer);
    let mode = match (mode, &root_cert) {
        // libpq: `require` with a root certificate verifies the chain.
        (Mode::Require, Some(_)) => Mode::VerifyCa,
        (m, _) => m,
    };
    let theirs = match mode {
        Mode::Disable => "disable",
        Mode::Prefer => "prefer",
        _ => "require",
    };
    let sep = if !url {
        " "
    } else if rest.contains('?') {
        "&"
    } else {
        "?"
    };
    Ok(Split {
        dsn: format!("{rest}{sep}sslmode={theirs}"),
        mode,
        root_cert,
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The rustls configuration for `mode`; `None` for `disable`.
pub fn client_config(s: &Split) -> Result<Option<ClientConfig>, String> {
    if s.mode == Mode::Disable {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?;
    let algorithms = provider.signature_verification_algorithms;
    let verifier: Arc<dyn ServerCertVerifier> = match s.mode {
        Mode::Disable | Mode::Prefer | Mode::Require => Arc::new(Lenient {
            chain: None,
            algorithms,
        }),
        Mode::VerifyCa | Mode::VerifyFull => {
            let roots = Arc::new(roots(s.root_cert.as_deref())?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| format!("cannot use `sslrootcert`: {e}"))?;
            if s.mode == Mode::VerifyFull {
                webpki
            } else {
                Arc::new(Lenient {
                    chain: Some(webpki),
                    algorithms,
                })
            }
        }
    };
    Ok(Some(
        builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth(),
    ))
}

/// The certificates of `sslrootcert` (PEM), else the Mozilla roots.
fn roots(file: Option<&std::path::Path>) -> Result<RootCertStore, String> {
    let Some(file) = file else {
        return Ok(RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        });
    };
    let shown = file.display();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(file)
        .map_err(|e| format!("cannot read `sslrootcert` `{shown}`: {e}"))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("cannot read `sslrootcert` `{shown}`: {e}"))?;
    if certs.is_empty() {
        return Err(format!("`sslrootcert` `{shown}` holds no PEM certificate"));
    }
    let mut store = RootCertStore::empty();
    let (_, bad) = store.add_parsable_certificates(certs);
    if store.is_empty() {
        return Err(format!(
            "`sslrootcert` `{shown}`: none of its {bad} certificates can be used"
        ));
    }
    Ok(store)
}

/// The server's certificate as `prefer`, `require` (`chain: None`: not checked, libpq's meaning
/// of these modes) and `verify-ca` (`chain`: it must lead to a trusted root, but the name it was
/// issued for is not compared with the host) check it. The handshake signatures are checked in
/// every mode, with the provider's algorithms (those `chain` was built with).
#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<WebPkiServerVerifier>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_leave_the_dsn_for_tokio_postgres() {
        let s = split("postgresql://u:pw@h:5/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&application_name=x").unwrap();
        assert_eq!(
            s,
            Split {
                dsn: "postgresql://u:pw@h:5/db?application_name=x&sslmode=require".into(),
                mode: Mode::VerifyFull,
                root_cert: Some("/tmp/ca.pem".into()),
            }
        );
        let s = split("host=h dbname=db sslmode=require sslrootcert=/ca.pem").unwrap();
        assert_eq!(s.dsn, "host=h dbname=db sslmode=require");
        assert_eq!(
            s.mode,
            Mode::VerifyCa,
            "require with a root certificate verifies"
        );
        let s = split("postgresql://h/db").unwrap();
        assert_eq!(
            (s.dsn.as_str(), s.mode),
            ("postgresql://h/db?sslmode=prefer", Mode::Prefer)
        );
        assert_eq!(
            split("postgresql://h/db?sslmode=disable").unwrap().mode,
            Mode::Disable
        );
        assert_eq!(
            split("postgresql://h/db?sslmode=maybe"),
            Err("`sslmode=maybe` is not one of disable, allow, prefer, require, verify-ca, verify-full".into())
        );
    }

    #[test]
    fn a_missing_root_certificate_is_named() {
        let s =
            split("postgresql://h/db?sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem").unwrap();
        let err = client_config(&s).unwrap_err();
        assert!(
            err.starts_with("cannot read `sslrootcert` `/nonexistent/ca.pem`: "),
            "{err}"
        );
        assert!(
            client_config(&split("postgresql://h/db?sslmode=disable").unwrap())
                .unwrap()
                .is_none()
        );
    }
}
