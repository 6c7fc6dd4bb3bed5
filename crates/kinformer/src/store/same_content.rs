//! Whether two objects hold the same content, without keeping either's serialized form: what a
//! full-mode cache asks before it keeps the object it holds for a listed one of the same uid and
//! resourceVersion (see `staged.rs`). The same version of an object can be shown differently:
//! kube-apiserver decodes stored objects through the current schema on every read, so a CRD
//! that adds a default or stops declaring a field changes every object without a new
//! resourceVersion (and restarts its watches, so informers list again).
//!
//! The objects are compared as what they serialize to, through serde, so any `K: Serialize`
//! qualifies (a `PartialEq` bound would leave out custom resources that do not derive it).
//! They are written as serde's data model, not as JSON: each value a tag and its raw bytes
//! (numbers in binary, strings with their length, not escaped), which costs about a third of
//! writing JSON. Every token says its own length, so a stream reads back one way only: equal
//! streams mean equal serialized values. Values of one type that JSON shows alike but serde
//! sees apart (a `u64` and an `i64` of the same value) compare as different, which only keeps
//! the listed copy.

use std::cell::RefCell;
use std::fmt;

use serde::Serialize;
use serde::ser::{self, SerializeMap, SerializeSeq, SerializeStruct};

/// Past this capacity a thread's buffer is given back after use (one very large object does
/// not keep its size for the thread's life).
const KEEP_CAPACITY: usize = 256 * 1024;

thread_local! {
    static FIRST: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Whether `a` and `b` serialize to the same values (false if either cannot be serialized).
/// `b` is compared as it is written, so a difference stops it early.
pub(crate) fn same_content<K: Serialize>(a: &K, b: &K) -> bool {
    FIRST.with(|first| {
        // never re-entered: only this function borrows it, and serializing calls nothing here
        let mut first = first.borrow_mut();
        first.clear();
        let written = a.serialize(&mut Tokens(Record(&mut first))).is_ok();
        let same = written && {
            let mut rest = Compare(&first);
            b.serialize(&mut Tokens(&mut rest)).is_ok() && rest.0.is_empty()
        };
        if first.capacity() > KEEP_CAPACITY {
            *first = Vec::new();
        }
        same
    })
}

/// Where tokens go: recorded, or compared with what was recorded.
trait Sink {
    fn put(&mut self, bytes: &[u8]) -> Result<(), Stop>;
}

struct Record<'a>(&'a mut Vec<u8>);

impl Sink for Record<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), Stop> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }
}

/// The recorded bytes not compared yet; the first token that differs stops the walk.
struct Compare<'a>(&'a [u8]);

impl Sink for &mut Compare<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), Stop> {
        match self.0.strip_prefix(bytes) {
            Some(rest) => {
                self.0 = rest;
                Ok(())
            }
            None => Err(Stop),
        }
    }
}

/// Why a walk stopped: a difference, or the value's own serialization error.
#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("stopped")
    }
}

impl std::error::Error for Stop {}

impl ser::Error for Stop {
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        Stop
    }
}

// One tag byte per token; its payload has a fixed size or a length first.
const BOOL: u8 = 1;
const INT: u8 = 2;
const UINT: u8 = 3;
const INT128: u8 = 4;
const UINT128: u8 = 5;
const FLOAT: u8 = 6;
const CHAR: u8 = 7;
const STR: u8 = 8;
const BYTES: u8 = 9;
const NONE: u8 = 10;
const SOME: u8 = 11;
const UNIT: u8 = 12;
const VARIANT: u8 = 13;
const SEQ: u8 = 14;
const MAP: u8 = 15;
const STRUCT: u8 = 16;
const END: u8 = 17;

/// serde's serializer that writes tokens to a [`Sink`].
struct Tokens<S>(S);

impl<S: Sink> Tokens<S> {
    /// A tag and its fixed-size payload (at most 16 bytes), put as one slice.
    fn tagged(&mut self, tag: u8, payload: &[u8]) -> Result<(), Stop> {
        let mut token = [0u8; 17];
        token[0] = tag;
        token[1..=payload.len()].copy_from_slice(payload);
        self.0.put(&token[..=payload.len()])
    }

