//! Decoding a protobuf list response while it arrives (`application/vnd.kubernetes.protobuf`,
//! what client-go asks for built-in kinds): the `k8s\0` envelope, then `runtime.Unknown` whose
//! `raw` field holds the list message, whose `items` are length-delimited fields one after
//! another. Each item is cut out as soon as its last byte is in and handed on undecoded (its
//! bytes, [`RawItems`] marked protobuf), to be deserialized from its message straight into `K`
//! with the rest of its batch. Only the item in progress is buffered.
//!
//! The list's `metadata` is transcoded and parsed by the same code as a JSON list's envelope
//! ([`decode_list`]), so both wire formats are held to the same rules.

use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::json::{decode_list, is_list_of};
use super::{ListBody, ProtoItems, RawItems};
use crate::reflector::{ListPage, ListWatchError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the `k8s\0` magic.
    Magic,
    /// Among `runtime.Unknown`'s fields.
    Outer,
    /// Inside the list message, with this many of its bytes still to come.
    InList(usize),
}

/// An incremental decoder of one protobuf list body.
pub(crate) struct ProtoListDecoder<K> {
    kind: String,
    item: ProtoItems,
    max_object: usize,
    state: State,
    buf: Vec<u8>,
    /// Bytes of `buf` already consumed.
    pos: usize,
    raw: RawItems,
    count: usize,
    kind_verified: bool,
    saw_list: bool,
    meta: Vec<u8>,
    api_version: String,
    list_kind: String,
    error: Option<ListWatchError>,
    /// `metadata.continue`, read as soon as the list's metadata arrived.
    early_continue: Option<String>,
    _k: std::marker::PhantomData<fn() -> K>,
}

/// The part of a list's metadata needed to ask for the next page early.
#[derive(serde::Deserialize)]
struct ContinueOnly {
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

fn decode_err(kind: &str, why: impl std::fmt::Display) -> ListWatchError {
    ListWatchError::Decode(format!("cannot decode {kind}List (protobuf): {why}"))
}

/// A varint at the front of `b`: `(value, bytes used)`, `None` when incomplete.
fn varint(b: &[u8]) -> Result<Option<(u64, usize)>, &'static str> {
    let mut out = 0u64;
    for (i, &c) in b.iter().enumerate().take(10) {
        out |= u64::from(c & 0x7f) << (7 * i);
        if c & 0x80 == 0 {
            return Ok(Some((out, i + 1)));
        }
    }
    if b.len() >= 10 {
        return Err("varint longer than 10 bytes");
    }
    Ok(None)
}

/// One complete field at the front of `b`: `(number, wire type, payload range, bytes used)`;
/// `None` when more bytes are needed. A length-delimited payload over `max` is an error.
type FieldAt = (u64, u64, std::ops::Range<usize>, usize);

fn field(b: &[u8], max: usize) -> Result<Option<FieldAt>, ListWatchError> {
    let Some((key, k)) = varint(b).map_err(|e| ListWatchError::Decode(e.into()))? else {
        return Ok(None);
    };
    let (num, wire) = (key >> 3, key & 7);
    let rest = &b[k..];
    let (start, len) = match wire {
        0 => match varint(rest).map_err(|e| ListWatchError::Decode(e.into()))? {
            Some((_, n)) => (k, n),
            None => return Ok(None),
        },
        1 => (k, 8),
        5 => (k, 4),
        2 => match varint(rest).map_err(|e| ListWatchError::Decode(e.into()))? {
            Some((len, n)) => {
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                if len > max {
                    return Err(ListWatchError::TooLarge {
                        what: "a list item",
                        limit: max,
                    });
                }
                (k + n, len)
            }
            None => return Ok(None),
        },
        _ => {
            return Err(ListWatchError::Decode(
                "unsupported protobuf wire type".into(),
            ));
        }
    };
    if rest.len() + k < start + len {
        return Ok(None);
    }
    Ok(Some((num, wire, start..start + len, start + len)))
}

impl<K: DeserializeOwned + Clone> ProtoListDecoder<K> {
    /// A decoder for a protobuf list of `kind` whose items are decoded as `item` says, each at
    /// most `max_object` bytes.
    pub(crate) fn new(kind: &str, item: ProtoItems, max_object: usize) -> Self {
        Self {
            kind: kind.to_owned(),
            item,
            max_object,
            state: State::Magic,
            buf: Vec::new(),
            pos: 0,
            raw: RawItems::starting_at(0, Some(item)),
            count: 0,
            kind_verified: false,
            saw_list: false,
            meta: Vec::new(),
            api_version: String::new(),
            list_kind: String::new(),
            error: None,
            early_continue: None,
            _k: std::marker::PhantomData,
        }
    }

