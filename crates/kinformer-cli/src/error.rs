//! The CLI's errors: every failure a user can cause, with a message that says what to do.

/// Everything that makes a `kinformer` command fail (the process then exits non-zero).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The resource name matches nothing known.
    #[error("unknown resource {name:?}; did you mean {}? (or give group/version/plural for any other resource)", suggestions.join(", "))]
    UnknownResource {
        /// What the user typed.
        name: String,
        /// The closest known names (edit distance), best first.
        suggestions: Vec<String>,
    },
    /// `group/version/plural` that the server does not serve.
    #[error("the server does not serve {0}")]
    NotServed(String),
    /// No kubeconfig and no in-cluster configuration.
    #[error(
        "no kubeconfig found ({0}); point KUBECONFIG at one, or pass --embedded to start an in-process API server"
    )]
    NoKubeconfig(String),
    /// The kubeconfig names a server that cannot be reached.
    #[error("cannot reach the API server at {url}: {reason}")]
    Unreachable {
        /// The server address from the kubeconfig.
        url: String,
        /// Why (the innermost error).
        reason: String,
    },
    /// The embedded server did not start.
    #[error("the embedded API server did not start: {0}")]
    Embedded(String),
    /// A kube client error.
    #[error("kube: {0}")]
    Kube(String),
    /// The informer failed.
    #[error("informer: {0}")]
    Informer(#[from] kinformer::InformerError),
    /// Writing a file failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The demo did not converge; the message lists what differed.
    #[error("the demo did not converge:\n{0}")]
    NotConverged(String),
}

/// An error with its chain of causes (`outer: inner: innermost`), for messages that should
/// say *why*.
pub fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msgs = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(c) = cur {
        let s = c.to_string();
        if msgs.iter().all(|m| !m.contains(&s)) {
            msgs.push(s);
        }
        cur = c.source();
    }
    msgs.join(": ")
}
