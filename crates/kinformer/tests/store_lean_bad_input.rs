//! Bad input in lean mode ([`CacheMode::Lean`]): an object that cannot be encoded is a typed
//! error and changes nothing; one that cannot be decoded is left out of reads (logged) and
//! stays cached. Nothing panics.

use std::borrow::Cow;
use std::sync::Arc;

use kinformer::store::{CacheMode, Transaction};
use kinformer::{Indexer, StoreError, namespace_indexers, object::meta_namespace_key_func};
use kube::api::ObjectMeta;
use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An object whose `value` 13 cannot be encoded and whose `value` 7 encodes but cannot be
/// decoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Odd {
    metadata: ObjectMeta,
    #[serde(serialize_with = "refuse_13", deserialize_with = "refuse_7")]
    value: u32,
}

fn refuse_13<S: Serializer>(v: &u32, s: S) -> Result<S::Ok, S::Error> {
    if *v == 13 {
        return Err(S::Error::custom("13 cannot be written"));
    }
    s.serialize_u32(*v)
}

fn refuse_7<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let v = u32::deserialize(d)?;
    if v == 7 {
        return Err(D::Error::custom("7 cannot be read"));
    }
    Ok(v)
}

impl kube::Resource for Odd {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;
    fn kind(_: &()) -> Cow<'_, str> {
        "Odd".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "odds".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

fn odd(name: &str, value: u32) -> Arc<Odd> {
    Arc::new(Odd {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            resource_version: Some(value.to_string()),
            ..Default::default()
        },
        value,
    })
}

fn lean() -> Indexer<Odd> {
    Indexer::with_cache_mode(
        meta_namespace_key_func(),
        namespace_indexers(),
        CacheMode::Lean,
    )
}

#[test]
fn an_object_that_cannot_be_encoded_is_a_codec_error_and_changes_nothing() {
    let cache = lean();
    cache.add(odd("a", 1)).unwrap();
    let err = cache.update(odd("a", 13)).unwrap_err();
    assert!(
        matches!(&err, StoreError::Codec { key: Some(k), .. } if k == "ns/a"),
        "{err:?}"
    );
    assert_eq!(cache.get_by_key("ns/a").unwrap().value, 1);
    assert_eq!(cache.last_resource_version().as_deref(), Some("1"));

    // In a replace: the whole replace fails and the cache is unchanged.
    let err = cache
        .replace(vec![odd("b", 2), odd("c", 13)], "9")
        .unwrap_err();
    assert!(matches!(err, StoreError::Codec { .. }), "{err:?}");
    assert_eq!(cache.list_keys(), ["ns/a"]);

    // In a transaction: that write fails, the others are applied.
    let outcome = cache.transaction(vec![
        Transaction::Add(odd("d", 13)),
        Transaction::Add(odd("e", 5)),
    ]);
    assert_eq!(outcome.error().unwrap().successful_indices, [1]);
    let mut keys = cache.list_keys();
    keys.sort();
    assert_eq!(keys, ["ns/a", "ns/e"]);
}

/// A lean cache without a hot set: a read of an object nobody holds decodes it.
fn lean_cold() -> Indexer<Odd> {
    Indexer::new_lean_with_hot(meta_namespace_key_func(), namespace_indexers(), 0)
}

#[test]
fn an_object_that_cannot_be_decoded_is_left_out_of_reads_and_stays_cached() {
    // With the default hot set, the object just written stays decoded and readable.
    let hot = lean();
    hot.add(odd("b", 7)).unwrap();
    assert_eq!(hot.get_by_key("ns/b").unwrap().value, 7);

    let cache = lean_cold();
    cache.add(odd("a", 1)).unwrap();
    // While the written Arc lives, reads share it without decoding.
    let held = odd("b", 7);
    cache.add(held.clone()).unwrap();
    assert!(Arc::ptr_eq(&cache.get_by_key("ns/b").unwrap(), &held));
    drop(held);
    // Now a read must decode it, and cannot.
    assert!(cache.get_by_key("ns/b").is_none());
    assert_eq!(cache.list().len(), 1);
    assert_eq!(cache.by_index("namespace", "ns").unwrap().len(), 1);
    assert_eq!(cache.len(), 2, "it stays cached");
    assert_eq!(
        cache.index_keys("namespace", "ns").unwrap(),
        ["ns/a", "ns/b"]
    );
    // Replacing it works, and so does deleting it (the old object is then unknown).
    cache.update(odd("b", 8)).unwrap();
    assert_eq!(cache.get_by_key("ns/b").unwrap().value, 8);
    cache.add(odd("c", 7)).unwrap();
    assert_eq!(cache.delete_by_key("ns/c").unwrap(), None);
    assert_eq!(cache.len(), 2);
}
