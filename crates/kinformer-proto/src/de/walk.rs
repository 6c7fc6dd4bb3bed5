//! The walk of one message with Go's semantics: which fields a message presents, in which
//! order, and as what (present, Go's zero value, or nil), within a budget.

use std::cell::Cell;

use crate::ProtoError;
use crate::schema::{Field, Kind, MessageRef};
use crate::wire::{Fields, WireValue};

/// How deep messages may nest (JSON schemas nest; nothing real comes near this).
pub(crate) const MAX_DEPTH: usize = 100;

/// One walk's state: what it may still emit (each value costs one unit, so input that expands,
/// such as many empty messages each standing for a zero-valued struct, is bounded by its own
/// size), and whether `metadata.managedFields` is left out.
pub(crate) struct Budget {
    left: Cell<usize>,
    pub(crate) drop_managed_fields: bool,
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

    pub(crate) fn spend(&self) -> Result<(), ProtoError> {
        let left = self.left.get();
        if left == 0 {
            return Err(ProtoError::TooLarge);
        }
        self.left.set(left - 1);
        Ok(())
    }

    /// Whether field `f` of `m` is left out of this walk.
    pub(crate) fn skips(&self, m: MessageRef, f: &Field) -> bool {
        self.drop_managed_fields && f.json == "managedFields" && m.name() == "meta/v1.ObjectMeta"
    }
}

/// One value to present.
#[derive(Clone)]
pub(crate) enum Slot<'de> {
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

pub(crate) fn bytes_of(v: WireValue<'_>) -> Result<&[u8], ProtoError> {
    match v {
        WireValue::Bytes(b) => Ok(b),
        _ => Err(ProtoError::Malformed("wire type does not match the field")),
    }
}

pub(crate) fn varint_of(v: WireValue<'_>) -> Result<u64, ProtoError> {
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
pub(crate) fn entries<'de>(
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
