//! What kinformer needs of an object: its key, its resource version, and the tombstone that
//! stands in for an object whose final state is unknown.
//!
//! This is client-go's `tools/cache` `store.go` key functions and `DeletedFinalStateUnknown`,
//! with one deliberate difference: an object without a name is a typed [`KeyError`] (client-go
//! happily produces the key `""` or `"ns/"`).

use std::fmt;
use std::sync::Arc;

use kube::Resource;

mod resource_version;
pub use resource_version::{
    ResourceVersionError, compare_resource_versions, is_comparable_resource_version,
};

/// Everything kinformer stores: any kube-rs [`Resource`] that can be shared between tasks.
///
/// This is blanket-implemented, so k8s-openapi types, `DynamicObject` and custom resources all
/// qualify without any code of yours.
pub trait Object: Resource + Clone + Send + Sync + 'static {}

impl<T: Resource + Clone + Send + Sync + 'static> Object for T {}

/// Why a key could not be computed or parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The object's `metadata.name` is absent or empty.
    #[error("object has no name (namespace {namespace:?})")]
    MissingName {
        /// The object's namespace, if it had one, to help find the culprit.
        namespace: Option<String>,
    },
    /// A key that is neither `name` nor `namespace/name`.
    #[error("unexpected key format: {0:?}")]
    Malformed(String),
}

/// A function that computes an object's key, as used by stores and queues.
pub type KeyFunc<K> = Arc<dyn Fn(&K) -> Result<String, KeyError> + Send + Sync>;

/// Builds the key for a namespace and a name: `"ns/name"`, or `"name"` when `namespace` is empty.
pub fn namespace_name_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_owned()
    } else {
        let mut key = String::with_capacity(namespace.len() + 1 + name.len());
        key.push_str(namespace);
        key.push('/');
        key.push_str(name);
        key
    }
}

/// client-go's `MetaNamespaceKeyFunc`: `"namespace/name"` for namespaced objects, `"name"` for
/// cluster-scoped ones.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::api::ObjectMeta;
/// let pod = Pod { metadata: ObjectMeta { name: Some("web".into()), namespace: Some("prod".into()), ..Default::default() }, ..Default::default() };
/// assert_eq!(kinformer::meta_namespace_key(&pod).unwrap(), "prod/web");
/// ```
///
/// # Errors
/// [`KeyError::MissingName`] when the object has no name (client-go would return a bogus key).
pub fn meta_namespace_key<K: Resource>(obj: &K) -> Result<String, KeyError> {
    let meta = obj.meta();
    let namespace = meta.namespace.as_deref().unwrap_or("");
    match meta.name.as_deref() {
        Some(name) if !name.is_empty() => Ok(namespace_name_key(namespace, name)),
        _ => Err(KeyError::MissingName {
            namespace: meta.namespace.clone().filter(|ns| !ns.is_empty()),
        }),
    }
}

/// The [`KeyFunc`] form of [`meta_namespace_key`].
pub fn meta_namespace_key_func<K: Resource + 'static>() -> KeyFunc<K> {
    Arc::new(|obj: &K| meta_namespace_key(obj))
}

/// client-go's `SplitMetaNamespaceKey`: `"name"` → `("", "name")`, `"ns/name"` → `("ns", "name")`.
///
/// ```
/// assert_eq!(kinformer::split_meta_namespace_key("ns/a").unwrap(), ("ns", "a"));
/// assert_eq!(kinformer::split_meta_namespace_key("a").unwrap(), ("", "a"));
/// assert!(kinformer::split_meta_namespace_key("a/b/c").is_err());
/// ```
///
/// # Errors
/// [`KeyError::Malformed`] for a key with more than one `/`.
pub fn split_meta_namespace_key(key: &str) -> Result<(&str, &str), KeyError> {
    let mut parts = key.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => Ok(("", name)),
        (Some(namespace), Some(name), None) => Ok((namespace, name)),
        _ => Err(KeyError::Malformed(key.to_owned())),
    }
}

/// client-go's `ExplicitKey`: a key that stands for itself, for queues of plain keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExplicitKey(pub String);

impl ExplicitKey {
    /// The key itself.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ExplicitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Stands in for an object that was deleted while the watch was disconnected, so its final state
/// is not known. It keeps client-go's name.
///
/// A relist that no longer contains a key produces one of these in a `Deleted` delta, carrying
/// the last state the client knew (`obj`), which may be absent.
#[derive(Debug)]
pub struct DeletedFinalStateUnknown<K> {
    /// The key of the deleted object.
    pub key: String,
    /// The last known state of the object, if the client had one.
    pub obj: Option<Arc<K>>,
}

impl<K> Clone for DeletedFinalStateUnknown<K> {
    fn clone(&self) -> Self {
        Self {
            key: self.key.clone(),
            obj: self.obj.clone(),
        }
    }
}

impl<K> PartialEq for DeletedFinalStateUnknown<K> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
            && match (&self.obj, &other.obj) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
    }
}

