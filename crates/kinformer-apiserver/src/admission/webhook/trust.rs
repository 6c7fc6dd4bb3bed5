//! How a webhook's serving certificate is trusted: webpki's verification (the chain to a
//! `caBundle` certificate, its validity, the server name), with the one case where
//! kube-apiserver's Go client accepts what webpki refuses: a server certificate that is itself
//! in `caBundle`. Go's `crypto/x509` trusts such a certificate as a chain of its own, even when
//! it is a CA; webpki refuses a CA as an end entity (`CaUsedAsEndEntity`). A self-signed
//! certificate made with `openssl req -x509` is a CA, and quick-start webhook setups serve it
//! and put the same certificate in `caBundle`: a real cluster calls that webhook, so this one
//! does too.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, Error, RootCertStore, SignatureScheme,
};

/// The TLS client configuration of a webhook whose `caBundle` holds `bundle` (at least one
/// certificate), or why the bundle cannot be used (in kube-apiserver's words).
pub(crate) fn client_config(
    provider: Arc<CryptoProvider>,
    bundle: Vec<CertificateDer<'static>>,
) -> Result<ClientConfig, String> {
    let mut roots = RootCertStore::empty();
    for cert in &bundle {
        roots
            .add(cert.clone())
            .map_err(|e| format!("unable to load root certificates: {e}"))?;
    }
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| format!("unable to load root certificates: {e}"))?;
    let verifier = BundleVerifier { inner, bundle };
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

/// webpki's verifier over the bundle, which also accepts a server certificate found in the
/// bundle itself when webpki refused it only for being a CA.
#[derive(Debug)]
struct BundleVerifier {
    inner: Arc<WebPkiServerVerifier>,
    bundle: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for BundleVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            // webpki checks a certificate's validity period before its basic constraints, so
            // a certificate refused as a CA is within its validity period; what is left to
            // check is the name.
            Err(e) if ca_used_as_end_entity(&e) && self.in_bundle(end_entity) => {
                let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&parsed, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

impl BundleVerifier {
    fn in_bundle(&self, cert: &CertificateDer<'_>) -> bool {
        self.bundle.iter().any(|c| c.as_ref() == cert.as_ref())
    }
}

/// Whether webpki refused a certificate for being a CA presented as the server's.
fn ca_used_as_end_entity(e: &Error) -> bool {
    match e {
        Error::InvalidCertificate(CertificateError::Other(other)) => matches!(
            other.0.downcast_ref::<webpki::Error>(),
            Some(webpki::Error::CaUsedAsEndEntity)
        ),
        _ => false,
    }
}
