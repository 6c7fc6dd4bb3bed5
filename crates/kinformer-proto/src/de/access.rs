//! The walk's containers as serde sees them: a message as a map, a repeated field as a
//! sequence, a Go map as a map of its entries by key.

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess};

use super::value::Value;
use super::{Budget, Slot, entries};
use crate::ProtoError;
use crate::schema::{Kind, MessageRef};
use crate::wire::{WireValue, read_varint};

pub(crate) struct Message<'a, 'de> {
    pub(crate) entries: std::vec::IntoIter<(&'static str, Slot<'de>)>,
    pub(crate) value: Option<Slot<'de>>,
    pub(crate) depth: usize,
    pub(crate) budget: &'a Budget,
}

impl<'a, 'de> Message<'a, 'de> {
    pub(crate) fn new(
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
pub(crate) struct Seq<'a, 'de> {
    pub(crate) kind: Kind,
    pub(crate) vals: std::vec::IntoIter<WireValue<'de>>,
    /// Packed scalars still to read from the current occurrence.
    pub(crate) packed: &'de [u8],
    pub(crate) depth: usize,
    pub(crate) budget: &'a Budget,
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
pub(crate) struct Entries<'a, 'de> {
    pub(crate) kind: Kind,
    pub(crate) entries:
        std::collections::btree_map::IntoIter<std::borrow::Cow<'de, str>, Option<WireValue<'de>>>,
    pub(crate) value: Option<Option<WireValue<'de>>>,
    pub(crate) depth: usize,
    pub(crate) budget: &'a Budget,
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
