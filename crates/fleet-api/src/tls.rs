//! TLS between agents and the collector. The collector (`--tls-cert FILE --tls-key FILE`,
//! DESIGN 4.5) serves rustls on the ring provider through axum-server's rustls acceptor
//! (which bounds every handshake by a timeout, so a client that stalls mid-handshake holds
//! nothing). Its clients (the agent's sender, `hostping fleet`) trust the web PKI roots, or
//! only the CA file they are given (`--collector-ca`) for a fleet's private CA.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The certificate chain and private key, as PEM files.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The server's certificate, then any intermediates.
    pub cert: PathBuf,
    /// Its private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// Why the TLS files could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file does not read or holds no PEM item of the kind asked for.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// rustls refused the pair (a key that does not match the certificate, for instance).
    #[error("--tls-cert {cert} with --tls-key {key}: {source}")]
    Pair {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// Why.
        source: rustls::Error,
    },
}

fn file_error(path: &Path, reason: impl ToString) -> TlsError {
    TlsError::File {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// The server configuration for `files`: TLS 1.2 and 1.3, no client certificates (agents
/// prove who they are with their bearer token), HTTP/1.1 offered by ALPN.
pub fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| file_error(&files.cert, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(&files.cert, e))?;
    if certs.is_empty() {
        return Err(file_error(&files.cert, "no CERTIFICATE in the file"));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => {
            file_error(&files.key, "no PRIVATE KEY in the file")
        }
        e => file_error(&files.key, e),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let pair_error = |source| TlsError::Pair {
        cert: files.cert.clone(),
        key: files.key.clone(),
        source,
    };
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(pair_error)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(pair_error)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// What a client of the collector trusts: only the certificates of `ca` (PEM) when given,
/// else the web PKI roots. Plain http:// URLs ignore it.
pub fn client_config(ca: Option<&Path>) -> Result<ureq::tls::TlsConfig, TlsError> {
    let roots = match ca {
        None => ureq::tls::RootCerts::WebPki,
        Some(ca) => {
            let certs = CertificateDer::pem_file_iter(ca)
                .map_err(|e| file_error(ca, e))?
                .map(|c| c.map(|c| ureq::tls::Certificate::from_der(&c).to_owned()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| file_error(ca, e))?;
            if certs.is_empty() {
                return Err(file_error(ca, "no CERTIFICATE in the file"));
            }
            ureq::tls::RootCerts::new_with_certs(&certs)
        }
    };
    Ok(ureq::tls::TlsConfig::builder().root_certs(roots).build())
}
