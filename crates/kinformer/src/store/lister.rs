//! Listers: typed, read-only views of an [`Indexer`] filtered by label selector and namespace
//! (client-go's `GenericLister`, `ListAll`, `ListAllByNamespace`).

use std::sync::Arc;

use super::index_func::NAMESPACE_INDEX;
use super::indexer::Indexer;
use super::label_selector::LabelSelector;
use crate::object::{Object, namespace_name_key};

/// Lists and gets objects from an [`Indexer`] keyed by
/// [`meta_namespace_key`](crate::meta_namespace_key) (client-go's `GenericLister`).
///
/// Listers never fail: an object that is absent is `None`, not a `NotFound` error as in
/// client-go, because nothing went wrong. Results come in no particular order and share the
/// cache's `Arc`s.
///
/// ```
/// use std::{collections::BTreeMap, sync::Arc};
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::api::ObjectMeta;
/// use kinformer::store::LabelSelector;
/// use kinformer::{Indexer, Lister};
///
/// let pod = |ns: &str, name: &str, app: &str| Arc::new(Pod {
///     metadata: ObjectMeta {
///         namespace: Some(ns.into()), name: Some(name.into()),
///         labels: Some(BTreeMap::from([("app".to_string(), app.to_string())])),
///         ..Default::default()
///     },
///     ..Default::default()
/// });
/// let cache = Indexer::<Pod>::default_namespaced();
/// cache.add(pod("prod", "web-0", "web")).unwrap();
/// cache.add(pod("prod", "db-0", "db")).unwrap();
/// cache.add(pod("dev", "web-0", "web")).unwrap();
///
/// let pods = Lister::new(cache);
/// let web: LabelSelector = "app=web".parse().unwrap();
/// assert_eq!(pods.list(&web).len(), 2);
/// assert_eq!(pods.namespaced("prod").list(&web).len(), 1);
/// assert!(pods.namespaced("prod").get("db-0").is_some());
/// assert!(pods.namespaced("dev").get("db-0").is_none());
/// ```
pub struct Lister<K> {
    indexer: Indexer<K>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Self {
            indexer: self.indexer.clone(),
        }
    }
}

impl<K> std::fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lister")
            .field("indexer", &self.indexer)
            .finish()
    }
}

/// Keeps the objects `selector` matches (all of them, without looking at labels, for an empty
/// selector).
fn select<K: Object>(objects: Vec<Arc<K>>, selector: &LabelSelector) -> Vec<Arc<K>> {
    if selector.is_empty() {
        return objects;
    }
    objects
        .into_iter()
        .filter(|o| selector.matches_object(o.as_ref()))
        .collect()
}

impl<K: Object> Lister<K> {
    /// A lister over `indexer` (which it shares).
    pub fn new(indexer: Indexer<K>) -> Self {
        Self { indexer }
    }

    /// The indexer this lister reads.
    pub fn indexer(&self) -> &Indexer<K> {
        &self.indexer
    }

    /// Every object, in every namespace, that `selector` matches (client-go's `ListAll`).
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<K>> {
        select(self.indexer.list(), selector)
    }

    /// The object stored under the key `name`: a cluster-scoped object by name.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.indexer.get_by_key(name)
    }

    /// A view of one namespace (client-go's `ByNamespace`). The empty namespace means all
    /// namespaces, as client-go's `NamespaceAll`.
    pub fn namespaced(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister {
            indexer: self.indexer.clone(),
            namespace: namespace.to_owned(),
        }
    }
}

/// Lists and gets the objects of one namespace (client-go's `GenericNamespaceLister`).
pub struct NamespaceLister<K> {
    indexer: Indexer<K>,
    namespace: String,
}

impl<K> Clone for NamespaceLister<K> {
    fn clone(&self) -> Self {
        Self {
            indexer: self.indexer.clone(),
            namespace: self.namespace.clone(),
        }
    }
}

impl<K> std::fmt::Debug for NamespaceLister<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamespaceLister")
            .field("namespace", &self.namespace)
            .field("indexer", &self.indexer)
            .finish()
    }
}

impl<K: Object> NamespaceLister<K> {
    /// The namespace this view shows.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The objects of this namespace that `selector` matches (client-go's
    /// `ListAllByNamespace`).
    ///
    /// Answered from the [`NAMESPACE_INDEX`] when the indexer has one (which must file objects
    /// by namespace, as [`namespace_index_func`](super::namespace_index_func) does); otherwise
    /// by scanning every object, as client-go falls back to.
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<K>> {
        if self.namespace.is_empty() {
            return select(self.indexer.list(), selector);
        }
        let in_namespace = match self.indexer.by_index(NAMESPACE_INDEX, &self.namespace) {
            Ok(objects) => objects,
            Err(_) => {
                tracing::trace!(
                    namespace = %self.namespace,
                    "no namespace index; listing the namespace by scanning every object"
                );
                self.indexer
                    .list()
                    .into_iter()
                    .filter(|o| o.meta().namespace.as_deref().unwrap_or("") == self.namespace)
                    .collect()
            }
        };
        select(in_namespace, selector)
    }

    /// The object `name` of this namespace (the key `namespace/name`).
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.indexer
            .get_by_key(&namespace_name_key(&self.namespace, name))
    }
}
