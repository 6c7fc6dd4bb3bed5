//! # kinformer-proto
//!
//! Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`) for every built-in
//! kind, transcoded to and from JSON, so that code which holds objects as JSON (the embedded
//! API server, serde types such as k8s-openapi's) can speak protobuf on the wire as client-go
//! and kube-apiserver do.
//!
//! There is no generated code per kind. A table read off Kubernetes' own Go types
//! ([`gen/`](https://example.invalid/kinformer), `go run .`, by reflection over every kind
//! client-go registers) holds, for each message, its fields in Go struct order with their
//! protobuf numbers, JSON names, `omitempty`, inline and pointer flags, and the types with a
//! JSON form of their own (`Time`, `MicroTime`, `Duration`, `Quantity`, `IntOrString`,
//! `RawExtension`/`FieldsV1`, the JSON-schema unions). One decoder and one encoder walk it.
//!
//! - Decoding writes the JSON Go writes for the object decoded from the same bytes: absent
//!   fields are Go's zero values, so a non-`omitempty` field is written even when the sender
//!   left it out. The round-trip fixtures (objects filled by apimachinery's API fuzzer for every
//!   kind, encoded by Go) hold this to Go's own output.
//! - Encoding writes the fields the JSON carries; what is absent is left to the reader's zero
//!   value, which is what Go would have written for it.
//!
//! There is one table per Kubernetes minor that k8s-openapi supports (1.33 to 1.37), since
//! fields are added and alpha types change between releases. The application picks the
//! version, as it does for k8s-openapi: this crate depends on k8s-openapi without a version
//! feature, and its `k8s_if_1_NN!` macros compile in the table of the one feature the
//! application enables (see [`kubernetes_version`]). The `every-version` feature compiles in
//! every table (for tests: `MessageRef::for_kind_in`).
//!
//! Input is untrusted: every length is checked, nesting is bounded, the JSON written is at most
//! 64 times the input plus 1 MiB, and malformed input is a [`ProtoError`], never a panic.
//!
//! ```
//! use kinformer_proto::{object_from_json, object_to_json};
//!
//! let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
//!     "metadata": {"name": "web", "labels": {"app": "web"}},
//!     "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
//! let bytes = object_from_json(&pod).unwrap();
//! assert!(bytes.starts_with(b"k8s\0"));
//! let back: serde_json::Value = serde_json::from_slice(&object_to_json(&bytes).unwrap()).unwrap();
//! assert_eq!(back["spec"]["containers"][0]["image"], "nginx");
//! ```

mod de;
mod encode;
mod gotime;
mod schema;
mod tables;
mod wire;

use serde_json::Value;

pub use de::MessageDeserializer;
pub use schema::MessageRef;

/// The Kubernetes minor version (`1.35`) whose schema table the build selected: the one
/// k8s-openapi's version feature (`v1_33` ... `v1_37`) names, which the application chooses.
/// [`MessageRef::for_kind`], and so every function that finds a kind's message itself, use
/// that table.
pub fn kubernetes_version() -> &'static str {
    tables::CURRENT.version
}

/// Every Kubernetes minor version with a schema table, oldest first; with the `every-version`
/// feature each is compiled in (see [`MessageRef::for_kind_in`]).
#[cfg(feature = "every-version")]
pub const KUBERNETES_VERSIONS: &[&str] = &tables::VERSIONS;

/// The media type of Kubernetes protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of a protobuf watch stream (length-prefixed frames).
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// The magic prefix of every protobuf object body.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// Why bytes or JSON could not be transcoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// The bytes end inside a field.
    #[error("protobuf: truncated input")]
    Truncated,
    /// The bytes are not a valid encoding of the message.
    #[error("protobuf: {0}")]
    Malformed(&'static str),
    /// The body does not start with the `k8s\0` envelope.
    #[error("protobuf: missing the k8s envelope")]
    NoEnvelope,
    /// The kind has no protobuf message (custom resources, unknown kinds).
    #[error("protobuf: no message for {api_version} {kind}")]
    UnknownKind {
        /// The envelope's or the object's `apiVersion`.
        api_version: String,
        /// The envelope's or the object's `kind`.
        kind: String,
    },
    /// The JSON is not of the message's shape, or embedded JSON is invalid.
    #[error("json: {0}")]
    Json(String),
    /// The input expands past what its size allows (about four values per input byte):
    /// empty messages that stand for many zero values each.
    #[error("protobuf: the input expands past its limit")]
    TooLarge,
}

