//! [`Transform`]: how an object is changed before it is cached (client-go's `TransformFunc`).

use std::fmt;
use std::sync::Arc;

use kube::Resource;
use kube::api::ObjectMeta;

type ObjectFn<K> = Box<dyn Fn(&mut K) + Send + Sync>;
type MetadataFn = Arc<dyn Fn(&mut ObjectMeta) + Send + Sync>;

/// Changes every object received from the server before it is queued and cached (client-go's
/// `TransformFunc`, controller-runtime's `cache.TransformFunc`), typically to drop what the
/// program never reads and save memory: large annotations, status it ignores.
///
/// The one transform type of the crate: [`InformerConfig::transform`](crate::InformerConfig)
/// and the queues' options ([`DeltaFifoOptions`](crate::queue::DeltaFifoOptions),
/// [`RealFifoOptions`](crate::queue::RealFifoOptions)) take it. Made from a closure over the
/// whole object ([`new`](Self::new)) or over its metadata only ([`metadata`](Self::metadata));
/// the second works for every type, so it is the form a factory's defaults take.
///
/// A transform runs once per object the server sends (lists, watch events), on the task that
/// queues it, so it must be fast; never on resyncs (those objects were transformed already)
/// nor on tombstones. It cannot fail: leave the object unchanged when there is nothing to do.
/// It receives the object itself, not a copy, whenever nothing else holds it yet (the usual
/// case: straight from the decoder), so an edit costs no clone.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::Transform;
/// // drop what a controller never reads
/// let drop_status = Transform::new(|pod: &mut Pod| pod.status = None);
/// let drop_annotations = Transform::<Pod>::metadata(|m| m.annotations = None);
/// # let _ = (drop_status, drop_annotations);
/// ```
pub struct Transform<K> {
    kind: Arc<Kind<K>>,
}

enum Kind<K> {
    Object(ObjectFn<K>),
    Metadata(MetadataFn),
}

impl<K> Clone for Transform<K> {
    fn clone(&self) -> Self {
        Self {
            kind: self.kind.clone(),
        }
    }
}

impl<K> fmt::Debug for Transform<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match *self.kind {
            Kind::Object(_) => "Transform(object)",
            Kind::Metadata(_) => "Transform(metadata)",
        })
    }
}

impl<K: Resource> Transform<K> {
    /// A transform of the whole object.
    pub fn new(f: impl Fn(&mut K) + Send + Sync + 'static) -> Self {
        Self {
            kind: Arc::new(Kind::Object(Box::new(f))),
        }
    }
}

impl<K> Transform<K> {
    /// A transform of the object's metadata, for any type (client-go factories'
    /// `WithTransform` is usually this: drop managedFields, annotations, ...).
    pub fn metadata(f: impl Fn(&mut ObjectMeta) + Send + Sync + 'static) -> Self {
        Self {
            kind: Arc::new(Kind::Metadata(Arc::new(f))),
        }
    }

    /// `self`, then `next`.
    #[must_use]
    pub fn then(self, next: Transform<K>) -> Transform<K>
    where
        K: Resource + 'static,
    {
        Transform::new(move |obj: &mut K| {
            self.edit(obj);
            next.edit(obj);
        })
    }

    /// The same metadata transform for another type; `None` for a transform of whole objects,
    /// which only fits its own type.
    pub(crate) fn for_type<L>(&self) -> Option<Transform<L>> {
        match &*self.kind {
            Kind::Metadata(f) => Some(Transform {
                kind: Arc::new(Kind::Metadata(f.clone())),
            }),
            Kind::Object(_) => None,
        }
    }

    /// Edits `obj` in place.
    pub(crate) fn edit(&self, obj: &mut K)
    where
        K: Resource,
    {
        match &*self.kind {
            Kind::Object(f) => f(obj),
            Kind::Metadata(f) => f(obj.meta_mut()),
        }
    }

    /// Applies the transform to a shared object: in place when nothing else holds it,
    /// otherwise to a copy.
    pub fn apply(&self, obj: Arc<K>) -> Arc<K>
    where
        K: Resource + Clone,
    {
        let mut obj = Arc::unwrap_or_clone(obj);
        self.edit(&mut obj);
        Arc::new(obj)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    fn pod() -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = Some("p".into());
        pod.metadata.annotations = Some([("a".to_owned(), "b".to_owned())].into());
        pod.status = Some(Default::default());
        pod
    }

    #[test]
    fn object_and_metadata_transforms_compose_in_order() {
        let t = Transform::<Pod>::metadata(|m| m.annotations = None)
            .then(Transform::new(|p: &mut Pod| p.status = None))
            .then(Transform::metadata(|m| {
                m.name = m.name.take().map(|n| n + "-seen")
            }));
        let out = t.apply(Arc::new(pod()));
        assert_eq!(out.metadata.annotations, None);
        assert_eq!(out.status, None);
        assert_eq!(out.metadata.name.as_deref(), Some("p-seen"));
    }

    #[test]
    fn a_transform_never_edits_an_object_someone_else_holds() {
        let t = Transform::<Pod>::new(|p| p.status = None);
        let shared = Arc::new(pod());
        let out = t.apply(shared.clone());
        assert!(shared.status.is_some(), "the holder's object is untouched");
        assert!(out.status.is_none());
    }

    #[test]
    fn only_metadata_transforms_carry_over_to_other_types() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let meta = Transform::<()>::metadata(|m| m.labels = None);
        let for_cm: Transform<ConfigMap> =
            meta.for_type().expect("metadata transforms fit any type");
        let mut cm = ConfigMap::default();
        cm.metadata.labels = Some(Default::default());
        for_cm.edit(&mut cm);
        assert_eq!(cm.metadata.labels, None);
        assert!(
            Transform::<Pod>::new(|_| {})
                .for_type::<ConfigMap>()
                .is_none()
        );
    }
}
