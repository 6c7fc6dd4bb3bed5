//! Why a report or a soak could not be made (the orchestration's, the child processes' and the
//! real tier's failures, in one type).

/// Why the report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A process could not be started or talked to.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    /// The server did not print its addresses.
    #[error("bench server did not start: {0}")]
    Server(String),
    /// A round of the restart benchmark failed.
    #[error("restart round: {0}")]
    Restart(String),
    /// A replica of the fleet benchmark failed.
    #[error("replica {0}")]
    Replica(String),
    /// The real tier failed.
    #[error(transparent)]
    Real(#[from] crate::real::RealError),
    /// A kubeconfig could not be written.
    #[error(transparent)]
    Kubeconfig(#[from] crate::kubeconfig::KubeconfigError),
}
