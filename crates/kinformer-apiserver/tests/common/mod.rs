//! Test helpers: a raw HTTP/1.1 client (so tests see exact codes, headers and bytes) and a
//! streaming watch reader.
#![allow(dead_code)]

pub mod tls_server;

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// A raw response.
#[derive(Debug)]
pub struct Resp {
    pub code: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

async fn read_head(r: &mut BufReader<TcpStream>) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    r.read_line(&mut line).await.unwrap();
    let code: u16 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).await.unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    (code, headers)
}

async fn read_chunk(r: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut line = String::new();
    if r.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let size = usize::from_str_radix(line.trim(), 16).ok()?;
    let mut buf = vec![0; size + 2];
    r.read_exact(&mut buf).await.ok()?;
    buf.truncate(size);
    if size == 0 { None } else { Some(buf) }
}

/// Sends one request (Connection: close) and reads the whole response.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    ct: Option<&str>,
    body: &[u8],
) -> Resp {
    request_with_headers(addr, method, path, ct, &[], body).await
}

/// [`request`] with extra headers (e.g. `User-Agent`).
pub async fn request_with_headers(
    addr: SocketAddr,
    method: &str,
    path: &str,
    ct: Option<&str>,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Resp {
    let s = TcpStream::connect(addr).await.unwrap();
    let mut r = BufReader::new(s);
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(ct) = ct {
        head.push_str(&format!("Content-Type: {ct}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    r.get_mut().write_all(head.as_bytes()).await.unwrap();
    // The server may answer (413) before reading everything.
    let _ = r.get_mut().write_all(body).await;
    let (code, headers) = read_head(&mut r).await;
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let mut out = Vec::new();
    if chunked {
        while let Some(c) = read_chunk(&mut r).await {
            out.extend_from_slice(&c);
        }
    } else {
        r.read_to_end(&mut out).await.unwrap();
    }
    Resp {
        code,
        headers,
        body: out,
    }
}

pub async fn get(addr: SocketAddr, path: &str) -> Resp {
    request(addr, "GET", path, None, b"").await
}

pub async fn post(addr: SocketAddr, path: &str, body: &Value) -> Resp {
    request(
        addr,
        "POST",
        path,
        Some("application/json"),
        body.to_string().as_bytes(),
    )
    .await
}

pub async fn put(addr: SocketAddr, path: &str, body: &Value) -> Resp {
    request(
        addr,
        "PUT",
        path,
        Some("application/json"),
        body.to_string().as_bytes(),
    )
    .await
}

/// A watch response being read event by event.
pub struct WatchStream {
    pub code: u16,
    r: BufReader<TcpStream>,
    pending: Vec<u8>,
    ended: bool,
}

pub async fn watch(addr: SocketAddr, path: &str) -> WatchStream {
    let s = TcpStream::connect(addr).await.unwrap();
    let mut r = BufReader::new(s);
    let head = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    r.get_mut().write_all(head.as_bytes()).await.unwrap();
    let (code, _) = read_head(&mut r).await;
    WatchStream {
        code,
        r,
        pending: Vec::new(),
        ended: false,
    }
}

impl WatchStream {
    /// The next event, or `None` when the stream ended.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(i) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=i).collect();
                return Some(serde_json::from_slice(&line).expect("event is JSON"));
            }
            if self.ended {
                return None;
            }
            match read_chunk(&mut self.r).await {
                Some(c) => self.pending.extend_from_slice(&c),
                None => self.ended = true,
            }
        }
    }

    /// The next event within `d` (panics on timeout).
    pub async fn next_within(&mut self, d: Duration) -> Option<Value> {
        tokio::time::timeout(d, self.next())
            .await
            .expect("timed out waiting for a watch event")
    }

    /// Whether nothing arrives within `d`.
    pub async fn quiet_for(&mut self, d: Duration) -> bool {
        tokio::time::timeout(d, self.next()).await.is_err()
    }
}

pub fn pod_json(name: &str, labels: Value) -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

/// The CRD of namespaced `widgets.example.com/v1` `Widget`s, with a schema that keeps every
/// field.
pub fn widget_crd() -> Value {
    serde_json::json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

/// Polls `path` until `pred` holds on (code, body), at most [`SECS`].
pub async fn eventually(
    addr: SocketAddr,
    path: &str,
    what: &str,
    pred: impl Fn(u16, &Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + SECS;
    loop {
        let r = get(addr, path).await;
        let v = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        if pred(r.code, &v) {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: {path} still {} {v}",
            r.code
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub const SECS: Duration = Duration::from_secs(5);

/// `s` percent-encoded for a query value (every byte outside RFC 3986's unreserved set).
pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A kube client of `s` built from its kubeconfig, with `token` instead of the server's own
/// (a TLS server) and impersonating `user` in `groups`, when given.
pub async fn kube_client(
    s: &kinformer_apiserver::RunningServer,
    token: Option<&str>,
    user: Option<&str>,
    groups: &[&str],
) -> kube::Client {
    let mut yaml = s.kubeconfig();
    if let (Some(token), Some(own)) = (token, s.token()) {
        yaml = yaml.replace(own, token);
    }
    let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    config.auth_info.impersonate = user.map(String::from);
    if !groups.is_empty() {
        config.auth_info.impersonate_groups = Some(groups.iter().map(|g| g.to_string()).collect());
    }
    kube::Client::try_from(config).unwrap()
}