/// A decoded `k8s\0` envelope (`runtime.Unknown`): the type and the raw message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// `apiVersion` of the type meta.
    pub api_version: &'a str,
    /// `kind` of the type meta.
    pub kind: &'a str,
    /// The object's message bytes.
    pub raw: &'a [u8],
}

fn utf8(b: &[u8]) -> Result<&str, ProtoError> {
    std::str::from_utf8(b).map_err(|_| ProtoError::Malformed("type meta is not UTF-8"))
}

impl<'a> Envelope<'a> {
    /// Reads the envelope at the front of a protobuf body.
    pub fn parse(body: &'a [u8]) -> Result<Envelope<'a>, ProtoError> {
        let inner = body.strip_prefix(MAGIC).ok_or(ProtoError::NoEnvelope)?;
        let mut env = Envelope {
            api_version: "",
            kind: "",
            raw: &[],
        };
        for r in wire::Fields::new(inner) {
            match r? {
                (1, wire::WireValue::Bytes(tm)) => {
                    for r in wire::Fields::new(tm) {
                        match r? {
                            (1, wire::WireValue::Bytes(b)) => env.api_version = utf8(b)?,
                            (2, wire::WireValue::Bytes(b)) => env.kind = utf8(b)?,
                            _ => {}
                        }
                    }
                }
                (2, wire::WireValue::Bytes(b)) => env.raw = b,
                _ => {}
            }
        }
        Ok(env)
    }

    /// The message of the envelope's kind.
    pub fn message(&self) -> Result<MessageRef, ProtoError> {
        MessageRef::for_kind(self.api_version, self.kind).ok_or_else(|| ProtoError::UnknownKind {
            api_version: self.api_version.to_owned(),
            kind: self.kind.to_owned(),
        })
    }
}

/// Wraps a message in the `k8s\0` envelope, as Go's protobuf serializer does.
pub fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + api_version.len() + kind.len() + 16);
    out.extend_from_slice(MAGIC);
    let start = wire::begin_nested(&mut out, 1);
    wire::put_bytes(&mut out, 1, api_version.as_bytes());
    wire::put_bytes(&mut out, 2, kind.as_bytes());
    wire::end_nested(&mut out, start);
    wire::put_bytes(&mut out, 2, raw);
    wire::put_bytes(&mut out, 3, b"");
    wire::put_bytes(&mut out, 4, b"");
    out
}

/// A message as a JSON object (no `apiVersion`/`kind`: those are the envelope's).
pub fn message_to_json(msg: MessageRef, raw: &[u8]) -> Result<Vec<u8>, ProtoError> {
    to_json(MessageDeserializer::new(msg, raw))
}

/// A message as a JSON object that starts with the given `apiVersion` and `kind`.
pub fn typed_message_to_json<'a>(
    api_version: &'a str,
    kind: &'a str,
    msg: MessageRef,
    raw: &'a [u8],
) -> Result<Vec<u8>, ProtoError> {
    to_json(MessageDeserializer::new(msg, raw).typed(api_version, kind))
}

/// The JSON writer: the deserializer's one walk, transcoded into serde_json.
fn to_json(mut d: MessageDeserializer<'_>) -> Result<Vec<u8>, ProtoError> {
    let mut out = Vec::with_capacity(d.input_len().saturating_mul(2));
    let mut ser = serde_json::Serializer::new(&mut out);
    match serde_transcode::transcode(&mut d, &mut ser) {
        Ok(()) => Ok(out),
        Err(_) if d.budget_exhausted() => Err(ProtoError::TooLarge),
        Err(e) => Err(ProtoError::Json(e.to_string())),
    }
}

/// A whole protobuf body (envelope included) as the JSON of the object, with its
/// `apiVersion` and `kind`.
pub fn object_to_json(body: &[u8]) -> Result<Vec<u8>, ProtoError> {
    let env = Envelope::parse(body)?;
    typed_message_to_json(env.api_version, env.kind, env.message()?, env.raw)
}

