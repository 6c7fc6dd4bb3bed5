//! Calling a webhook: an HTTPS POST of its `AdmissionReview` to its `clientConfig.url`, or to
//! its `clientConfig.service` reached through the Service's endpoints (as kube-apiserver with
//! `--enable-aggregator-routing` reaches it; the test cluster's Service addresses lead
//! nowhere), the server's certificate checked against `caBundle` (the system's roots without
//! one) for the URL's host, or `<service>.<namespace>.svc`. One client per server and CA,
//! kept (connections are reused, as kube-apiserver's webhook client cache keeps them).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_rustls::{FixedServerNameResolver, HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use parking_lot::Mutex;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

use super::{Hook, MAX_ANSWER_BYTES, trust};

/// A kept webhook client (HTTP/1.1 over TLS; connections reused).
type WebhookClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Where a webhook is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// `https://host:port`.
    pub base: String,
    /// The path (and query) posted to.
    pub path: String,
    /// The name its certificate must be for, when not the URL's host (a Service's).
    pub server_name: Option<String>,
}

impl Endpoint {
    /// The endpoint of a `clientConfig.url`.
    pub(crate) fn of_url(url: &str) -> Result<Self, String> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| format!("invalid url {url:?}: {e}"))?;
        if uri.scheme_str() != Some("https") {
            return Err(format!(
                "invalid url {url:?}: 'https' is the only allowed URL scheme"
            ));
        }
        let authority = uri
            .authority()
            .ok_or_else(|| format!("invalid url {url:?}: no host"))?;
        Ok(Endpoint {
            base: format!("https://{authority}"),
            path: uri
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or_else(|| "/".into()),
            server_name: None,
        })
    }

    /// The URL posted to, as kube-apiserver's client shows it (with `?timeout=`).
    pub(crate) fn url(&self, timeout: Duration) -> String {
        let sep = if self.path.contains('?') { '&' } else { '?' };
        format!(
            "{}{}{sep}timeout={}s",
            self.base,
            self.path,
            timeout.as_secs()
        )
    }
}

/// The PEM certificates of a webhook's `clientConfig.caBundle` (base64), `None` when it has
/// none or it is not base64.
pub(crate) fn ca_bundle(client_config: &serde_json::Value) -> Option<Vec<u8>> {
    use base64::Engine;
    let b64 = client_config.get("caBundle")?.as_str()?;
    base64::engine::general_purpose::STANDARD.decode(b64).ok()
}

/// What a client is kept by: the server (`https://host:port`), the CA bundle and the name
/// the certificate must be for.
type ClientKey = (String, Vec<u8>, Option<String>);

/// The webhook clients, by server, CA and server name.
#[derive(Default)]
pub(crate) struct Clients {
    cache: Mutex<HashMap<ClientKey, WebhookClient>>,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients")
            .field("servers", &self.cache.lock().len())
            .finish()
    }
}

/// The longest list of servers kept; past it the cache starts again.
const MAX_CLIENTS: usize = 64;

impl Clients {
    fn client(&self, ca: &[u8], at: &Endpoint) -> Result<WebhookClient, String> {
        let ca = ca.to_vec();
        let key = (at.base.clone(), ca.clone(), at.server_name.clone());
        if let Some(c) = self.cache.lock().get(&key) {
            return Ok(c.clone());
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = if ca.is_empty() {
            HttpsConnectorBuilder::new()
                .with_provider_and_native_roots(provider)
                .map_err(|e| format!("unable to load the system's root certificates: {e}"))?
        } else {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&ca)
                .collect::<Result<_, _>>()
                .map_err(|e| format!("unable to load root certificates: {e}"))?;
            if certs.is_empty() {
                return Err("unable to load root certificates: no certificate in caBundle".into());
            }
            HttpsConnectorBuilder::new().with_tls_config(trust::client_config(provider, certs)?)
        };
        let mut tls = tls.https_only();
        if let Some(name) = &at.server_name {
            let name = ServerName::try_from(name.clone())
                .map_err(|e| format!("invalid server name {name:?}: {e}"))?;
            tls = tls.with_server_name_resolver(FixedServerNameResolver::new(name));
        }
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_connect_timeout(Some(Duration::from_secs(30)));
        let client =
            Client::builder(TokioExecutor::new()).build(tls.enable_http1().wrap_connector(tcp));
        let mut cache = self.cache.lock();
        if cache.len() >= MAX_CLIENTS {
            cache.clear();
        }
        cache.insert(key, client.clone());
        Ok(client)
    }

