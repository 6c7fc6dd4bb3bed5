//! The one error type of the store module.

use crate::object::KeyError;

use super::index_func::IndexFuncError;

/// Why a store operation failed. A failed write never changes the store or any index.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The object's key could not be computed (for example, it has no name).
    #[error("cannot compute the object's key: {0}")]
    Key(#[from] KeyError),
    /// An index function failed.
    ///
    /// client-go panics here; kinformer reports it and leaves the store exactly as it was.
    #[error("index function {index:?} failed for {key}: {source}", key = key.as_deref().unwrap_or("a query object"))]
    IndexFunc {
        /// The name of the index whose function failed.
        index: String,
        /// The key of the object being written, or `None` when the object was only a query
        /// (see [`Indexer::index`](super::Indexer::index)).
        key: Option<String>,
        /// What the index function reported.
        #[source]
        source: IndexFuncError,
    },
    /// A lean-mode cache ([`CacheMode::Lean`](super::CacheMode::Lean)) could not encode an
    /// object it was given (the write then changes nothing), or decode one it holds (when an
    /// index added later needs it).
    #[error("lean cache: {message} ({key})", key = key.as_deref().unwrap_or("a query object"))]
    Codec {
        /// The key of the object.
        key: Option<String>,
        /// What went wrong.
        message: String,
    },
    /// No index of this name is registered (client-go: "Index with name %s does not exist").
    #[error("index with name {0:?} does not exist")]
    UnknownIndex(String),
    /// [`Indexer::add_indexers`](super::Indexer::add_indexers) was given names that are already
    /// registered (client-go: "indexer conflict"). Lists the conflicting names, sorted.
    #[error("indexer conflict: {0:?} already exist")]
    IndexerConflict(Vec<String>),
}