    fn text(&mut self, tag: u8, bytes: &[u8]) -> Result<(), Stop> {
        self.tagged(tag, &(bytes.len() as u64).to_le_bytes())?;
        self.0.put(bytes)
    }

    fn variant(&mut self, index: u32, variant: &str) -> Result<(), Stop> {
        self.tagged(VARIANT, &index.to_le_bytes())?;
        self.text(STR, variant.as_bytes())
    }
}

/// `serialize_x(v)` methods that serialize `v` widened, through the given wider method.
macro_rules! widened {
    ($($($narrow:ident($ty:ty)),+ => $wide:ident;)+) => {
        $($(
            fn $narrow(self, v: $ty) -> Result<(), Stop> {
                self.$wide(v.into())
            }
        )+)+
    };
}

impl<S: Sink> ser::Serializer for &mut Tokens<S> {
    type Ok = ();
    type Error = Stop;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn serialize_bool(self, v: bool) -> Result<(), Stop> {
        self.tagged(BOOL, &[u8::from(v)])
    }
    // narrower numbers as their widest kind: one type's values compare alike either way
    widened! {
        serialize_i8(i8), serialize_i16(i16), serialize_i32(i32) => serialize_i64;
        serialize_u8(u8), serialize_u16(u16), serialize_u32(u32) => serialize_u64;
        serialize_f32(f32) => serialize_f64;
    }
    fn serialize_i64(self, v: i64) -> Result<(), Stop> {
        self.tagged(INT, &v.to_le_bytes())
    }
    fn serialize_i128(self, v: i128) -> Result<(), Stop> {
        self.tagged(INT128, &v.to_le_bytes())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Stop> {
        self.tagged(UINT, &v.to_le_bytes())
    }
    fn serialize_u128(self, v: u128) -> Result<(), Stop> {
        self.tagged(UINT128, &v.to_le_bytes())
    }
    fn serialize_f64(self, v: f64) -> Result<(), Stop> {
        // bits, so NaN equals the same NaN as serializing would show it
        self.tagged(FLOAT, &v.to_bits().to_le_bytes())
    }
    fn serialize_char(self, v: char) -> Result<(), Stop> {
        self.tagged(CHAR, &u32::from(v).to_le_bytes())
    }
    fn serialize_str(self, v: &str) -> Result<(), Stop> {
        self.text(STR, v.as_bytes())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Stop> {
        self.text(BYTES, v)
    }
    fn serialize_none(self) -> Result<(), Stop> {
        self.0.put(&[NONE])
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<(), Stop> {
        self.0.put(&[SOME])?;
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Stop> {
        self.0.put(&[UNIT])
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Stop> {
        self.0.put(&[UNIT])
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        index: u32,
        variant: &'static str,
    ) -> Result<(), Stop> {
        self.variant(index, variant)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        self.variant(index, variant)?;
        value.serialize(self)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self, Stop> {
        self.0.put(&[SEQ])?;
        Ok(self)
    }
    fn serialize_tuple(self, len: usize) -> Result<Self, Stop> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Self, Stop> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self, Stop> {
        self.variant(index, variant)?;
        self.serialize_seq(Some(len))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self, Stop> {
        self.0.put(&[MAP])?;
        Ok(self)
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, Stop> {
        self.0.put(&[STRUCT])?;
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self, Stop> {
        self.variant(index, variant)?;
        self.0.put(&[STRUCT])?;
        Ok(self)
    }
}

impl<S: Sink> SerializeSeq for &mut Tokens<S> {
    type Ok = ();
    type Error = Stop;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Stop> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Stop> {
        self.0.put(&[END])
    }
}

impl<S: Sink> ser::SerializeTuple for &mut Tokens<S> {
    type Ok = ();
    type Error = Stop;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Stop> {
        SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<(), Stop> {
        SerializeSeq::end(self)
    }
}

impl<S: Sink> ser::SerializeTupleStruct for &mut Tokens<S> {
    type Ok = ();
    type Error = Stop;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Stop> {
        SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<(), Stop> {
        SerializeSeq::end(self)
    }
}

impl<S: Sink> ser::SerializeTupleVariant for &mut Tokens<S> {
    type Ok = ();
    type Error = Stop;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Stop> {
        SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<(), Stop> {
        SerializeSeq::end(self)
    }
}

impl<S: Sink> SerializeMap for &mut Tokens<S> {
    type Ok = ();
    type Error = Stop;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), Stop> {
        key.serialize(&mut **self)
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Stop> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Stop> {
        self.0.put(&[END])
    }
}

impl<S: Sink> SerializeStruct for &mut Tokens<S> {
    type Ok = ();
    type Error = Stop;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        self.text(STR, key.as_bytes())?;
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Stop> {
        self.0.put(&[END])
    }
}

impl<S: Sink> ser::SerializeStructVariant for &mut Tokens<S> {
    type Ok = ();
    type Error = Stop;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        SerializeStruct::serialize_field(self, key, value)
    }
    fn end(self) -> Result<(), Stop> {
        SerializeStruct::end(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_values_are_the_same_and_any_difference_is_not() {
        let a = json!({"spec": {"size": 3}, "metadata": {"resourceVersion": "7"}});
        assert!(same_content(&a, &a.clone()));
        let defaulted =
            json!({"spec": {"size": 3, "mode": "fast"}, "metadata": {"resourceVersion": "7"}});
        assert!(!same_content(&a, &defaulted), "b longer");
        assert!(!same_content(&defaulted, &a), "b shorter");
        let other = json!({"spec": {"size": 4}, "metadata": {"resourceVersion": "7"}});
        assert!(!same_content(&a, &other), "same length, other bytes");
    }

    #[test]
    fn values_that_would_run_together_are_told_apart() {
        // without lengths, "ab" + "c" and "a" + "bc" would write the same bytes
        assert!(!same_content(&json!(["ab", "c"]), &json!(["a", "bc"])));
        assert!(!same_content(&json!({"ab": "c"}), &json!({"a": "bc"})));
        // a field that moves from one struct to the next
        assert!(!same_content(
            &json!([{"a": 1}, {}]),
            &json!([{}, {"a": 1}])
        ));
        assert!(!same_content(&json!([[1], []]), &json!([[], [1]])));
        assert!(!same_content(&json!(null), &json!({})));
        assert!(!same_content(&json!(""), &json!([])));
        assert!(!same_content(&json!(1), &json!(1.0)));
        assert!(!same_content(&json!(1), &json!(-1)));
        assert!(!same_content(&json!(true), &json!(false)));
    }

    #[derive(Serialize)]
    enum Mode {
        Off,
        Size(u32),
        Pair(u8, u8),
        Named { a: Option<String> },
    }

    #[test]
    fn typed_values_compare_field_by_field() {
        use k8s_openapi::api::core::v1::{Pod, PodSpec};
        let pod = |node: Option<&str>| Pod {
            metadata: kube::api::ObjectMeta {
                name: Some("a".into()),
                resource_version: Some("7".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: node.map(Into::into),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(same_content(&pod(Some("n1")), &pod(Some("n1"))));
        assert!(!same_content(&pod(Some("n1")), &pod(Some("n2"))));
        assert!(!same_content(&pod(Some("n1")), &pod(None)));
        assert!(!same_content(&Mode::Off, &Mode::Size(0)));
        assert!(!same_content(&Mode::Size(1), &Mode::Size(2)));
        assert!(same_content(&Mode::Pair(1, 2), &Mode::Pair(1, 2)));
        assert!(!same_content(&Mode::Pair(1, 2), &Mode::Pair(2, 1)));
        assert!(!same_content(
            &Mode::Named { a: None },
            &Mode::Named {
                a: Some(String::new())
            }
        ));
    }

    #[test]
    fn a_large_object_does_not_keep_its_buffer() {
        let big = json!({"data": "x".repeat(KEEP_CAPACITY * 2)});
        assert!(same_content(&big, &big.clone()));
        FIRST.with(|f| assert!(f.borrow().capacity() <= KEEP_CAPACITY));
    }
}
