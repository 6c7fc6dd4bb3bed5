//! Wire decoding: list bodies and watch lines, straight into `K` (no `serde_json::Value`
//! tree), defensively: anything that is not a well-formed list or event of the expected kind is
//! a [`ListWatchError::Decode`], never a panic.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::reflector::{ListPage, ListWatchError, WatchEvent};
use crate::source::status::status_from_value;

/// Decodes one line of a watch response (`{"type": ..., "object": ...}`).
///
/// The object is decoded straight from the line's bytes into `K` (no intermediate JSON tree).
/// Returns a [`ListWatchError::Decode`] for anything that is not a well-formed event of the
/// expected `kind`: not JSON, no or unknown `type`, no `object`, an object of another kind, or an
/// object that does not deserialize into `K`. An `ERROR` event becomes [`WatchEvent::Error`].
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::source::decode_watch_line;
/// let ok = decode_watch_line::<Pod>(br#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#, "Pod");
/// assert!(ok.is_ok());
/// assert!(decode_watch_line::<Pod>(b"garbage", "Pod").unwrap_err().is_decode());
/// assert!(decode_watch_line::<Pod>(br#"{"object":{}}"#, "Pod").unwrap_err().is_decode());
/// ```
///
/// # Errors
/// [`ListWatchError::Decode`] as described.
pub fn decode_watch_line<K: DeserializeOwned + 'static>(
    line: &[u8],
    kind: &str,
) -> Result<WatchEvent<K>, ListWatchError> {
    let wire: WireLine<'_, K> = serde_json::from_slice(line)
        .map_err(|e| ListWatchError::Decode(format!("cannot decode a {kind} watch event: {e}")))?;
    let event_type = wire
        .event_type
        .ok_or_else(|| ListWatchError::Decode("watch event has no type".into()))?;
    let object = match wire.object {
        Some(WireObject::Typed(obj)) => return typed_event(&event_type, check_kind(obj, kind)?),
        Some(WireObject::Raw(raw)) if raw.get().starts_with('{') => raw,
        _ => {
            return Err(ListWatchError::Decode(format!(
                "{event_type} event has no object"
            )));
        }
    };
    match &*event_type {
        // the object came before the type: decode it now
        "ADDED" | "MODIFIED" | "DELETED" => typed_event(&event_type, decode_object(object, kind)?),
        "BOOKMARK" => {
            let value: Value = serde_json::from_str(object.get())
                .map_err(|e| ListWatchError::Decode(format!("bookmark object: {e}")))?;
            let meta = value.get("metadata");
            let resource_version = meta
                .and_then(|m| m.get("resourceVersion"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let annotations = meta
                .and_then(|m| m.get("annotations"))
                .and_then(Value::as_object)
                .map(|a| {
                    a.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                        .collect::<BTreeMap<_, _>>()
                })
                .unwrap_or_default();
            Ok(WatchEvent::Bookmark {
                resource_version,
                annotations,
            })
        }
        "ERROR" => {
            let value: Value = serde_json::from_str(object.get())
                .map_err(|e| ListWatchError::Decode(format!("error object: {e}")))?;
            Ok(WatchEvent::Error(status_from_value(&value)))
        }
        other => Err(ListWatchError::Decode(format!(
            "unknown watch event type {other:?}"
        ))),
    }
}

pub(crate) fn typed_event<K>(event_type: &str, obj: K) -> Result<WatchEvent<K>, ListWatchError> {
    match event_type {
        "ADDED" => Ok(WatchEvent::Added(obj)),
        "MODIFIED" => Ok(WatchEvent::Modified(obj)),
        "DELETED" => Ok(WatchEvent::Deleted(obj)),
        other => Err(ListWatchError::Decode(format!(
            "unknown watch event type {other:?}"
        ))),
    }
}

/// The kind check a typed decoder cannot do itself: a `DynamicObject` takes any kind, so its
/// `kind` is compared here. Typed objects (k8s-openapi's) reject another kind while decoding.
fn check_kind<K: 'static>(obj: K, kind: &str) -> Result<K, ListWatchError> {
    if let Some(dynamic) = (&obj as &dyn std::any::Any).downcast_ref::<kube::api::DynamicObject>()
        && let Some(actual) = dynamic.types.as_ref().map(|t| t.kind.as_str())
        && actual != kind
    {
        return Err(ListWatchError::Decode(format!(
            "unexpected object kind {actual:?}, expected {kind:?}"
        )));
    }
    Ok(obj)
}

/// A watch line as sent, decoded in one pass: when `type` comes before `object` (as servers
/// write it) and names an object event, the object is decoded straight into `K`; otherwise it
/// stays raw until the type is known.
struct WireLine<'a, K> {
    event_type: Option<Cow<'a, str>>,
    object: Option<WireObject<'a, K>>,
}

