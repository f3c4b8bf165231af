//! Certificates for the tests of the collector's TLS: a private CA made in the test (no
//! openssl CLI needed) and a server certificate it signed.

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use std::path::{Path, PathBuf};

/// A CA and a server certificate it signed for `names`, as PEM files in `dir`:
/// (ca.pem, cert.pem, key.pem).
pub fn certificates(dir: &Path, names: &[&str]) -> (PathBuf, PathBuf, PathBuf) {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let server = CertificateParams::new(names)
        .unwrap()
        .signed_by(&server_key, &ca)
        .unwrap();
    let files = (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    );
    std::fs::write(&files.0, ca.pem()).unwrap();
    std::fs::write(&files.1, server.pem()).unwrap();
    std::fs::write(&files.2, server_key.serialize_pem()).unwrap();
    files
}