    fn fail(&mut self, e: ListWatchError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
        self.buf = Vec::new();
        self.pos = 0;
    }

    fn step(&mut self) -> Result<bool, ListWatchError> {
        let b = &self.buf[self.pos..];
        match self.state {
            State::Magic => {
                if b.len() < 4 {
                    return Ok(false);
                }
                if &b[..4] != kinformer_proto::MAGIC {
                    return Err(decode_err(&self.kind, "the body has no k8s envelope"));
                }
                self.pos += 4;
                self.state = State::Outer;
                Ok(true)
            }
            State::Outer => {
                // the list message itself (field 2) is entered without waiting for all of it
                if let Some((key, k)) = varint(b).map_err(|e| ListWatchError::Decode(e.into()))?
                    && key == (2 << 3) | 2
                {
                    let Some((len, n)) =
                        varint(&b[k..]).map_err(|e| ListWatchError::Decode(e.into()))?
                    else {
                        return Ok(false);
                    };
                    if self.saw_list {
                        return Err(decode_err(&self.kind, "two list messages"));
                    }
                    self.saw_list = true;
                    self.pos += k + n;
                    self.state = State::InList(usize::try_from(len).unwrap_or(usize::MAX));
                    return Ok(true);
                }
                let Some((num, wire, range, used)) = field(b, self.max_object)? else {
                    return Ok(false);
                };
                if num == 1 && wire == 2 {
                    let env = {
                        let mut e = kinformer_proto::MAGIC.to_vec();
                        e.extend_from_slice(&b[..used]);
                        e
                    };
                    let parsed = kinformer_proto::Envelope::parse(&env)
                        .map_err(|e| decode_err(&self.kind, e))?;
                    self.api_version = parsed.api_version.to_owned();
                    self.list_kind = parsed.kind.to_owned();
                    if !is_list_of(&self.list_kind, &self.kind) {
                        return Err(ListWatchError::Decode(format!(
                            "unexpected list kind {:?}, expected \"{}List\"",
                            self.list_kind, self.kind
                        )));
                    }
                    self.kind_verified = true;
                }
                let _ = range;
                self.pos += used;
                Ok(true)
            }
            State::InList(0) => {
                self.state = State::Outer;
                Ok(true)
            }
            State::InList(left) => {
                let Some((num, wire, range, used)) = field(b, self.max_object)? else {
                    if b.len() >= left {
                        return Err(decode_err(&self.kind, "a field runs past the list"));
                    }
                    return Ok(false);
                };
                if used > left {
                    return Err(decode_err(&self.kind, "a field runs past the list"));
                }
                match (num, wire) {
                    (1, 2) => {
                        self.meta = b[range].to_vec();
                        self.early_continue = kinformer_proto::list_meta_to_json(&self.meta)
                            .ok()
                            .and_then(|json| serde_json::from_slice::<ContinueOnly>(&json).ok())
                            .and_then(|m| m.continue_token)
                            .filter(|c| !c.is_empty());
                    }
                    (2, 2) => {
                        let item = &b[range];
                        self.raw.push(item);
                        self.count += 1;
                    }
                    (1 | 2, _) => {
                        return Err(decode_err(
                            &self.kind,
                            "a list field of the wrong wire type",
                        ));
                    }
                    _ => {}
                }
                self.pos += used;
                self.state = State::InList(left - used);
                Ok(true)
            }
        }
    }
}