enum WireObject<'a, K> {
    Typed(K),
    Raw(&'a RawValue),
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for WireLine<'de, K> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct LineVisitor<K>(PhantomData<fn() -> K>);
        impl<'de, K: DeserializeOwned> serde::de::Visitor<'de> for LineVisitor<K> {
            type Value = WireLine<'de, K>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a watch event object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                #[derive(Deserialize)]
                #[serde(field_identifier, rename_all = "lowercase")]
                enum Field {
                    Type,
                    Object,
                    #[serde(other)]
                    Other,
                }
                let mut event_type: Option<Cow<'de, str>> = None;
                let mut object = None;
                while let Some(key) = map.next_key::<Field>()? {
                    match key {
                        Field::Type if event_type.is_none() => event_type = Some(map.next_value()?),
                        Field::Object if object.is_none() => {
                            let typed = matches!(
                                event_type.as_deref(),
                                Some("ADDED" | "MODIFIED" | "DELETED")
                            );
                            object = Some(if typed {
                                WireObject::Typed(map.next_value::<K>()?)
                            } else {
                                WireObject::Raw(map.next_value::<&'de RawValue>()?)
                            });
                        }
                        Field::Type => return Err(serde::de::Error::duplicate_field("type")),
                        Field::Object => {
                            return Err(serde::de::Error::duplicate_field("object"));
                        }
                        Field::Other => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(WireLine { event_type, object })
            }
        }
        d.deserialize_map(LineVisitor(PhantomData))
    }
}

/// Only the `kind` of an object; every other field is skipped without being built.
#[derive(Deserialize)]
struct KindProbe<'a> {
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
}

/// A list body as sent, decoded in one pass: the items go straight into `K`.
#[derive(Deserialize)]
#[serde(bound(deserialize = "K: DeserializeOwned"))]
struct WireList<K> {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Option<WireListMeta>,
    #[serde(default)]
    items: Option<Vec<K>>,
}

/// The fields of a list's `metadata` a Reflector uses.
#[derive(Deserialize)]
struct WireListMeta {
    #[serde(rename = "resourceVersion", default)]
    resource_version: Option<String>,
    #[serde(rename = "continue", default)]
    continue_token: Option<String>,
    #[serde(rename = "remainingItemCount", default)]
    remaining_item_count: Option<i64>,
    #[serde(rename = "shardInfo", default)]
    shard_info: Option<WireShardInfo>,
}

/// A list's `metadata.shardInfo` (KEP-5866).
#[derive(Deserialize)]
struct WireShardInfo {
    #[serde(default)]
    selector: Option<String>,
}

/// Whether a list's `kind` says it holds `kind` objects: `<kind>List`, or the generic `List`
/// (how client-go decides what a list holds).
pub(crate) fn is_list_of(list_kind: &str, kind: &str) -> bool {
    list_kind == "List" || list_kind.strip_suffix("List") == Some(kind)
}

/// Decodes a list response body into one page.
///
/// The body is decoded in a single pass straight into `K` (no intermediate JSON tree), which
/// is what keeps a large initial list cheap in time and memory. The list's own `kind`, when
/// present, must be `<kind>List` (or the generic `List`): that is how client-go decides what a
/// list holds. Items are not checked one by one (servers omit their `kind`); typed objects
/// such as k8s-openapi's reject a `kind`/`apiVersion` of another type themselves. An item that
/// does not deserialize fails the whole page (skipping it would make the store forget an
/// object that exists).
///
/// # Errors
/// [`ListWatchError::Decode`] when the body is not a list of `kind`.
pub fn decode_list<K: DeserializeOwned>(
    body: &[u8],
    kind: &str,
) -> Result<ListPage<K>, ListWatchError> {
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ListWatchError::Decode(format!(
            "cannot decode {kind}List: the body is not a JSON object"
        )));
    }
    let list: WireList<K> = serde_json::from_slice(body)
        .map_err(|e| ListWatchError::Decode(format!("cannot decode {kind}List: {e}")))?;
    if let Some(list_kind) = list.kind.as_deref()
        && !is_list_of(list_kind, kind)
    {
        return Err(ListWatchError::Decode(format!(
            "unexpected list kind {list_kind:?}, expected \"{kind}List\""
        )));
    }
    let meta = list.metadata;
    let (resource_version, continue_token, remaining_item_count, shard_info) = match meta {
        Some(m) => (
            m.resource_version,
            m.continue_token,
            m.remaining_item_count,
            m.shard_info.map(|s| s.selector.unwrap_or_default()),
        ),
        None => (None, None, None, None),
    };
    Ok(ListPage {
        items: list.items.unwrap_or_default(),
        resource_version: resource_version.unwrap_or_default(),
        continue_token: continue_token.filter(|c| !c.is_empty()),
        remaining_item_count,
        shard_info,
    })
}

/// Decodes one watch object into `K` after checking its `kind` (when it has one).
fn decode_object<K: DeserializeOwned>(object: &RawValue, kind: &str) -> Result<K, ListWatchError> {
    let probe: KindProbe<'_> = serde_json::from_str(object.get())
        .map_err(|e| ListWatchError::Decode(format!("object is not a JSON object: {e}")))?;
    if let Some(actual) = probe.kind.as_deref()
        && actual != kind
    {
        return Err(ListWatchError::Decode(format!(
            "unexpected object kind {actual:?}, expected {kind:?}"
        )));
    }
    serde_json::from_str(object.get())
        .map_err(|e| ListWatchError::Decode(format!("cannot decode {kind}: {e}")))
}
