//! An HTTPS server for webhooks as kube-rs users run one (axum over rustls), with a certificate
//! for the given names and 127.0.0.1 signed by a CA of its own (or self-signed, or expired:
//! `Serving`).

use std::net::SocketAddr;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// A running HTTPS server.
pub struct Served {
    /// Where it listens (127.0.0.1).
    pub addr: SocketAddr,
    /// The PEM of the CA its certificate chains to.
    pub ca_pem: String,
}

impl Served {
    /// `https://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.addr.port())
    }

    /// The CA as a webhook's `clientConfig.caBundle` (base64 of the PEM).
    pub fn ca_bundle(&self) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }
}

/// An axum listener of TLS connections.
struct Tls {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
}

impl axum::serve::Listener for Tls {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else {
                continue;
            };
            if let Ok(tls) = self.acceptor.accept(tcp).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// The certificate a test webhook server serves.
pub enum Serving {
    /// For the names and 127.0.0.1, signed by a fresh CA (cert-manager's shape).
    SignedByCa,
    /// A self-signed CA certificate for the names and 127.0.0.1, served itself and given as
    /// its own CA (`openssl req -x509 -addext subjectAltName=...`: the quick-start shape).
    SelfSignedCa,
    /// Signed by a fresh CA, for the names and 127.0.0.1, and expired in 2020.
    Expired,
}

/// Serves `router` over HTTPS with a certificate for `names` (and 127.0.0.1) signed by a
/// fresh CA.
pub async fn serve(names: &[&str], router: axum::Router) -> Served {
    serve_with(Serving::SignedByCa, names, router).await
}

/// A self-signed CA certificate's parameters, named `common_name`, for `names`.
fn ca_params(common_name: &str, names: Vec<String>) -> CertificateParams {
    let mut ca = CertificateParams::new(names).unwrap();
    ca.distinguished_name.push(DnType::CommonName, common_name);
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca
}

/// Serves `router` over HTTPS with the `serving` certificate for `names` (and 127.0.0.1).
pub async fn serve_with(serving: Serving, names: &[&str], router: axum::Router) -> Served {
    let mut sans: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    sans.push("127.0.0.1".into());
    let (cert, key, ca_pem) = match serving {
        Serving::SelfSignedCa => {
            let key = KeyPair::generate().unwrap();
            let cert = ca_params("webhook", sans).self_signed(&key).unwrap();
            let pem = cert.pem();
            (cert, key, pem)
        }
        Serving::SignedByCa | Serving::Expired => {
            let ca_key = KeyPair::generate().unwrap();
            let ca = ca_params("webhook-ca", Vec::new());
            let ca_cert = ca.self_signed(&ca_key).unwrap();
            let issuer = Issuer::new(ca, ca_key);
            let key = KeyPair::generate().unwrap();
            let mut leaf = CertificateParams::new(sans).unwrap();
            leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            if matches!(serving, Serving::Expired) {
                leaf.not_before = rcgen::date_time_ymd(2019, 1, 1);
                leaf.not_after = rcgen::date_time_ymd(2020, 1, 1);
            }
            let cert = leaf.signed_by(&key, &issuer).unwrap();
            (cert, key, ca_cert.pem())
        }
    };
    let chain = vec![CertificateDer::from(cert.der().to_vec())];
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let listener = Tls {
        tcp,
        acceptor: TlsAcceptor::from(Arc::new(config)),
    };
    tokio::spawn(async move { axum::serve(listener, router).await });
    Served { addr, ca_pem }
}
