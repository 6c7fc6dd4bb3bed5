//! The walk as serde sees it: a message as a map, a repeated field as a sequence, a Go map as
//! a map of its entries by key, and one value as what its kind presents.

use std::collections::BTreeMap;

use base64::Engine;
use serde::de::{
    self, DeserializeSeed, Deserializer as _, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};

use super::walk::{Budget, MAX_DEPTH, Slot, Span, Truncate, bytes_of, entries, varint_of};
use crate::ProtoError;
use crate::gotime;
use crate::schema::{self, Kind};
use crate::wire::{Fields, WireValue, read_varint};

/// A message as a map: its entries are `next..end` of the walk's entry stack, and its
/// repeated values are on the value stack; it truncates both to where they were when it is
/// dropped.
pub(crate) struct Message<'a, 'de> {
    next: usize,
    end: usize,
    value: Option<Slot<'de>>,
    depth: usize,
    budget: &'a Budget<'de>,
    _slots: Truncate<'a, (&'static str, Slot<'de>)>,
    _vals: Truncate<'a, WireValue<'de>>,
}

impl<'a, 'de> Message<'a, 'de> {
    pub(crate) fn new(
        m: &'static schema::Message,
        buf: &'de [u8],
        depth: usize,
        budget: &'a Budget<'de>,
        typed: Option<(&'de str, &'de str)>,
    ) -> Result<Self, ProtoError> {
        let start = budget.slots.borrow().len();
        let mut msg = Message {
            next: start,
            end: start,
            value: None,
            depth,
            budget,
            _slots: Truncate(&budget.slots, start),
            _vals: Truncate(&budget.vals, budget.vals.borrow().len()),
        };
        if let Some((api_version, kind)) = typed {
            let mut slots = budget.slots.borrow_mut();
            slots.push(("apiVersion", Slot::Text(api_version)));
            slots.push(("kind", Slot::Text(kind)));
        }
        entries(m, buf, depth, budget)?;
        msg.end = budget.slots.borrow().len();
        Ok(msg)
    }
}

impl<'de> MapAccess<'de> for Message<'_, 'de> {
    type Error = ProtoError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ProtoError> {
        if self.next >= self.end {
            return Ok(None);
        }
        let (name, slot) = self.budget.slot(self.next)?;
        self.next += 1;
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
        Some(self.end.saturating_sub(self.next))
    }
}