/// Either an object or a [`DeletedFinalStateUnknown`] tombstone: what a delete notification and
/// a `Deleted` delta carry (client-go passes an `interface{}` that may be either).
#[derive(Debug)]
pub enum ObjectOrTombstone<K> {
    /// The object itself.
    Object(Arc<K>),
    /// A tombstone for an object whose final state is unknown.
    Tombstone(DeletedFinalStateUnknown<K>),
}

impl<K> Clone for ObjectOrTombstone<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Object(o) => Self::Object(o.clone()),
            Self::Tombstone(t) => Self::Tombstone(t.clone()),
        }
    }
}

impl<K> PartialEq for ObjectOrTombstone<K> {
    /// Objects compare by identity (the same `Arc`), tombstones by key and object identity.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Object(a), Self::Object(b)) => Arc::ptr_eq(a, b),
            (Self::Tombstone(a), Self::Tombstone(b)) => a == b,
            _ => false,
        }
    }
}

impl<K> ObjectOrTombstone<K> {
    /// The object: the object itself, or the last known state a tombstone carries.
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            Self::Object(o) => Some(o),
            Self::Tombstone(t) => t.obj.as_ref(),
        }
    }

    /// Whether this is a tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, Self::Tombstone(_))
    }
}

impl<K: Resource> ObjectOrTombstone<K> {
    /// client-go's `DeletionHandlingMetaNamespaceKeyFunc`: a tombstone's key, or the object's
    /// [`meta_namespace_key`].
    ///
    /// # Errors
    /// [`KeyError::MissingName`] for an object without a name.
    pub fn key(&self) -> Result<String, KeyError> {
        deletion_handling_meta_namespace_key(self)
    }
}

impl<K> From<Arc<K>> for ObjectOrTombstone<K> {
    fn from(obj: Arc<K>) -> Self {
        Self::Object(obj)
    }
}

impl<K> From<DeletedFinalStateUnknown<K>> for ObjectOrTombstone<K> {
    fn from(t: DeletedFinalStateUnknown<K>) -> Self {
        Self::Tombstone(t)
    }
}

/// client-go's `DeletionHandlingMetaNamespaceKeyFunc`: unwraps tombstones to their key.
///
/// # Errors
/// [`KeyError::MissingName`] for an object without a name.
pub fn deletion_handling_meta_namespace_key<K: Resource>(
    obj: &ObjectOrTombstone<K>,
) -> Result<String, KeyError> {
    match obj {
        ObjectOrTombstone::Object(o) => meta_namespace_key(o.as_ref()),
        ObjectOrTombstone::Tombstone(t) => Ok(t.key.clone()),
    }
}

/// The object's `metadata.resourceVersion`, or `""` when it has none.
pub fn resource_version<K: Resource>(obj: &K) -> &str {
    obj.meta().resource_version.as_deref().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use kube::api::ObjectMeta;

    fn pod(ns: Option<&str>, name: Option<&str>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: name.map(Into::into),
                namespace: ns.map(Into::into),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn namespaced_and_cluster_scoped_keys() {
        assert_eq!(
            meta_namespace_key(&pod(Some("ns"), Some("a"))).unwrap(),
            "ns/a"
        );
        assert_eq!(meta_namespace_key(&pod(None, Some("a"))).unwrap(), "a");
        assert_eq!(meta_namespace_key(&pod(Some(""), Some("a"))).unwrap(), "a");
        let node = Node {
            metadata: ObjectMeta {
                name: Some("n1".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(meta_namespace_key(&node).unwrap(), "n1");
    }

    #[test]
    fn object_without_name_is_a_typed_error() {
        assert_eq!(
            meta_namespace_key(&pod(Some("ns"), None)),
            Err(KeyError::MissingName {
                namespace: Some("ns".into())
            })
        );
        assert_eq!(
            meta_namespace_key(&pod(None, Some(""))),
            Err(KeyError::MissingName { namespace: None })
        );
    }

    #[test]
    fn split_keys_like_client_go() {
        // client-go TestSplitMetaNamespaceKey (store_test.go / index_test.go cases)
        assert_eq!(split_meta_namespace_key("a").unwrap(), ("", "a"));
        assert_eq!(split_meta_namespace_key("ns/a").unwrap(), ("ns", "a"));
        assert_eq!(split_meta_namespace_key("/a").unwrap(), ("", "a"));
        assert_eq!(split_meta_namespace_key("").unwrap(), ("", ""));
        assert_eq!(
            split_meta_namespace_key("a/b/c"),
            Err(KeyError::Malformed("a/b/c".into()))
        );
    }

    #[test]
    fn tombstones_unwrap_to_their_key() {
        let t: ObjectOrTombstone<Pod> = DeletedFinalStateUnknown {
            key: "ns/gone".into(),
            obj: None,
        }
        .into();
        assert_eq!(t.key().unwrap(), "ns/gone");
        assert!(t.is_tombstone());
        assert!(t.object().is_none());
        let o: ObjectOrTombstone<Pod> = Arc::new(pod(Some("ns"), Some("x"))).into();
        assert_eq!(o.key().unwrap(), "ns/x");
        assert!(!o.is_tombstone());
    }
}
