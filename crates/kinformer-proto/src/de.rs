//! Protobuf as a serde [`Deserializer`]: the one walk of a message with Go's semantics (absent
//! fields are Go's zero values, nil for pointers, slices and maps; `omitempty`; inline structs;
//! the special types' own forms), presented as the JSON object Go would write for it. Serde
//! types (k8s-openapi's, `DynamicObject`, `serde_json::Value`) deserialize from it directly,
//! with no JSON text in between, and the JSON writer ([`crate::message_to_json`]) is this walk
//! transcoded into `serde_json`'s serializer.

use std::cell::Cell;
use std::collections::BTreeMap;

use base64::Engine;
use serde::de::{
    self, DeserializeSeed, Deserializer as _, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};

use crate::ProtoError;
use crate::gotime;
use crate::schema::{Field, Kind, MessageRef};
use crate::wire::{Fields, WireValue, read_varint};

/// How deep messages may nest (JSON schemas nest; nothing real comes near this).
pub(crate) const MAX_DEPTH: usize = 100;

impl de::Error for ProtoError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        ProtoError::Json(msg.to_string())
    }
}

/// One walk's state: what it may still emit (each value costs one unit, so input that expands,
/// such as many empty messages each standing for a zero-valued struct, is bounded by its own
/// size), and whether `metadata.managedFields` is left out.
pub(crate) struct Budget {
    left: Cell<usize>,
    drop_managed_fields: bool,
}

impl Budget {
    pub(crate) fn exhausted(&self) -> bool {
        self.left.get() == 0
    }

    pub(crate) fn for_input(len: usize) -> Budget {
        Budget {
            left: Cell::new(len.saturating_mul(4).saturating_add(1 << 16)),
            drop_managed_fields: false,
        }
    }

    fn spend(&self) -> Result<(), ProtoError> {
        let left = self.left.get();
        if left == 0 {
            return Err(ProtoError::TooLarge);
        }
        self.left.set(left - 1);
        Ok(())
    }

    /// Whether field `f` of `m` is left out of this walk.
    fn skips(&self, m: MessageRef, f: &Field) -> bool {
        self.drop_managed_fields && f.json == "managedFields" && m.name() == "meta/v1.ObjectMeta"
    }
}

