//! Helpers shared by the DeltaFifo test files: client-go's `testFifoObject{name, val}` as a
//! ConfigMap named `name` with `data.val = val`, readable descriptions of deltas, and
//! client-go's `literalListerGetter`.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::queue::{DeltaFifo, DeltaFifoOptions, DeltaType, Deltas};
use kinformer::{ObjectOrTombstone, store::KeyListerGetter};
use kube::api::ObjectMeta;

pub fn obj(name: &str, val: i64) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("val".to_string(), val.to_string())])),
        ..Default::default()
    })
}

/// `name=val` (`val` empty when the object has no data).
pub fn describe_obj(o: &ConfigMap) -> String {
    let val = o.data.as_ref().map_or("", |d| d["val"].as_str());
    format!("{}={val}", o.metadata.name.as_deref().unwrap_or(""))
}

pub fn describe(o: &ObjectOrTombstone<ConfigMap>) -> String {
    match o {
        ObjectOrTombstone::Object(o) => describe_obj(o),
        ObjectOrTombstone::Tombstone(t) => format!(
            "tombstone({}, {})",
            t.key,
            t.obj.as_deref().map_or("none".into(), describe_obj)
        ),
    }
}

pub fn describe_deltas(d: &Deltas<ConfigMap>) -> Vec<(DeltaType, String)> {
    d.iter()
        .map(|d| (d.delta_type, describe(&d.object)))
        .collect()
}

pub fn exp(items: &[(DeltaType, &str)]) -> Vec<(DeltaType, String)> {
    items.iter().map(|(t, s)| (*t, s.to_string())).collect()
}

/// client-go's `literalListerGetter`: a fixed list of known objects, in list order.
pub struct Literal(pub Vec<Arc<ConfigMap>>);

impl KeyListerGetter<ConfigMap> for Literal {
    fn list_keys(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|o| o.metadata.name.clone().unwrap())
            .collect()
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<ConfigMap>> {
        self.0
            .iter()
            .find(|o| o.metadata.name.as_deref() == Some(key))
            .cloned()
    }
}

pub fn fifo() -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(DeltaFifoOptions::default())
}

pub fn fifo_known(known: Vec<Arc<ConfigMap>>, emit_replaced: bool) -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(DeltaFifoOptions {
        known_objects: Some(Arc::new(Literal(known))),
        emit_delta_type_replaced: emit_replaced,
        ..Default::default()
    })
}

pub async fn pop_desc(f: &DeltaFifo<ConfigMap>) -> Vec<(DeltaType, String)> {
    describe_deltas(&f.pop(|d, _| d).await.expect("an item"))
}
