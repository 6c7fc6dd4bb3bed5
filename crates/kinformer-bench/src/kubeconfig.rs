//! Every peer connects through a kubeconfig, whichever the tier: the real server's (TLS, a
//! bearer token) or one written here for the embedded server (plain HTTP), so both tiers share
//! one client code path.

use std::path::Path;

/// Why a client could not be made.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    /// The file could not be read or parsed.
    #[error("kubeconfig {path}: {message}")]
    Read {
        /// The path.
        path: String,
        /// Cause.
        message: String,
    },
    /// The configuration could not become a client.
    #[error("client: {0}")]
    Client(String),
    /// The file could not be written.
    #[error("cannot write kubeconfig {0}: {1}")]
    Write(String, std::io::Error),
}

/// The text of a kubeconfig for `server` without credentials (the embedded server in plain
/// HTTP, as the bench starts it).
pub(crate) fn plain_kubeconfig(server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: bench\n  cluster:\n    server: {server}\n\
         users:\n- name: bench\n  user: {{}}\ncontexts:\n- name: bench\n  context:\n    cluster: bench\n    user: bench\n\
         current-context: bench\n"
    )
}

/// Writes a kubeconfig for `server` (plain HTTP, no credentials) to `path`.
///
/// # Errors
/// [`KubeconfigError::Write`].
pub fn write_plain(path: &Path, server: &str) -> Result<(), KubeconfigError> {
    std::fs::write(path, plain_kubeconfig(server))
        .map_err(|e| KubeconfigError::Write(path.display().to_string(), e))
}

/// Copies the kubeconfig at `from` to `to` with every cluster's `server:` replaced by
/// `server` (the real tier's fault proxy listens on another port of the same address, so the
/// server certificate still matches).
///
/// # Errors
/// [`KubeconfigError`] when reading or writing fails.
pub(crate) fn rewrite_server(from: &Path, to: &Path, server: &str) -> Result<(), KubeconfigError> {
    let text = std::fs::read_to_string(from).map_err(|e| KubeconfigError::Read {
        path: from.display().to_string(),
        message: e.to_string(),
    })?;
    let out: String = text
        .lines()
        .map(|l| match l.find("server:") {
            Some(at) if l[..at].trim().is_empty() => format!("{}server: {server}\n", &l[..at]),
            _ => format!("{l}\n"),
        })
        .collect();
    std::fs::write(to, out).map_err(|e| KubeconfigError::Write(to.display().to_string(), e))
}

/// A kube configuration from the kubeconfig at `path` (its current context) with kube's
/// implicit 429/503/504 retries off, as the README tells users to build it.
///
/// # Errors
/// [`KubeconfigError::Read`] when the file is missing or not a kubeconfig.
pub(crate) async fn config(path: &Path) -> Result<kube::Config, KubeconfigError> {
    let read = |message: String| KubeconfigError::Read {
        path: path.display().to_string(),
        message,
    };
    let kc = kube::config::Kubeconfig::read_from(path).map_err(|e| read(e.to_string()))?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(|e| read(e.to_string()))?;
    config.default_retry = false;
    Ok(config)
}

/// A client from the kubeconfig at `path` (see [`config`]).
///
/// # Errors
/// See [`config`]; [`KubeconfigError::Client`] when the client cannot be built.
pub(crate) async fn client(path: &Path) -> Result<kube::Client, KubeconfigError> {
    let config = config(path).await?;
    kube::Client::try_from(config).map_err(|e| KubeconfigError::Client(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_plain_kubeconfig_reads_back_with_its_server_and_no_retries() {
        let dir = std::env::temp_dir().join(format!("kb-kc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("plain");
        write_plain(&path, "http://127.0.0.1:4321").unwrap();
        let c = config(&path).await.unwrap();
        assert_eq!(c.cluster_url.to_string(), "http://127.0.0.1:4321/");
        assert!(!c.default_retry);
        let moved = dir.join("moved");
        rewrite_server(&path, &moved, "http://127.0.0.1:9").unwrap();
        let c = config(&moved).await.unwrap();
        assert_eq!(c.cluster_url.to_string(), "http://127.0.0.1:9/");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_missing_kubeconfig_is_a_read_error() {
        let err = config(Path::new("/nonexistent/kubeconfig"))
            .await
            .unwrap_err();
        assert!(matches!(err, KubeconfigError::Read { .. }), "{err}");
    }
}