/// A JSON object as message `msg` (no envelope); fields it does not know are dropped.
pub fn message_from_json(msg: MessageRef, obj: &Value) -> Result<Vec<u8>, ProtoError> {
    let Value::Object(map) = obj else {
        return Err(ProtoError::Json("expected an object".into()));
    };
    let mut out = Vec::with_capacity(256);
    encode::message(msg, map, &mut out, 0)?;
    Ok(out)
}

/// A JSON object with `apiVersion` and `kind` as a whole protobuf body (envelope included).
pub fn object_from_json(obj: &Value) -> Result<Vec<u8>, ProtoError> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let msg = MessageRef::for_kind(api_version, kind).ok_or_else(|| ProtoError::UnknownKind {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    })?;
    Ok(envelope(api_version, kind, &message_from_json(msg, obj)?))
}

/// The parts of a list message (`PodList`, ...): its `ListMeta` bytes and each item's message
/// bytes, in order, without decoding them (so that items can be decoded one by one, or in
/// parallel).
pub fn list_parts(raw: &[u8]) -> Result<(&[u8], Vec<&[u8]>), ProtoError> {
    let mut meta: &[u8] = &[];
    let mut items = Vec::new();
    for r in wire::Fields::new(raw) {
        match r? {
            (1, wire::WireValue::Bytes(b)) => meta = b,
            (2, wire::WireValue::Bytes(b)) => items.push(b),
            (1 | 2, _) => return Err(ProtoError::Malformed("list field of the wrong wire type")),
            _ => {}
        }
    }
    Ok((meta, items))
}

/// The `ListMeta` message (of the current table).
fn list_meta_message() -> Result<MessageRef, ProtoError> {
    MessageRef::for_kind("v1", "List")
        .and_then(|l| l.field_message("metadata", false))
        .ok_or(ProtoError::Malformed("ListMeta is missing from the table"))
}

/// `ListMeta`'s `shardInfo` (KEP-5866): field 5, a `ShardInfo` message whose field 1 is the
/// selector. Tables before 1.36 do not have it, yet a client built for an older version still
/// talks to 1.36+ servers (and the embedded server answers whatever version the build picks),
/// so it is read and written here whatever the table says.
const SHARD_INFO_FIELD: u32 = 5;

/// Whether the current table's `ListMeta` knows `shardInfo`.
fn table_has_shard_info(msg: MessageRef) -> bool {
    msg.get().fields.iter().any(|f| f.json == "shardInfo")
}

/// `ListMeta` as JSON (`shardInfo` included whatever the table's version).
pub fn list_meta_to_json(meta: &[u8]) -> Result<Vec<u8>, ProtoError> {
    let msg = list_meta_message()?;
    let mut json = message_to_json(msg, meta)?;
    if table_has_shard_info(msg) {
        return Ok(json);
    }
    let mut selector = None;
    for r in wire::Fields::new(meta) {
        if let (SHARD_INFO_FIELD, wire::WireValue::Bytes(info)) = r? {
            let mut sel = String::new();
            for f in wire::Fields::new(info) {
                if let (1, wire::WireValue::Bytes(b)) = f? {
                    sel = String::from_utf8(b.to_vec())
                        .map_err(|_| ProtoError::Malformed("shardInfo.selector is not UTF-8"))?;
                }
            }
            selector = Some(sel);
        }
    }
    if let Some(sel) = selector
        && json.last() == Some(&b'}')
    {
        json.pop();
        if json.len() > 1 {
            json.push(b',');
        }
        json.extend_from_slice(b"\"shardInfo\":{\"selector\":");
        json.extend_from_slice(&serde_json::to_vec(&sel).unwrap_or_default());
        json.extend_from_slice(b"}}");
    }
    Ok(json)
}

