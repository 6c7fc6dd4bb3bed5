//! Decoding list and watch bodies as they download: cutting them into items or events
//! (JSON: [`json_list`], [`watch`]; protobuf: [`proto_list`], [`watch`]), and decoding the cut
//! pieces in order on every core ([`ordered`]). Everything that every format shares lives here:
//! the batch sizes, the raw items of a list ([`RawItems`]), how protobuf objects are decoded
//! ([`ProtoItems`]), and the protocol of a list body being decoded ([`ListBody`]).

pub(super) mod json;
pub(super) mod json_list;
pub(super) mod ordered;
pub(super) mod proto_list;
pub(super) mod watch;

use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::reflector::{ListPage, ListWatchError};

/// Items per decoding job (and per batch handed on) while a list or a watch backlog arrives.
pub(super) const DECODE_BATCH: usize = 64;
/// Decoding jobs in flight at most, for a list or a watch (each holds one batch's bytes, about
/// 256 KB for pods).
pub(super) const DECODE_JOBS: usize = 4;

/// A list body being decoded as it arrives, in either wire format: JSON
/// ([`ListStreamDecoder`](json_list::ListStreamDecoder)) or protobuf ([`ProtoListDecoder`](proto_list::ProtoListDecoder)).
/// Both cut out complete items ([`RawItems`]) that are decoded elsewhere, in parallel.
pub(crate) trait ListBody<K>: Send {
    /// Feeds the next chunk of the body.
    fn push(&mut self, chunk: &[u8]);
    /// Whether the list is known to be of the expected kind, so items may leave early.
    fn kind_verified(&self) -> bool;
    /// The error that has failed the list so far.
    fn error(&self) -> Option<ListWatchError>;
    /// The complete items not decoded yet, if at least `min`.
    fn take_raw(&mut self, min: usize) -> Option<RawItems>;
    /// Ends the body: the page with the items not taken yet.
    fn finish(self: Box<Self>) -> Result<ListPage<Arc<K>>, ListWatchError>;
    /// The list's continue token, once its metadata has arrived before its items (as every
    /// API server sends it): the next page can be asked for while this one downloads.
    fn early_continue(&self) -> Option<&str>;
}

/// Complete list items, not decoded yet: their bytes back to back, JSON or (when `proto` names
/// the item message) protobuf messages, decoded straight into `K`.
#[derive(Debug)]
pub(crate) struct RawItems {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    /// The list index of the first item (for error messages).
    first: usize,
    proto: Option<ProtoItems>,
}

/// How protobuf items are decoded: their message, and whether `managedFields` is left out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProtoItems {
    pub(crate) msg: kinformer_proto::MessageRef,
    pub(crate) drop_managed_fields: bool,
    /// `(apiVersion, kind)` to present each item with: protobuf list items carry no type
    /// (a JSON list's `PartialObjectMetadata` items do, and kube's type keeps it).
    pub(crate) typed: Option<(&'static str, &'static str)>,
}

impl ProtoItems {
    /// The deserializer of one object's message `raw`, presented with `type_meta` (the
    /// `(apiVersion, kind)` its envelope carries) or else with [`typed`](Self::typed).
    pub(crate) fn deserializer<'de>(
        &self,
        raw: &'de [u8],
        type_meta: Option<(&'de str, &'de str)>,
    ) -> kinformer_proto::MessageDeserializer<'de> {
        let mut d = kinformer_proto::MessageDeserializer::new(self.msg, raw);
        if self.drop_managed_fields {
            d = d.without_managed_fields();
        }
        if let Some((api_version, kind)) = type_meta.or(self.typed) {
            d = d.typed(api_version, kind);
        }
        d
    }
}

impl RawItems {
    pub(crate) fn starting_at(first: usize, proto: Option<ProtoItems>) -> Self {
        Self {
            bytes: Vec::new(),
            ends: Vec::new(),
            first,
            proto,
        }
    }

    pub(crate) fn push(&mut self, item: &[u8]) {
        self.bytes.extend_from_slice(item);
        self.ends.push(self.bytes.len());
    }

    /// How many items.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Decodes every item into `K`, in order.
    ///
    /// A JSON item is cloned once after decoding: serde grows a `Vec` by doubling when the
    /// decoder cannot say how many elements come (JSON cannot), so a freshly decoded object
    /// holds spare capacity in every list it has, while its clone holds exactly what it needs.
    /// For a realistic Pod that is about 15% less memory for as long as it stays cached, for
    /// the price of one copy when it is listed. A protobuf item needs no copy: the protobuf
    /// decoder tells serde each list's exact length, so every `Vec` is allocated once at its
    /// final size.
    ///
    /// # Errors
    /// [`ListWatchError::Decode`] for the first item that does not decode.
    pub(crate) fn decode<K: DeserializeOwned + Clone>(
        &self,
        kind: &str,
    ) -> Result<Vec<Arc<K>>, ListWatchError> {
        let mut out = Vec::with_capacity(self.ends.len());
        let mut start = 0;
        for (i, &end) in self.ends.iter().enumerate() {
            let item = &self.bytes[start..end];
            crate::memory::grow_heap_ahead();
            let obj: K = match self.proto {
                None => serde_json::from_slice::<K>(item)
                    .map(|o| without_spare_capacity(&o))
                    .map_err(|e| e.to_string()),
                // protobuf straight into K: no JSON text in between
                Some(p) => {
                    K::deserialize(&mut p.deserializer(item, None)).map_err(|e| e.to_string())
                }
            }
            .map_err(|e| {
                ListWatchError::Decode(format!(
                    "cannot decode {kind}List: item {}: {e}",
                    self.first + i
                ))
            })?;
            out.push(Arc::new(obj));
            start = end;
        }
        Ok(out)
    }
}

/// A copy of `obj` whose lists hold exactly their elements (a clone allocates each `Vec` at
/// its length), for objects decoded from JSON, whose lists grew by doubling.
fn without_spare_capacity<K: Clone>(obj: &K) -> K {
    obj.clone()
}
