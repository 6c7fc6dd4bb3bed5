//! TLS and the bearer token: a CA and a serving certificate generated at start (rcgen), served
//! with rustls; a listener for axum that completes handshakes off the accept loop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;

/// A TLS handshake that takes longer than this is dropped (slow or stuck clients must not hold
/// a task forever).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What clients need to reach a TLS server: its CA and a token the server accepts.
#[derive(Clone)]
pub(crate) struct Credentials {
    /// The CA certificate (PEM) that signed the serving certificate.
    pub(crate) ca_pem: String,
    /// The bearer token the server requires.
    pub(crate) token: String,
    /// Handshakes with the serving certificate.
    pub(crate) acceptor: TlsAcceptor,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").finish_non_exhaustive()
    }
}

/// Why the certificates could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    #[error("cannot generate a certificate: {0}")]
    Rcgen(#[from] rcgen::Error),
    #[error("cannot configure TLS: {0}")]
    Rustls(#[from] rustls::Error),
}

/// A fresh CA, a serving certificate for `localhost`, `127.0.0.1` and `::1` signed by it, and a
/// random token.
pub(crate) fn generate() -> Result<Credentials, TlsError> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "kinformer-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ])?;
    params
        .distinguished_name
        .push(DnType::CommonName, "kinformer-apiserver");
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    // Python 3.13+ (VERIFY_X509_STRICT) wants the authority key identifier on the leaf.
    params.use_authority_key_identifier_extension = true;
    let cert = params.signed_by(&key, &issuer)?;

    let chain = vec![
        CertificateDer::from(cert.der().to_vec()),
        CertificateDer::from(ca_cert.der().to_vec()),
    ];
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, private)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Credentials {
        ca_pem: ca_cert.pem(),
        token: random_token(),
        acceptor: TlsAcceptor::from(Arc::new(config)),
    })
}

fn random_token() -> String {
    const HEX: &[u8] = b"0123456789abcdef";
    (0..40)
        .map(|_| HEX[rand::random_range(0..HEX.len())] as char)
        .collect()
}

/// Whether the bearer token `given` is `token`. Compares in time independent of where the
/// first difference is.
pub(crate) fn token_matches(given: &[u8], token: &str) -> bool {
    let want = token.as_bytes();
    given.len() == want.len() && given.iter().zip(want).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0
}

/// An axum listener yielding established TLS connections. Handshakes run in their own tasks
/// (with a timeout), so one slow client does not stall accepting others.
pub(crate) struct TlsListener {
    rx: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Accepts on `listener` until `shutdown` is cancelled.
    pub(crate) fn new(
        listener: TcpListener,
        local: SocketAddr,
        acceptor: TlsAcceptor,
        shutdown: CancellationToken,
    ) -> Self {
        let (tx, rx) = mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    a = listener.accept() => a,
                };
                let (tcp, addr) = match accepted {
                    Ok(x) => x,
                    Err(e) => {
                        // Out of file descriptors and the like: back off briefly, as axum does.
                        tracing::debug!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = tcp.set_nodelay(true);
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, addr)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%addr, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%addr, "TLS handshake timed out"),
                    }
                });
            }
        });
        TlsListener { rx, local }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(conn) => conn,
            // The accept loop ended (shutdown): nothing more will come.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_must_match_exactly() {
        assert!(token_matches(b"abc", "abc"));
        assert!(!token_matches(b"abd", "abc"));
        assert!(!token_matches(b"ab", "abc"));
        assert!(!token_matches(b"abcd", "abc"));
        assert!(!token_matches(b"", "abc"));
    }

    #[test]
    fn generates_a_ca_and_a_token() {
        let c = generate().unwrap();
        assert!(c.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert_eq!(c.token.len(), 40);
        assert_ne!(c.token, generate().unwrap().token);
    }
}
