//! Index functions: how an [`Indexer`](super::Indexer) computes the values an object is filed
//! under in a named index (client-go's `IndexFunc`, `Indexers`, `MetaNamespaceIndexFunc`).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::object::Object;

/// The name of the built-in namespace index, client-go's `NamespaceIndex`.
///
/// Listers answer namespaced queries through the index of this name when the Indexer has one,
/// and assume it files every object under its namespace (as [`namespace_index_func`] does).
pub const NAMESPACE_INDEX: &str = "namespace";

/// Computes the indexed values of an object for one index (client-go's `IndexFunc`).
///
/// An object may be filed under any number of values, including none. Duplicate values are
/// harmless (they are collapsed). The function must be deterministic for a given object, must be
/// cheap (it runs while the Indexer's write lock is held) and must not call back into the
/// Indexer (that would deadlock).
///
/// A failure is reported as an [`IndexFuncError`]; the write that needed the value then fails
/// with [`StoreError::IndexFunc`](super::StoreError::IndexFunc) and changes nothing.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::{IndexFunc, IndexFuncError};
///
/// // Pods by the node they run on; unscheduled pods are an error here.
/// let by_node: IndexFunc<Pod> = Arc::new(|pod: &Pod| {
///     pod.spec
///         .as_ref()
///         .and_then(|s| s.node_name.clone())
///         .map(|node| vec![node])
///         .ok_or_else(|| IndexFuncError::new("pod is not scheduled"))
/// });
/// assert!(by_node(&Pod::default()).is_err());
/// ```
pub type IndexFunc<K> = Arc<dyn Fn(&K) -> Result<Vec<String>, IndexFuncError> + Send + Sync>;

/// Index functions by index name (client-go's `Indexers`).
pub type Indexers<K> = HashMap<String, IndexFunc<K>>;

/// Why an index function could not compute an object's indexed values.
///
/// Build one from any message: `IndexFuncError::new("no owner")`, or `"no owner".into()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFuncError {
    message: String,
}

impl IndexFuncError {
    /// An error carrying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message the index function gave.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for IndexFuncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for IndexFuncError {}

impl From<String> for IndexFuncError {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

impl From<&str> for IndexFuncError {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

/// client-go's `MetaNamespaceIndexFunc`: files every object under its namespace (`""` for
/// cluster-scoped objects). Register it under [`NAMESPACE_INDEX`].
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::api::ObjectMeta;
/// let pod = Pod { metadata: ObjectMeta { namespace: Some("prod".into()), ..Default::default() }, ..Default::default() };
/// let by_namespace = kinformer::store::namespace_index_func::<Pod>();
/// assert_eq!(by_namespace(&pod).unwrap(), vec!["prod".to_string()]);
/// ```
pub fn namespace_index_func<K: Object>() -> IndexFunc<K> {
    Arc::new(|obj: &K| Ok(vec![obj.meta().namespace.clone().unwrap_or_default()]))
}

/// The [`Indexers`] holding only the namespace index, what most informers are built with.
pub fn namespace_indexers<K: Object>() -> Indexers<K> {
    let mut indexers = Indexers::new();
    indexers.insert(NAMESPACE_INDEX.to_owned(), namespace_index_func());
    indexers
}
