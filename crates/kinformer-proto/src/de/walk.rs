//! The walk of one message with Go's semantics: which fields a message presents, in which
//! order, and as what (present, Go's zero value, or nil), within a budget.
//!
//! A walk keeps what it is presenting on three stacks in its [`Budget`] instead of in
//! vectors of its own: each message's entries, the values of its repeated fields, and the
//! field occurrences it sorts. Serde visits a message's values depth first, so a nested
//! message is done with before its parent goes on, and each pushes above its parent and
//! truncates back to where it started when it is dropped. A pod is about a hundred nested
//! messages; this way their walk allocates a few vectors per object instead of one or more per
//! message.

use std::cell::{Cell, RefCell};

use crate::ProtoError;
use crate::schema::{Field, Kind, Message, Table};
use crate::wire::{Fields, WireValue};

/// How deep messages may nest (JSON schemas nest; nothing real comes near this).
pub(crate) const MAX_DEPTH: usize = 100;

/// One walk's state: what it may still emit (each value costs one unit, so input that expands,
/// such as many empty messages each standing for a zero-valued struct, is bounded by its own
/// size), whether `metadata.managedFields` is left out, and the walk's stacks (see the module
/// docs).
pub(crate) struct Budget<'de> {
    /// The messages of the walked message's table, which its fields' message indices refer
    /// to (held here rather than the table, one load fewer per nested message).
    messages: &'static [Message],
    left: Cell<usize>,
    pub(crate) drop_managed_fields: bool,
    /// Entries of the messages being presented, innermost last.
    pub(crate) slots: RefCell<Vec<(&'static str, Slot<'de>)>>,
    /// Values of repeated fields, maps and wrappers being presented, innermost last.
    pub(crate) vals: RefCell<Vec<WireValue<'de>>>,
    /// Field occurrences of the message being walked, as `(field index, value)`.
    occ: RefCell<Vec<(usize, WireValue<'de>)>>,
}

impl<'de> Budget<'de> {
    pub(crate) fn exhausted(&self) -> bool {
        self.left.get() == 0
    }

    pub(crate) fn for_input(len: usize, table: &'static Table) -> Budget<'de> {
        // the stacks hold the messages on one path from the root at a time: a few entries for
        // every 32 bytes of a small object, a few hundred at most for a large one, so they
        // start there rather than grow from nothing
        let stack = (len / 32).clamp(8, 256);
        Budget {
            messages: table.messages,
            left: Cell::new(len.saturating_mul(4).saturating_add(1 << 16)),
            drop_managed_fields: false,
            slots: RefCell::new(Vec::with_capacity(stack)),
            vals: RefCell::new(Vec::with_capacity(stack / 2)),
            occ: RefCell::new(Vec::with_capacity(stack / 2)),
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

    /// Message `index` of the walk's table.
    pub(crate) fn message(&self, index: u16) -> &'static Message {
        &self.messages[usize::from(index)]
    }

    /// Whether this walk leaves out the `managedFields` of message `m` (an `ObjectMeta`).
    pub(crate) fn skips_managed_fields(&self, m: &Message) -> bool {
        self.drop_managed_fields && m.name == "meta/v1.ObjectMeta"
    }

    /// Pushes `vals` on the value stack; returns where they are.
    pub(crate) fn push_vals(&self, vals: impl IntoIterator<Item = WireValue<'de>>) -> Span {
        let start = self.vals.borrow().len();
        self.vals.borrow_mut().extend(vals);
        self.span_from(start)
    }

    /// The values pushed on the value stack since it was `start` long.
    pub(crate) fn span_from(&self, start: usize) -> Span {
        Span {
            start,
            end: self.vals.borrow().len(),
        }
    }

    /// The value at `i` of the value stack.
    #[inline]
    pub(crate) fn val(&self, i: usize) -> Result<WireValue<'de>, ProtoError> {
        self.vals.borrow().get(i).copied().ok_or(LOST)
    }

    /// The entry at `i` of the entry stack.
    #[inline]
    pub(crate) fn slot(&self, i: usize) -> Result<(&'static str, Slot<'de>), ProtoError> {
        self.slots.borrow().get(i).copied().ok_or(LOST)
    }
}

/// What a walk reports if its stacks were not used depth first (a bug, never input): an error,
/// not a panic.
const LOST: ProtoError = ProtoError::Malformed("the protobuf walk lost its place");

/// A run of the value stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl Span {
    /// No values.
    pub(crate) const EMPTY: Span = Span { start: 0, end: 0 };