impl<K: DeserializeOwned + Clone + Send + 'static> ListBody<K> for ProtoListDecoder<K> {
    fn push(&mut self, chunk: &[u8]) {
        if self.error.is_some() {
            return;
        }
        self.buf.extend_from_slice(chunk);
        loop {
            match self.step() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    self.fail(e);
                    return;
                }
            }
        }
        // keep only the field in progress
        if self.pos > 0 && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        if self.buf.len() - self.pos > self.max_object.saturating_add(64) {
            self.fail(ListWatchError::TooLarge {
                what: "a list item",
                limit: self.max_object,
            });
        }
    }

    fn kind_verified(&self) -> bool {
        self.kind_verified && self.error.is_none()
    }

    fn error(&self) -> Option<ListWatchError> {
        self.error.clone()
    }

    fn take_raw(&mut self, min: usize) -> Option<RawItems> {
        (self.error.is_none() && !self.raw.is_empty() && self.raw.len() >= min).then(|| {
            std::mem::replace(
                &mut self.raw,
                RawItems::starting_at(self.count, Some(self.item)),
            )
        })
    }

    fn early_continue(&self) -> Option<&str> {
        self.early_continue
            .as_deref()
            .filter(|_| self.kind_verified && self.error.is_none())
    }

    fn finish(mut self: Box<Self>) -> Result<ListPage<Arc<K>>, ListWatchError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if self.state != State::Outer || self.pos != self.buf.len() || !self.kind_verified {
            return Err(decode_err(&self.kind, "the body ends inside the list"));
        }
        let meta = kinformer_proto::list_meta_to_json(&self.meta)
            .map_err(|e| decode_err(&self.kind, e))?;
        let mut envelope = Vec::with_capacity(meta.len() + 64);
        envelope.extend_from_slice(b"{\"apiVersion\":");
        let _ = serde_json::to_writer(&mut envelope, &self.api_version);
        envelope.extend_from_slice(b",\"kind\":");
        let _ = serde_json::to_writer(&mut envelope, &self.list_kind);
        envelope.extend_from_slice(b",\"metadata\":");
        envelope.extend_from_slice(&meta);
        envelope.extend_from_slice(b",\"items\":[]}");
        let page = decode_list::<K>(&envelope, &self.kind)?;
        let items = self.raw.decode::<K>(&self.kind)?;
        Ok(ListPage {
            items,
            resource_version: page.resource_version,
            continue_token: page.continue_token,
            remaining_item_count: page.remaining_item_count,
            shard_info: page.shard_info,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use kinformer_proto::MessageRef;
    use serde_json::json;

    fn pod_list(n: usize) -> Vec<u8> {
        let items: Vec<_> = (0..n)
            .map(|i| json!({"metadata": {"name": format!("p{i}"), "namespace": "ns"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}))
            .collect();
        let list = json!({"apiVersion": "v1", "kind": "PodList",
            "metadata": {"resourceVersion": "42", "continue": "next"}, "items": items});
        kinformer_proto::object_from_json(&list).unwrap()
    }

    fn decoder(max: usize) -> Box<dyn ListBody<Pod>> {
        let msg = MessageRef::for_kind("v1", "Pod").unwrap();
        let item = ProtoItems {
            msg,
            drop_managed_fields: false,
            typed: None,
        };
        Box::new(ProtoListDecoder::<Pod>::new("Pod", item, max))
    }

    fn decode_in_chunks(body: &[u8], chunk: usize) -> Result<ListPage<Arc<Pod>>, ListWatchError> {
        let mut d = decoder(1 << 20);
        let mut taken = Vec::new();
        for c in body.chunks(chunk) {
            d.push(c);
            if let Some(raw) = d.take_raw(2) {
                taken.extend(raw.decode::<Pod>("Pod")?);
            }
        }
        let mut page = d.finish()?;
        taken.append(&mut page.items);
        page.items = taken;
        Ok(page)
    }

    /// A metadata-only list in protobuf (what a real kube-apiserver answers client-go's
    /// metadata client): items carry no type on the wire; each is presented as a
    /// `meta.k8s.io/v1` `PartialObjectMetadata`, as in a JSON list.
    #[test]
    fn metadata_items_decode_typed_with_or_without_managed_fields() {
        use kube::core::PartialObjectMeta;
        let list = kinformer_proto::object_from_json(&json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
            "metadata": {"resourceVersion": "9"},
            "items": [{"metadata": {"name": "p", "namespace": "ns", "managedFields": [
                {"manager": "m", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}]}}]
        }))
        .unwrap();
        let msg = MessageRef::for_kind("meta.k8s.io/v1", "PartialObjectMetadata").unwrap();
        for drop in [false, true] {
            let item = ProtoItems {
                msg,
                drop_managed_fields: drop,
                typed: Some(("meta.k8s.io/v1", "PartialObjectMetadata")),
            };
            let mut d: Box<dyn ListBody<PartialObjectMeta<Pod>>> =
                Box::new(ProtoListDecoder::<PartialObjectMeta<Pod>>::new(
                    "PartialObjectMetadata",
                    item,
                    1 << 20,
                ));
            d.push(&list);
            let page = d.finish().unwrap();
            assert_eq!(page.resource_version, "9");
            let obj = &page.items[0];
            let types = obj.types.as_ref().expect("typed");
            assert_eq!(
                (types.api_version.as_str(), types.kind.as_str()),
                ("meta.k8s.io/v1", "PartialObjectMetadata")
            );
            assert_eq!(obj.metadata.name.as_deref(), Some("p"));
            assert_eq!(obj.metadata.managed_fields.is_none(), drop, "drop = {drop}");
        }
    }

    /// A listed object is cached as decoded, so a `Vec` grown by doubling would keep its
    /// spare capacity for as long as the object stays cached. Protobuf items are decoded at
    /// their final sizes; JSON items (whose decoder cannot know the lengths) are copied once.
    #[test]
    fn listed_objects_hold_no_spare_capacity_in_either_wire_format() {
        let containers: Vec<_> = (0..5)
            .map(|i| {
                json!({"name": format!("c{i}"), "image": "i", "args": ["a", "b", "c"],
                "ports": [{"containerPort": 1}, {"containerPort": 2}, {"containerPort": 3}]})
            })
            .collect();
        let list = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "1"},
            "items": [{"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": containers}}]});
        let proto = decode_in_chunks(&kinformer_proto::object_from_json(&list).unwrap(), 64)
            .unwrap()
            .items;
        let mut d = crate::source::decode::json_list::ListStreamDecoder::<Pod>::new("Pod", 1 << 20);
        d.push(&serde_json::to_vec(&list).unwrap());
        let json = Box::new(d).finish().unwrap().items;
        for (format, items) in [("protobuf", proto), ("JSON", json)] {
            let spec = items[0].spec.as_ref().unwrap();
            let c = &spec.containers;
            assert_eq!((c.len(), c.capacity()), (5, 5), "{format}: containers");
            for c in c {
                let ports = c.ports.as_ref().unwrap();
                let args = c.args.as_ref().unwrap();
                assert_eq!((ports.len(), ports.capacity()), (3, 3), "{format}: ports");
                assert_eq!((args.len(), args.capacity()), (3, 3), "{format}: args");
            }
        }
    }

    #[test]
    fn the_continue_token_is_known_before_the_items_arrive() {
        let body = pod_list(50);
        let mut d = decoder(1 << 20);
        let mut known_at = None;
        for (i, c) in body.chunks(16).enumerate() {
            d.push(c);
            if known_at.is_none() && d.early_continue().is_some() {
                known_at = Some(i * 16);
                assert_eq!(d.early_continue(), Some("next"));
            }
        }
        let at = known_at.expect("the token was never known early");
        assert!(at < 128, "known only at byte {at} of {}", body.len());
        assert_eq!(d.finish().unwrap().continue_token.as_deref(), Some("next"));
    }

    #[test]
    fn any_chunking_gives_the_whole_list() {
        let body = pod_list(7);
        for chunk in [1, 2, 3, 7, 64, body.len()] {
            let page = decode_in_chunks(&body, chunk).unwrap();
            let names: Vec<_> = page
                .items
                .iter()
                .map(|p| p.metadata.name.clone().unwrap())
                .collect();
            assert_eq!(
                names,
                (0..7).map(|i| format!("p{i}")).collect::<Vec<_>>(),
                "chunk {chunk}"
            );
            assert_eq!(page.resource_version, "42");
            assert_eq!(page.continue_token.as_deref(), Some("next"));
        }
    }

    #[test]
    fn managed_fields_are_left_out_when_asked() {
        let pod = json!({"metadata": {"name": "p", "managedFields": [{"manager": "m", "operation": "Update",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}]}});
        let list = kinformer_proto::object_from_json(
            &json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": [pod]}),
        )
        .unwrap();
        let msg = MessageRef::for_kind("v1", "Pod").unwrap();
        for drop in [false, true] {
            let item = ProtoItems {
                msg,
                drop_managed_fields: drop,
                typed: None,
            };
            let mut d: Box<dyn ListBody<Pod>> =
                Box::new(ProtoListDecoder::<Pod>::new("Pod", item, 1 << 20));
            d.push(&list);
            let page = d.finish().unwrap();
            let mf = page.items[0].metadata.managed_fields.as_ref();
            assert_eq!(mf.is_none(), drop, "drop = {drop}");
            assert_eq!(page.items[0].metadata.name.as_deref(), Some("p"));
        }
    }

    #[test]
    fn a_cut_body_another_kind_and_an_oversized_item_fail_the_list() {
        let body = pod_list(3);
        for cut in [3, 10, body.len() / 2, body.len() - 1] {
            assert!(
                decode_in_chunks(&body[..cut], 5).unwrap_err().is_decode(),
                "cut at {cut}"
            );
        }
        let cms = kinformer_proto::object_from_json(
            &json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {}, "items": []}),
        )
        .unwrap();
        assert!(decode_in_chunks(&cms, 4).unwrap_err().is_decode());
        let mut d = decoder(16);
        d.push(&body);
        assert!(matches!(d.error(), Some(ListWatchError::TooLarge { .. })));
        assert!(
            decode_in_chunks(b"{\"kind\":\"PodList\"}", 4)
                .unwrap_err()
                .is_decode()
        );
    }
}