/// One value to present.
#[derive(Clone)]
enum Slot<'de> {
    /// `null` (a nil pointer, slice or map).
    Null,
    /// Go's zero value of the kind.
    Zero(Kind),
    /// A present value.
    Value(Kind, WireValue<'de>),
    /// A repeated field's occurrences (elements may be packed).
    Repeated(Kind, Vec<WireValue<'de>>),
    /// A map's entries (`{1: key, 2: value}` messages).
    Map(Kind, Vec<WireValue<'de>>),
    /// A string given as such (the type fields of a typed object).
    Text(&'de str),
}

fn bytes_of(v: WireValue<'_>) -> Result<&[u8], ProtoError> {
    match v {
        WireValue::Bytes(b) => Ok(b),
        _ => Err(ProtoError::Malformed("wire type does not match the field")),
    }
}

fn varint_of(v: WireValue<'_>) -> Result<u64, ProtoError> {
    match v {
        WireValue::Varint(n) => Ok(n),
        _ => Err(ProtoError::Malformed("wire type does not match the field")),
    }
}

/// Kinds whose Go zero value `omitempty` leaves out (not structs: omitempty keeps those).
fn scalar(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Str | Kind::Bool | Kind::I32 | Kind::I64 | Kind::U32 | Kind::U64 | Kind::F64
    )
}

/// Whether a present value is one `omitempty` leaves out: a non-pointer scalar at its zero
/// value, or an empty slice.
fn omitted(f: &Field, v: WireValue<'_>) -> bool {
    match (f.kind, v) {
        (Kind::Bytes | Kind::Wrapper(_), WireValue::Bytes(b)) => b.is_empty(),
        _ if f.pointer() => false,
        (Kind::Str, WireValue::Bytes(b)) => b.is_empty(),
        (Kind::Bool | Kind::I32 | Kind::I64 | Kind::U32 | Kind::U64, WireValue::Varint(x)) => {
            x == 0
        }
        (Kind::F64, WireValue::Fixed64(x)) => f64::from_bits(x) == 0.0,
        _ => false,
    }
}

/// The fields of message `m` in `buf` as `(JSON name, value)` in the order Go writes them,
/// inline structs flattened in place. A singular field that occurs more than once takes its
/// last occurrence.
fn entries<'de>(
    m: MessageRef,
    buf: &'de [u8],
    depth: usize,
    budget: &Budget,
    out: &mut Vec<(&'static str, Slot<'de>)>,
) -> Result<(), ProtoError> {
    if depth > MAX_DEPTH {
        return Err(ProtoError::Malformed("nested too deeply"));
    }
    let fields = m.get().fields;
    let mut occ: Vec<(usize, WireValue<'de>)> = Vec::new();
    for r in Fields::new(buf) {
        let (num, v) = r?;
        // unknown fields are skipped, as Go's generated Unmarshal skips them
        if let Some(i) = fields.iter().position(|f| f.num == num) {
            occ.push((i, v));
        }
    }
    occ.sort_by_key(|(i, _)| *i);
    let mut at = 0;
    for (i, f) in fields.iter().enumerate() {
        let from = at;
        while at < occ.len() && occ[at].0 == i {
            at += 1;
        }
        let vals = &occ[from..at];
        if f.inline() {
            let Kind::Msg(mi) = f.kind else {
                return Err(ProtoError::Malformed("inline field is not a message"));
            };
            let b = match vals.last() {
                Some((_, v)) => bytes_of(*v)?,
                None => &[],
            };
            entries(MessageRef(mi), b, depth + 1, budget, out)?;
            continue;
        }
        if budget.skips(m, f) {
            continue;
        }
        let nil = |out: &mut Vec<(&'static str, Slot<'de>)>| {
            if !f.omitempty() {
                out.push((f.json, Slot::Null));
            }
        };
        if f.repeated() || matches!(f.kind, Kind::Map(_)) {
            if vals.is_empty() {
                nil(out);
                continue;
            }
            let vs = vals.iter().map(|(_, v)| *v).collect();
            out.push((
                f.json,
                match f.kind {
                    Kind::Map(vk) => Slot::Map(*vk, vs),
                    k => Slot::Repeated(k, vs),
                },
            ));
            continue;
        }
        match vals.last() {
            None if f.pointer() => nil(out),
            None => {
                if !(f.omitempty() && scalar(f.kind)) {
                    out.push((f.json, Slot::Zero(f.kind)));
                }
            }
            Some((_, v)) => {
                if !(f.omitempty() && omitted(f, *v)) {
                    out.push((f.json, Slot::Value(f.kind, *v)));
                }
            }
        }
    }
    Ok(())
}

/// A message presented as a map.
struct Message<'a, 'de> {
    entries: std::vec::IntoIter<(&'static str, Slot<'de>)>,
    value: Option<Slot<'de>>,
    depth: usize,
    budget: &'a Budget,
}

impl<'a, 'de> Message<'a, 'de> {
    fn new(
        m: MessageRef,
        buf: &'de [u8],
        depth: usize,
        budget: &'a Budget,
        typed: Option<(&'de str, &'de str)>,
    ) -> Result<Self, ProtoError> {
        let mut out = Vec::with_capacity(m.get().fields.len() + 2);
        if let Some((api_version, kind)) = typed {
            out.push(("apiVersion", Slot::Text(api_version)));
            out.push(("kind", Slot::Text(kind)));
        }
        entries(m, buf, depth, budget, &mut out)?;
        Ok(Message {
            entries: out.into_iter(),
            value: None,
            depth,
            budget,
        })
    }
}

impl<'de> MapAccess<'de> for Message<'_, 'de> {
    type Error = ProtoError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ProtoError> {
        let Some((name, slot)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(slot);
        seed.deserialize(de::value::BorrowedStrDeserializer::new(name))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, ProtoError> {
        let slot = self
            .value
            .take()
            .ok_or(ProtoError::Malformed("a value without a key"))?;
        seed.deserialize(Value {
            slot,
            depth: self.depth,
            budget: self.budget,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// The elements of a repeated field, a wrapper or a schema union's array.
struct Seq<'a, 'de> {
    kind: Kind,
    vals: std::vec::IntoIter<WireValue<'de>>,
    /// Packed scalars still to read from the current occurrence.
    packed: &'de [u8],
    depth: usize,
    budget: &'a Budget,
}

impl<'de> SeqAccess<'de> for Seq<'_, 'de> {
    type Error = ProtoError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ProtoError> {
        loop {
            if !self.packed.is_empty() {
                let v = if self.kind == Kind::F64 {
                    let (b, rest) = self
                        .packed
                        .split_first_chunk::<8>()
                        .ok_or(ProtoError::Malformed("packed doubles"))?;
                    self.packed = rest;
                    WireValue::Fixed64(u64::from_le_bytes(*b))
                } else {
                    WireValue::Varint(read_varint(&mut self.packed)?)
                };
                return self.element(seed, v).map(Some);
            }
            let Some(v) = self.vals.next() else {
                return Ok(None);
            };
            match (self.kind, v) {
                (
                    Kind::Bool | Kind::I32 | Kind::I64 | Kind::U32 | Kind::U64 | Kind::F64,
                    WireValue::Bytes(b),
                ) => self.packed = b,
                _ => return self.element(seed, v).map(Some),
            }
        }
    }
}

impl<'de> Seq<'_, 'de> {
    fn element<T: DeserializeSeed<'de>>(
        &self,
        seed: T,
        v: WireValue<'de>,
    ) -> Result<T::Value, ProtoError> {
        seed.deserialize(Value {
            slot: Slot::Value(self.kind, v),
            depth: self.depth,
            budget: self.budget,
        })
    }
}

/// A map's entries, by key (as Go writes maps), the last of duplicate keys winning.
struct Entries<'a, 'de> {
    kind: Kind,
    entries:
        std::collections::btree_map::IntoIter<std::borrow::Cow<'de, str>, Option<WireValue<'de>>>,
    value: Option<Option<WireValue<'de>>>,
    depth: usize,
    budget: &'a Budget,
}

impl<'de> MapAccess<'de> for Entries<'_, 'de> {
    type Error = ProtoError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ProtoError> {
        let Some((k, v)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(v);
        match k {
            std::borrow::Cow::Borrowed(s) => {
                seed.deserialize(de::value::BorrowedStrDeserializer::new(s))
            }
            std::borrow::Cow::Owned(s) => seed.deserialize(s.into_deserializer()),
        }
        .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, ProtoError> {
        let v = self
            .value
            .take()
            .ok_or(ProtoError::Malformed("a value without a key"))?;
        let slot = match (v, self.kind) {
            (Some(v), k) => Slot::Value(k, v),
            // Go's map decoding starts each value as an empty, non-nil named slice
            (None, Kind::Wrapper(ek)) => Slot::Repeated(*ek, Vec::new()),
            (None, k) => Slot::Zero(k),
        };
        seed.deserialize(Value {
            slot,
            depth: self.depth,
            budget: self.budget,
        })
    }
}

/// One value.
struct Value<'a, 'de> {
    slot: Slot<'de>,
    depth: usize,
    budget: &'a Budget,
}

impl<'a, 'de> Value<'a, 'de> {
    fn is_null(&self) -> bool {
        match &self.slot {
            Slot::Null => true,
            Slot::Zero(k) => matches!(
                k,
                Kind::Time
                    | Kind::MicroTime
                    | Kind::RawJson
                    | Kind::SchemaOrArray(_)
                    | Kind::SchemaOrStringArray(_)
                    | Kind::Bytes
                    | Kind::Map(_)
                    | Kind::Wrapper(_)
            ),
            _ => false,
        }
    }

    fn message<V: Visitor<'de>>(
        &self,
        m: MessageRef,
        buf: &'de [u8],
        visitor: V,
    ) -> Result<V::Value, ProtoError> {
        visitor.visit_map(Message::new(m, buf, self.depth + 1, self.budget, None)?)
    }

    fn seq<V: Visitor<'de>>(
        &self,
        kind: Kind,
        vals: Vec<WireValue<'de>>,
        visitor: V,
    ) -> Result<V::Value, ProtoError> {
        visitor.visit_seq(Seq {
            kind,
            vals: vals.into_iter(),
            packed: &[],
            depth: self.depth + 1,
            budget: self.budget,
        })
    }

    fn zero<V: Visitor<'de>>(self, kind: Kind, visitor: V) -> Result<V::Value, ProtoError> {
        match kind {
            Kind::Str => visitor.visit_borrowed_str(""),
            Kind::Bool | Kind::SchemaOrBool(_) => visitor.visit_bool(false),
            Kind::I32 | Kind::I64 | Kind::IntOrString => visitor.visit_i64(0),
            Kind::U32 | Kind::U64 => visitor.visit_u64(0),
            Kind::F64 => visitor.visit_f64(0.0),
            Kind::Msg(mi) => self.message(MessageRef(mi), &[], visitor),
            Kind::Duration => visitor.visit_borrowed_str("0s"),
            Kind::Quantity => visitor.visit_borrowed_str("0"),
            _ => visitor.visit_unit(),
        }
    }

    fn present<V: Visitor<'de>>(
        self,
        kind: Kind,
        v: WireValue<'de>,
        visitor: V,
    ) -> Result<V::Value, ProtoError> {
        match kind {
            Kind::Str => str_value(bytes_of(v)?, visitor),
            Kind::Bytes => {
                visitor.visit_string(base64::engine::general_purpose::STANDARD.encode(bytes_of(v)?))
            }
            Kind::Bool => visitor.visit_bool(varint_of(v)? != 0),
            Kind::I32 => visitor.visit_i64(i64::from(varint_of(v)? as i64 as i32)),
            Kind::I64 => visitor.visit_i64(varint_of(v)? as i64),
            Kind::U32 => visitor.visit_u64(u64::from(varint_of(v)? as u32)),
            Kind::U64 => visitor.visit_u64(varint_of(v)?),
            Kind::F64 => {
                let WireValue::Fixed64(bits) = v else {
                    return Err(ProtoError::Malformed("wire type does not match the field"));
                };
                let x = f64::from_bits(bits);
                if !x.is_finite() {
                    return Err(ProtoError::Malformed("a float that JSON cannot hold"));
                }
                visitor.visit_f64(x)
            }
            Kind::Msg(mi) => self.message(MessageRef(mi), bytes_of(v)?, visitor),
            Kind::Time | Kind::MicroTime => {
                let b = bytes_of(v)?;
                if b.is_empty() {
                    return visitor.visit_unit();
                }
                let (mut secs, mut nanos) = (0i64, 0i32);
                for r in Fields::new(b) {
                    match r? {
                        (1, x) => secs = varint_of(x)? as i64,
                        (2, x) => nanos = varint_of(x)? as i64 as i32,
                        _ => {}
                    }
                }
                visitor.visit_string(if kind == Kind::Time {
                    gotime::format_time(secs)?
                } else {
                    gotime::format_micro_time(secs, nanos)?
                })
            }
            Kind::Duration => {
                let mut d = 0i64;
                for r in Fields::new(bytes_of(v)?) {
                    if let (1, x) = r? {
                        d = varint_of(x)? as i64;
                    }
                }
                visitor.visit_string(gotime::format_duration(d))
            }
            Kind::Quantity => {
                let mut s: &'de [u8] = b"0";
                for r in Fields::new(bytes_of(v)?) {
                    if let (1, x) = r? {
                        s = bytes_of(x)?;
                    }
                }
                str_value(if s.is_empty() { b"0" } else { s }, visitor)
            }
            Kind::IntOrString => {
                let (mut ty, mut int, mut st): (u64, i32, &'de [u8]) = (0, 0, &[]);
                for r in Fields::new(bytes_of(v)?) {
                    match r? {
                        (1, x) => ty = varint_of(x)?,
                        (2, x) => int = varint_of(x)? as i64 as i32,
                        (3, x) => st = bytes_of(x)?,
                        _ => {}
                    }
                }
                if ty == 1 {
                    str_value(st, visitor)
                } else {
                    visitor.visit_i64(i64::from(int))
                }
            }
            Kind::RawJson => {
                let mut raw: &'de [u8] = &[];
                for r in Fields::new(bytes_of(v)?) {
                    if let (1, x) = r? {
                        raw = bytes_of(x)?;
                    }
                }
                if raw.is_empty() {
                    return visitor.visit_unit();
                }
                let mut d = serde_json::Deserializer::from_slice(raw);
                let out = d
                    .deserialize_any(visitor)
                    .map_err(|e| ProtoError::Json(format!("embedded raw JSON: {e}")))?;
                d.end()
                    .map_err(|e| ProtoError::Json(format!("embedded raw JSON: {e}")))?;
                Ok(out)
            }
            Kind::SchemaOrArray(p) | Kind::SchemaOrStringArray(p) => {
                let mut schema = None;
                let mut many = Vec::new();
                for r in Fields::new(bytes_of(v)?) {
                    match r? {
                        (1, x) => schema = Some(bytes_of(x)?),
                        (2, x) => many.push(x),
                        _ => {}
                    }
                }
                if !many.is_empty() {
                    let ek = if matches!(kind, Kind::SchemaOrArray(_)) {
                        Kind::Msg(p)
                    } else {
                        Kind::Str
                    };
                    self.seq(ek, many, visitor)
                } else if let Some(s) = schema {
                    self.message(MessageRef(p), s, visitor)
                } else {
                    visitor.visit_unit()
                }
            }
            Kind::SchemaOrBool(p) => {
                let (mut allows, mut schema) = (false, None);
                for r in Fields::new(bytes_of(v)?) {
                    match r? {
                        (1, x) => allows = varint_of(x)? != 0,
                        (2, x) => schema = Some(bytes_of(x)?),
                        _ => {}
                    }
                }
                match schema {
                    Some(s) => self.message(MessageRef(p), s, visitor),
                    None => visitor.visit_bool(allows),
                }
            }
            Kind::Wrapper(ek) => {
                let mut items = Vec::new();
                for r in Fields::new(bytes_of(v)?) {
                    if let (1, x) = r? {
                        items.push(x);
                    }
                }
                // a present wrapper is a non-nil slice, even with no items
                self.seq(*ek, items, visitor)
            }
            Kind::Map(_) => Err(ProtoError::Malformed("a map inside a map")),
        }
    }
}

fn str_value<'de, V: Visitor<'de>>(b: &'de [u8], visitor: V) -> Result<V::Value, ProtoError> {
    match std::str::from_utf8(b) {
        Ok(s) => visitor.visit_borrowed_str(s),
        // Go's encoding/json writes invalid UTF-8 as U+FFFD
        Err(_) => visitor.visit_string(String::from_utf8_lossy(b).into_owned()),
    }
}

impl<'de> de::Deserializer<'de> for Value<'_, 'de> {
    type Error = ProtoError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtoError> {
        self.budget.spend()?;
        if self.depth > MAX_DEPTH {
            return Err(ProtoError::Malformed("nested too deeply"));
        }
        match self.slot.clone() {
            Slot::Null => visitor.visit_unit(),
            Slot::Text(s) => visitor.visit_borrowed_str(s),
            Slot::Zero(k) => self.zero(k, visitor),
            Slot::Value(k, v) => self.present(k, v, visitor),
            Slot::Repeated(k, vals) => self.seq(k, vals, visitor),
            Slot::Map(vk, vals) => {
                let mut map: BTreeMap<std::borrow::Cow<'de, str>, Option<WireValue<'de>>> =
                    BTreeMap::new();
                for v in vals {
                    let mut key: &'de [u8] = &[];
                    let mut val = None;
                    for r in Fields::new(bytes_of(v)?) {
                        match r? {
                            (1, k) => key = bytes_of(k)?,
                            (2, x) => val = Some(x),
                            _ => {}
                        }
                    }
                    map.insert(String::from_utf8_lossy(key), val);
                }
                visitor.visit_map(Entries {
                    kind: vk,
                    entries: map.into_iter(),
                    value: None,
                    depth: self.depth + 1,
                    budget: self.budget,
                })
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtoError> {
        if self.is_null() {
            return visitor.visit_none();
        }
        if let Slot::Value(Kind::Time | Kind::MicroTime | Kind::RawJson, WireValue::Bytes(b)) =
            &self.slot
            && b.is_empty()
        {
            return visitor.visit_none();
        }
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProtoError> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// A whole message as a serde deserializer: `K::deserialize(...)` builds `K` from protobuf
/// bytes with no JSON in between. `typed` adds `apiVersion` and `kind` first (an object
/// decoded from its envelope carries them; list items do not).
pub struct MessageDeserializer<'de> {
    msg: MessageRef,
    buf: &'de [u8],
    typed: Option<(&'de str, &'de str)>,
    budget: Budget,
}

impl<'de> MessageDeserializer<'de> {
    /// Message `msg` in `buf`.
    pub fn new(msg: MessageRef, buf: &'de [u8]) -> MessageDeserializer<'de> {
        MessageDeserializer {
            msg,
            buf,
            typed: None,
            budget: Budget::for_input(buf.len()),
        }
    }

    pub(crate) fn input_len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn budget_exhausted(&self) -> bool {
        self.budget.exhausted()
    }

    /// The same, leaving `metadata.managedFields` out (it is never read, so it costs neither
    /// time nor memory): what a cache that strips managedFields would keep anyway.
    pub fn without_managed_fields(mut self) -> MessageDeserializer<'de> {
        self.budget.drop_managed_fields = true;
        self
    }

    /// The same, presented with `apiVersion` and `kind` first.
    pub fn typed(mut self, api_version: &'de str, kind: &'de str) -> MessageDeserializer<'de> {
        self.typed = Some((api_version, kind));
        self
    }
}

impl<'de> de::Deserializer<'de> for &mut MessageDeserializer<'de> {
    type Error = ProtoError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtoError> {
        visitor.visit_map(Message::new(
            self.msg,
            self.buf,
            0,
            &self.budget,
            self.typed,
        )?)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtoError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProtoError> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}