    /// Posts `body` to `hook` at `at`; its answer's bytes, or why there is none (in
    /// kube-apiserver's words: `failed to call webhook: ...`).
    pub(crate) async fn post(
        &self,
        hook: &Hook,
        at: &Endpoint,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, String> {
        let ca = hook.ca_bundle().unwrap_or_default();
        self.post_to(&ca, hook.timeout(), at, body)
            .await
            .map_err(|why| format!("failed to call webhook: {why}"))
    }

    /// Posts `body` to `at` (its certificate checked against the PEM `ca`, the system's roots
    /// when empty), waiting at most `timeout`; the answer's bytes, or why there is none (as Go's
    /// HTTP client words it: `Post "<url>": ...`).
    pub(crate) async fn post_to(
        &self,
        ca: &[u8],
        timeout: Duration,
        at: &Endpoint,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, String> {
        let url = at.url(timeout);
        let failed = |why: String| format!("Post \"{url}\": {why}");
        let client = self.client(ca, at).map_err(failed)?;
        let request = http::Request::post(url.as_str())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, */*")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| failed(e.to_string()))?;
        let call = async {
            let response = client.request(request).await.map_err(|e| words(&e, at))?;
            let status = response.status();
            let bytes = http_body_util::Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            if !status.is_success() {
                return Err(format!(
                    "the server responded with the status code {} but did not return more information",
                    status.as_u16()
                ));
            }
            Ok(bytes.to_vec())
        };
        match tokio::time::timeout(timeout, call).await {
            Ok(r) => r.map_err(failed),
            Err(_) => Err(failed("context deadline exceeded".into())),
        }
    }
}

/// A refused server certificate as Go's TLS client words it (`tls: failed to verify
/// certificate: x509: ...`) where the cause is one Go names the same way; rustls's words
/// otherwise.
fn tls_words(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    let x509 = match e {
        rustls::Error::InvalidCertificate(C::UnknownIssuer) => {
            "certificate signed by unknown authority".to_string()
        }
        rustls::Error::InvalidCertificate(C::ExpiredContext { time, not_after }) => format!(
            "certificate has expired or is not yet valid: current time {} is after {}",
            rfc3339(time),
            rfc3339(not_after)
        ),
        rustls::Error::InvalidCertificate(C::NotValidYetContext { time, not_before }) => format!(
            "certificate has expired or is not yet valid: current time {} is before {}",
            rfc3339(time),
            rfc3339(not_before)
        ),
        other => return format!("tls: {other}"),
    };
    format!("tls: failed to verify certificate: x509: {x509}")
}

/// A certificate time as Go's `time.RFC3339` prints it in UTC.
fn rfc3339(t: &rustls::pki_types::UnixTime) -> String {
    let seconds = i64::try_from(t.as_secs()).unwrap_or(i64::MAX);
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|_| seconds.to_string())
}

/// A transport error as Go's HTTP client words the common ones (`dial tcp <address>:
/// connect: connection refused`).
fn words(e: &hyper_util::client::legacy::Error, at: &Endpoint) -> String {
    let address = at.base.trim_start_matches("https://");
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(tls) = s.downcast_ref::<rustls::Error>() {
            return tls_words(tls);
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    return format!("dial tcp {address}: connect: connection refused");
                }
                std::io::ErrorKind::ConnectionReset => {
                    return format!("read tcp {address}: read: connection reset by peer");
                }
                _ => {}
            }
            // an io::Error's `source` is its inner error's source: the inner error itself (a
            // TLS failure wrapped by the connector) is reached through `get_ref`
            if let Some(inner) = io.get_ref() {
                source = Some(inner);
                continue;
            }
        }
        source = s.source();
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}
