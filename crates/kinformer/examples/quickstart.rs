//! Keys and tombstones: the smallest thing kinformer does, runnable today.
//! (The full demo on the embedded API server replaces this as the README's main command.)

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kinformer::{
    DeletedFinalStateUnknown, ObjectOrTombstone, meta_namespace_key, split_meta_namespace_key,
};
use kube::api::ObjectMeta;

fn main() {
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some("web-0".into()),
            namespace: Some("prod".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let key = meta_namespace_key(&pod).expect("the pod has a name");
    println!("key of prod/web-0: {key}");
    println!("split: {:?}", split_meta_namespace_key(&key));

    let tombstone: ObjectOrTombstone<Pod> = DeletedFinalStateUnknown {
        key: key.clone(),
        obj: Some(Arc::new(pod)),
    }
    .into();
    println!("tombstone key: {:?}", tombstone.key());

    let nameless = Pod::default();
    println!(
        "object without a name: {}",
        meta_namespace_key(&nameless).unwrap_err()
    );
}
