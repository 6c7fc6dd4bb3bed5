//! One value of the walk as a serde deserializer: what each kind presents, present or absent.

use std::collections::BTreeMap;

use base64::Engine;
use serde::de::{self, Deserializer as _, Visitor};

use super::access::{Entries, Message, Seq};
use super::{Budget, MAX_DEPTH, Slot, bytes_of, varint_of};
use crate::ProtoError;
use crate::gotime;
use crate::schema::{Kind, MessageRef};
use crate::wire::{Fields, WireValue};

/// One value.
pub(crate) struct Value<'a, 'de> {
    pub(crate) slot: Slot<'de>,
    pub(crate) depth: usize,
    pub(crate) budget: &'a Budget,
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