    pub(crate) fn is_empty(self) -> bool {
        self.start >= self.end
    }
}

/// One value to present.
#[derive(Clone, Copy)]
pub(crate) enum Slot<'de> {
    /// `null` (a nil pointer, slice or map).
    Null,
    /// Go's zero value of the kind.
    Zero(Kind),
    /// A present value.
    Value(Kind, WireValue<'de>),
    /// A repeated field's occurrences (elements may be packed), on the value stack.
    Repeated(Kind, Span),
    /// A map's entries (`{1: key, 2: value}` messages), on the value stack.
    Map(Kind, Span),
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

/// Pushes the fields of message `m` in `buf` on the entry stack as `(JSON name, value)`, in
/// the order Go writes them, inline structs flattened in place. A singular field that occurs
/// more than once takes its last occurrence. The values of repeated fields and maps go on the
/// value stack; whoever started the message truncates both stacks when done with it.
pub(crate) fn entries<'de>(
    m: &'static Message,
    buf: &'de [u8],
    depth: usize,
    budget: &Budget<'de>,
) -> Result<(), ProtoError> {
    if depth > MAX_DEPTH {
        return Err(ProtoError::Malformed("nested too deeply"));
    }
    let fields = m.fields;
    // decided once, so that the loop below needs neither `m` nor its name
    let skip_managed_fields = budget.skips_managed_fields(m);
    let base = budget.occ.borrow().len();
    let scratch = Truncate(&budget.occ, base);
    {
        let mut occ = budget.occ.borrow_mut();
        // Go writes fields by number, and a message's fields are mostly numbered in the order
        // it lists them, so the field after the last one found is tried first
        let mut next = 0;
        for r in Fields::new(buf) {
            let (num, v) = r?;
            let i = match fields.get(next) {
                Some(f) if f.num == num => Some(next),
                _ => fields.iter().position(|f| f.num == num),
            };
            // unknown fields are skipped, as Go's generated Unmarshal skips them
            if let Some(i) = i {
                occ.push((i, v));
                next = i + 1;
            }
        }
        let mine = &mut occ[base..];
        if !mine.is_sorted_by_key(|(i, _)| *i) {
            mine.sort_by_key(|(i, _)| *i);
        }
    }
    let end = budget.occ.borrow().len();
    let mut at = base;
    for (i, f) in fields.iter().enumerate() {
        let from = at;
        let last = {
            let occ = budget.occ.borrow();
            while at < end && occ[at].0 == i {
                at += 1;
            }
            (at > from).then(|| occ[at - 1].1)
        };
        if f.inline() {
            let Kind::Msg(mi) = f.kind else {
                return Err(ProtoError::Malformed("inline field is not a message"));
            };
            let b = match last {
                Some(v) => bytes_of(v)?,
                None => &[],
            };
            entries(budget.message(mi), b, depth + 1, budget)?;
            continue;
        }
        if skip_managed_fields && f.json == "managedFields" {
            continue;
        }
        let push = |slot: Slot<'de>| budget.slots.borrow_mut().push((f.json, slot));
        let nil = || {
            if !f.omitempty() {
                push(Slot::Null);
            }
        };
        if f.repeated() || matches!(f.kind, Kind::Map(_)) {
            if from == at {
                nil();
                continue;
            }
            let vs = budget.push_vals(budget.occ.borrow()[from..at].iter().map(|(_, v)| *v));
            push(match f.kind {
                Kind::Map(vk) => Slot::Map(*vk, vs),
                k => Slot::Repeated(k, vs),
            });
            continue;
        }
        match last {
            None if f.pointer() => nil(),
            None => {
                if !(f.omitempty() && scalar(f.kind)) {
                    push(Slot::Zero(f.kind));
                }
            }
            Some(v) => {
                if !(f.omitempty() && omitted(f, v)) {
                    push(Slot::Value(f.kind, v));
                }
            }
        }
    }
    drop(scratch);
    Ok(())
}

/// Truncates a stack to a length when dropped.
pub(crate) struct Truncate<'a, T>(pub(crate) &'a RefCell<Vec<T>>, pub(crate) usize);

impl<T> Drop for Truncate<'_, T> {
    fn drop(&mut self) {
        self.0.borrow_mut().truncate(self.1);
    }
}