/// The elements of a repeated field, a wrapper or a schema union's array: `vals` of the value
/// stack.
pub(crate) struct Seq<'a, 'de> {
    kind: Kind,
    vals: Span,
    /// Packed scalars still to read from the current occurrence.
    packed: &'de [u8],
    depth: usize,
    budget: &'a Budget<'de>,
    /// The values this sequence pushed itself (a wrapper's, a schema union's), truncated when
    /// it is dropped.
    _own: Option<Truncate<'a, WireValue<'de>>>,
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
            if self.vals.is_empty() {
                return Ok(None);
            }
            let v = self.budget.val(self.vals.start)?;
            self.vals.start += 1;
            match (self.kind, v) {
                (
                    Kind::Bool | Kind::I32 | Kind::I64 | Kind::U32 | Kind::U64 | Kind::F64,
                    WireValue::Bytes(b),
                ) => self.packed = b,
                _ => return self.element(seed, v).map(Some),
            }
        }
    }

    /// The exact number of elements still to come, so that a `Vec` is allocated once at its
    /// final size (serde's `Vec` takes this hint) and holds no spare capacity for as long as
    /// the object is cached: a packed run counts its varints (bytes without the continuation
    /// bit) or its 8-byte doubles.
    fn size_hint(&self) -> Option<usize> {
        let packed = |kind: Kind, b: &[u8]| {
            if kind == Kind::F64 {
                b.len() / 8
            } else {
                b.iter().filter(|&&x| x & 0x80 == 0).count()
            }
        };
        let scalar = matches!(
            self.kind,
            Kind::Bool | Kind::I32 | Kind::I64 | Kind::U32 | Kind::U64 | Kind::F64
        );
        let stack = self.budget.vals.borrow();
        let rest: usize = stack
            .get(self.vals.start..self.vals.end)
            .unwrap_or_default()
            .iter()
            .map(|v| match v {
                WireValue::Bytes(b) if scalar => packed(self.kind, b),
                _ => 1,
            })
            .sum();
        Some(packed(self.kind, self.packed) + rest)
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
pub(crate) struct Entries<'a, 'de> {
    pub(crate) kind: Kind,
    pub(crate) entries:
        std::collections::btree_map::IntoIter<std::borrow::Cow<'de, str>, Option<WireValue<'de>>>,
    pub(crate) value: Option<Option<WireValue<'de>>>,
    pub(crate) depth: usize,
    pub(crate) budget: &'a Budget<'de>,
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
            // Go's map decoding starts each value as an empty, non-nil named slice, and a
            // `[]byte` value as an empty, non-nil one (JSON `""`, not `null`)
            (None, Kind::Wrapper(ek)) => Slot::Repeated(*ek, Span::EMPTY),
            (None, Kind::Bytes) => Slot::Value(Kind::Bytes, WireValue::Bytes(&[])),
            (None, k) => Slot::Zero(k),
        };
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

/// One value.
pub(crate) struct Value<'a, 'de> {
    pub(crate) slot: Slot<'de>,
    pub(crate) depth: usize,
    pub(crate) budget: &'a Budget<'de>,
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

    /// Message `m` (an index into the walk's table) in `buf`.
    fn message<V: Visitor<'de>>(
        &self,
        m: u16,
        buf: &'de [u8],
        visitor: V,
    ) -> Result<V::Value, ProtoError> {
        visitor.visit_map(Message::new(
            self.budget.message(m),
            buf,
            self.depth + 1,
            self.budget,
            None,
        )?)
    }

    /// `vals` of the value stack as a sequence; `own` when this sequence pushed them itself.
    fn seq<V: Visitor<'de>>(
        &self,
        kind: Kind,
        vals: Span,
        own: bool,
        visitor: V,
    ) -> Result<V::Value, ProtoError> {
        visitor.visit_seq(Seq {
            kind,
            vals,
            packed: &[],
            depth: self.depth + 1,
            budget: self.budget,
            _own: own.then(|| Truncate(&self.budget.vals, vals.start)),
        })
    }

    /// The occurrences of field `num` in `buf`, pushed on the value stack (for
    /// [`seq`](Self::seq) with `own`). On an error, what was pushed stays until the
    /// enclosing message truncates the stack.
    fn push_occurrences(&self, buf: &'de [u8], num: u32) -> Result<Span, ProtoError> {
        let start = self.budget.vals.borrow().len();
        for r in Fields::new(buf) {
            let (n, x) = r?;
            if n == num {
                self.budget.vals.borrow_mut().push(x);
            }
        }
        Ok(self.budget.span_from(start))
    }

    fn zero<V: Visitor<'de>>(self, kind: Kind, visitor: V) -> Result<V::Value, ProtoError> {
        match kind {
            Kind::Str => visitor.visit_borrowed_str(""),
            Kind::Bool | Kind::SchemaOrBool(_) => visitor.visit_bool(false),
            Kind::I32 | Kind::I64 | Kind::IntOrString => visitor.visit_i64(0),
            Kind::U32 | Kind::U64 => visitor.visit_u64(0),
            Kind::F64 => visitor.visit_f64(0.0),
            Kind::Msg(mi) => self.message(mi, &[], visitor),
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
            Kind::Msg(mi) => self.message(mi, bytes_of(v)?, visitor),
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
                let text = if kind == Kind::Time {
                    gotime::format_time(secs)?
                } else {
                    gotime::format_micro_time(secs, nanos)?
                };
                visitor.visit_str(text.as_str())
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
                let start = self.budget.vals.borrow().len();
                let mut schema = None;
                for r in Fields::new(bytes_of(v)?) {
                    match r? {
                        (1, x) => schema = Some(bytes_of(x)?),
                        (2, x) => self.budget.vals.borrow_mut().push(x),
                        _ => {}
                    }
                }
                let many = self.budget.span_from(start);
                if !many.is_empty() {
                    let ek = if matches!(kind, Kind::SchemaOrArray(_)) {
                        Kind::Msg(p)
                    } else {
                        Kind::Str
                    };
                    self.seq(ek, many, true, visitor)
                } else if let Some(s) = schema {
                    self.message(p, s, visitor)
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
                    Some(s) => self.message(p, s, visitor),
                    None => visitor.visit_bool(allows),
                }
            }
            Kind::Wrapper(ek) => {
                let items = self.push_occurrences(bytes_of(v)?, 1)?;
                // a present wrapper is a non-nil slice, even with no items
                self.seq(*ek, items, true, visitor)
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
        match self.slot {
            Slot::Null => visitor.visit_unit(),
            Slot::Text(s) => visitor.visit_borrowed_str(s),
            Slot::Zero(k) => self.zero(k, visitor),
            Slot::Value(k, v) => self.present(k, v, visitor),
            Slot::Repeated(k, vals) => self.seq(k, vals, false, visitor),
            Slot::Map(vk, vals) => {
                let mut map: BTreeMap<std::borrow::Cow<'de, str>, Option<WireValue<'de>>> =
                    BTreeMap::new();
                for i in vals.start..vals.end {
                    let v = self.budget.val(i)?;
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