/// Writes a list message from its `ListMeta` JSON and the items' message bytes (each already
/// encoded, e.g. cached per object).
pub fn list_message<'a>(
    list_meta: &Value,
    items: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<u8>, ProtoError> {
    let mut out = Vec::new();
    let meta = list_meta_message()?;
    let mut meta_bytes = message_from_json(meta, list_meta)?;
    if !table_has_shard_info(meta)
        && let Some(sel) = list_meta
            .get("shardInfo")
            .and_then(|i| i.get("selector"))
            .and_then(Value::as_str)
    {
        let start = wire::begin_nested(&mut meta_bytes, SHARD_INFO_FIELD);
        wire::put_bytes(&mut meta_bytes, 1, sel.as_bytes());
        wire::end_nested(&mut meta_bytes, start);
    }
    wire::put_bytes(&mut out, 1, &meta_bytes);
    for item in items {
        wire::put_bytes(&mut out, 2, item);
    }
    Ok(out)
}

/// One watch event as a protobuf watch-stream frame, as kube-apiserver writes it: a 4-byte
/// big-endian length, then a `WatchEvent` message with no envelope (the stream serializer is
/// the raw one) whose `object` holds the object's whole protobuf body, envelope included.
pub fn watch_frame(event_type: &str, object_body: &[u8]) -> Vec<u8> {
    let mut ev = Vec::with_capacity(object_body.len() + 32);
    wire::put_bytes(&mut ev, 1, event_type.as_bytes());
    let start = wire::begin_nested(&mut ev, 2);
    wire::put_bytes(&mut ev, 1, object_body);
    wire::end_nested(&mut ev, start);
    let mut out = Vec::with_capacity(ev.len() + 4);
    out.extend_from_slice(&(ev.len() as u32).to_be_bytes());
    out.extend_from_slice(&ev);
    out
}

/// A decoded watch frame: the event type and the object's whole protobuf body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchEvent<'a> {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub event_type: &'a str,
    /// The object's protobuf body (envelope included).
    pub object: &'a [u8],
}

impl<'a> WatchEvent<'a> {
    /// Reads one frame's payload (the bytes after the 4-byte length): the raw `WatchEvent`
    /// message (one wrapped in the `k8s\0` envelope is read too).
    pub fn parse(frame: &'a [u8]) -> Result<WatchEvent<'a>, ProtoError> {
        let raw = if frame.starts_with(MAGIC) {
            Envelope::parse(frame)?.raw
        } else {
            frame
        };
        let mut ev = WatchEvent {
            event_type: "",
            object: &[],
        };
        for r in wire::Fields::new(raw) {
            match r? {
                (1, wire::WireValue::Bytes(b)) => ev.event_type = utf8(b)?,
                (2, wire::WireValue::Bytes(raw_ext)) => {
                    for r in wire::Fields::new(raw_ext) {
                        if let (1, wire::WireValue::Bytes(b)) = r? {
                            ev.object = b;
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(ev)
    }
}

#[cfg(test)]
mod shard_info_tests {
    use super::*;

    #[test]
    fn list_meta_shard_info_round_trips_through_protobuf_whatever_the_table() {
        let sel = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
        let meta = serde_json::json!({"resourceVersion": "7", "shardInfo": {"selector": sel}});
        let list = list_message(&meta, std::iter::empty()).unwrap();
        let (raw_meta, items) = list_parts(&list).unwrap();
        assert!(items.is_empty());
        // field 5, nested field 1, as Go's generated.pb.go writes it
        let mut expected_info = Vec::new();
        wire::put_bytes(&mut expected_info, 1, sel.as_bytes());
        let mut expected = Vec::new();
        wire::put_bytes(&mut expected, 5, &expected_info);
        assert!(
            raw_meta.ends_with(&expected),
            "shardInfo is field 5 of ListMeta"
        );
        let json: Value = serde_json::from_slice(&list_meta_to_json(raw_meta).unwrap()).unwrap();
        assert_eq!(json["resourceVersion"], "7");
        assert_eq!(json["shardInfo"]["selector"], sel);
        // without shardInfo, none appears
        let plain = list_message(
            &serde_json::json!({"resourceVersion": "7"}),
            std::iter::empty(),
        )
        .unwrap();
        let (raw_meta, _) = list_parts(&plain).unwrap();
        let json: Value = serde_json::from_slice(&list_meta_to_json(raw_meta).unwrap()).unwrap();
        assert!(json.get("shardInfo").is_none());
    }
}
