//! Protobuf as a serde [`Deserializer`]: the one walk of a message with Go's semantics (absent
//! fields are Go's zero values, nil for pointers, slices and maps; `omitempty`; inline structs;
//! the special types' own forms), presented as the JSON object Go would write for it. Serde
//! types (k8s-openapi's, `DynamicObject`, `serde_json::Value`) deserialize from it directly,
//! with no JSON text in between, and the JSON writer ([`crate::message_to_json`]) is this walk
//! transcoded into `serde_json`'s serializer.

mod access;
mod walk;

use serde::de::{self, Visitor};

use crate::ProtoError;
use crate::schema::MessageRef;
use access::Message;
use walk::Budget;
pub(crate) use walk::MAX_DEPTH;

impl de::Error for ProtoError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        ProtoError::Json(msg.to_string())
    }
}
/// A whole message as a serde deserializer: `K::deserialize(...)` builds `K` from protobuf
/// bytes with no JSON in between. `typed` adds `apiVersion` and `kind` first (an object
/// decoded from its envelope carries them; list items do not).
pub struct MessageDeserializer<'de> {
    msg: MessageRef,
    buf: &'de [u8],
    typed: Option<(&'de str, &'de str)>,
    budget: Budget<'de>,
}

impl<'de> MessageDeserializer<'de> {
    /// Message `msg` in `buf`.
    pub fn new(msg: MessageRef, buf: &'de [u8]) -> MessageDeserializer<'de> {
        MessageDeserializer {
            msg,
            buf,
            typed: None,
            budget: Budget::for_input(buf.len(), msg.table()),
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
            self.msg.get(),
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
