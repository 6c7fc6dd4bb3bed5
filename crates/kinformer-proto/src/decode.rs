//! Protobuf to JSON, as Go does it: the bytes are read into the Go type (absent fields are Go's
//! zero values, nil for pointers, slices and maps), then written as encoding/json writes that
//! type (`omitempty`, inline structs, `null` for nil, the special types' own text forms).

use std::collections::BTreeMap;
use std::io::Write;

use base64::Engine;

use crate::ProtoError;
use crate::gotime;
use crate::schema::{Field, Kind, Message, MessageRef};
use crate::wire::{Fields, WireValue, read_varint};

/// How deep messages may nest (JSON schemas nest; nothing real comes near this).
pub(crate) const MAX_DEPTH: usize = 100;

/// Writes JSON for messages of the table into `out`, never past `limit` bytes.
pub(crate) struct Decoder {
    pub(crate) out: Vec<u8>,
    limit: usize,
}

fn mismatch(f: &str) -> ProtoError {
    ProtoError::Malformed(match f {
        "" => "wire type does not match the field",
        _ => "wire type does not match the field's type",
    })
}

fn bytes_of(v: WireValue<'_>) -> Result<&[u8], ProtoError> {
    match v {
        WireValue::Bytes(b) => Ok(b),
        _ => Err(mismatch("")),
    }
}

fn varint_of(v: WireValue<'_>) -> Result<u64, ProtoError> {
    match v {
        WireValue::Varint(n) => Ok(n),
        _ => Err(mismatch("")),
    }
}

/// The last occurrence of a singular field; messages that occur more than once are merged
/// (protobuf's rule: concatenated encodings are one merged message).
fn last<'a>(kind: Kind, vals: &[WireValue<'a>]) -> Option<std::borrow::Cow<'a, [u8]>> {
    let message_like = !matches!(
        kind,
        Kind::Str
            | Kind::Bytes
            | Kind::Bool
            | Kind::I32
            | Kind::I64
            | Kind::U32
            | Kind::U64
            | Kind::F64
    );
    if message_like && vals.len() > 1 {
        let mut all = Vec::new();
        for v in vals {
            if let WireValue::Bytes(b) = v {
                all.extend_from_slice(b);
            }
        }
        return Some(std::borrow::Cow::Owned(all));
    }
    None
}

impl Decoder {
    pub(crate) fn new(input_len: usize) -> Decoder {
        Decoder {
            out: Vec::with_capacity(input_len.saturating_mul(2)),
            limit: input_len.saturating_mul(64).saturating_add(1 << 20),
        }
    }

    fn check(&self) -> Result<(), ProtoError> {
        if self.out.len() > self.limit {
            return Err(ProtoError::TooLarge { limit: self.limit });
        }
        Ok(())
    }

    fn key(&mut self, first: &mut bool, name: &str) {
        if !*first {
            self.out.push(b',');
        }
        *first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    fn string(&mut self, b: &[u8]) {
        let s = String::from_utf8_lossy(b);
        // Writing a str into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.out, s.as_ref());
    }

    fn display(&mut self, v: impl std::fmt::Display) {
        let _ = write!(self.out, "{v}");
    }

    /// One message as a JSON object.
    pub(crate) fn message(
        &mut self,
        m: MessageRef,
        buf: &[u8],
        depth: usize,
    ) -> Result<(), ProtoError> {
        self.out.push(b'{');
        let mut first = true;
        self.fields(m.get(), buf, &mut first, depth)?;
        self.out.push(b'}');
        self.check()
    }

    /// A message's fields, written into an object already open.
    pub(crate) fn fields(
        &mut self,
        m: &Message,
        buf: &[u8],
        first: &mut bool,
        depth: usize,
    ) -> Result<(), ProtoError> {
        if depth > MAX_DEPTH {
            return Err(ProtoError::Malformed("nested too deeply"));
        }
        let mut occ: Vec<(usize, WireValue<'_>)> = Vec::new();
        for r in Fields::new(buf) {
            let (num, v) = r?;
            // unknown fields are skipped, as Go's generated Unmarshal skips them
            if let Some(i) = m.fields.iter().position(|f| f.num == num) {
                occ.push((i, v));
            }
        }
        occ.sort_by_key(|(i, _)| *i);
        let mut vals: Vec<WireValue<'_>> = Vec::new();
        let mut at = 0;
        for (i, f) in m.fields.iter().enumerate() {
            vals.clear();
            while at < occ.len() && occ[at].0 == i {
                vals.push(occ[at].1);
                at += 1;
            }
            self.field(f, &vals, first, depth)?;
        }
        Ok(())
    }

    fn field(
        &mut self,
        f: &Field,
        vals: &[WireValue<'_>],
        first: &mut bool,
        depth: usize,
    ) -> Result<(), ProtoError> {
        if f.inline() {
            let Kind::Msg(mi) = f.kind else {
                return Err(ProtoError::Malformed("inline field is not a message"));
            };
            let merged;
            let buf: &[u8] = match (last(f.kind, vals), vals.last()) {
                (Some(m), _) => {
                    merged = m;
                    &merged
                }
                (None, Some(v)) => bytes_of(*v)?,
                (None, None) => &[],
            };
            return self.fields(MessageRef(mi).get(), buf, first, depth + 1);
        }
        if f.repeated() {
            if vals.is_empty() {
                if !f.omitempty() {
                    self.key(first, f.json);
                    self.out.extend_from_slice(b"null");
                }
                return Ok(());
            }
            self.key(first, f.json);
            self.out.push(b'[');
            self.elements(f.kind, vals, depth)?;
            self.out.push(b']');
            return Ok(());
        }
        if let Kind::Map(vk) = f.kind {
            if vals.is_empty() {
                if !f.omitempty() {
                    self.key(first, f.json);
                    self.out.extend_from_slice(b"null");
                }
                return Ok(());
            }
            self.key(first, f.json);
            return self.map(*vk, vals, depth);
        }
        let merged = last(f.kind, vals);
        let v = match (&merged, vals.last()) {
            (Some(m), _) => Some(WireValue::Bytes(m)),
            (None, v) => v.copied(),
        };
        match v {
            None if f.pointer() => {
                if !f.omitempty() {
                    self.key(first, f.json);
                    self.out.extend_from_slice(b"null");
                }
            }
            None => {
                if !(f.omitempty() && scalar(f.kind)) {
                    self.key(first, f.json);
                    self.zero(f.kind, depth)?;
                }
            }
            Some(v) => {
                if f.omitempty() && omitted(f, v) {
                    return Ok(());
                }
                self.key(first, f.json);
                self.value(f.kind, v, depth)?;
            }
        }
        Ok(())
    }

    /// The elements of a repeated field (packed or not).
    fn elements(
        &mut self,
        kind: Kind,
        vals: &[WireValue<'_>],
        depth: usize,
    ) -> Result<(), ProtoError> {
        let mut n = 0usize;
        let mut sep = |out: &mut Vec<u8>| {
            if n > 0 {
                out.push(b',');
            }
            n += 1;
        };
        for v in vals {
            match (kind, v) {
                (
                    Kind::Bool | Kind::I32 | Kind::I64 | Kind::U32 | Kind::U64,
                    WireValue::Bytes(b),
                ) => {
                    let mut p: &[u8] = b;
                    while !p.is_empty() {
                        let x = read_varint(&mut p)?;
                        sep(&mut self.out);
                        self.value(kind, WireValue::Varint(x), depth)?;
                    }
                }
                (Kind::F64, WireValue::Bytes(b)) => {
                    if b.len() % 8 != 0 {
                        return Err(ProtoError::Malformed("packed doubles"));
                    }
                    for c in b.chunks_exact(8) {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(c);
                        sep(&mut self.out);
                        self.value(kind, WireValue::Fixed64(u64::from_le_bytes(a)), depth)?;
                    }
                }
                _ => {
                    sep(&mut self.out);
                    self.value(kind, *v, depth)?;
                }
            }
        }
        Ok(())
    }

    fn map(&mut self, vk: Kind, vals: &[WireValue<'_>], depth: usize) -> Result<(), ProtoError> {
        let mut entries: BTreeMap<std::borrow::Cow<'_, str>, Option<WireValue<'_>>> =
            BTreeMap::new();
        for v in vals {
            let mut key: &[u8] = &[];
            let mut val = None;
            for r in Fields::new(bytes_of(*v)?) {
                match r? {
                    (1, k) => key = bytes_of(k)?,
                    (2, x) => val = Some(x),
                    _ => {}
                }
            }
            entries.insert(String::from_utf8_lossy(key), val);
        }
        self.out.push(b'{');
        for (i, (k, v)) in entries.into_iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            let _ = serde_json::to_writer(&mut self.out, k.as_ref());
            self.out.push(b':');
            match (v, vk) {
                (Some(v), _) => self.value(vk, v, depth)?,
                // Go's map decoding starts each value as an empty, non-nil named slice
                (None, Kind::Wrapper(_)) => self.out.extend_from_slice(b"[]"),
                (None, _) => self.zero(vk, depth)?,
            }
        }
        self.out.push(b'}');
        self.check()
    }

    /// Go's zero value of `kind`, as JSON writes it.
    fn zero(&mut self, kind: Kind, depth: usize) -> Result<(), ProtoError> {
        match kind {
            Kind::Str => self.out.extend_from_slice(b"\"\""),
            Kind::Bool | Kind::SchemaOrBool(_) => self.out.extend_from_slice(b"false"),
            Kind::I32 | Kind::I64 | Kind::U32 | Kind::U64 | Kind::F64 | Kind::IntOrString => {
                self.out.push(b'0')
            }
            Kind::Msg(mi) => self.message(MessageRef(mi), &[], depth + 1)?,
            Kind::Duration => self.out.extend_from_slice(b"\"0s\""),
            Kind::Quantity => self.out.extend_from_slice(b"\"0\""),
            Kind::Time
            | Kind::MicroTime
            | Kind::RawJson
            | Kind::SchemaOrArray(_)
            | Kind::SchemaOrStringArray(_)
            | Kind::Bytes
            | Kind::Map(_)
            | Kind::Wrapper(_) => self.out.extend_from_slice(b"null"),
        }
        Ok(())
    }

    /// One present value of `kind`.
    fn value(&mut self, kind: Kind, v: WireValue<'_>, depth: usize) -> Result<(), ProtoError> {
        match kind {
            Kind::Str => self.string(bytes_of(v)?),
            Kind::Bytes => {
                let b = bytes_of(v)?;
                self.out.push(b'"');
                let s = base64::engine::general_purpose::STANDARD.encode(b);
                self.out.extend_from_slice(s.as_bytes());
                self.out.push(b'"');
            }
            Kind::Bool => {
                let b = varint_of(v)? != 0;
                self.out
                    .extend_from_slice(if b { b"true" } else { b"false" });
            }
            Kind::I32 => self.display(varint_of(v)? as i64 as i32),
            Kind::I64 => self.display(varint_of(v)? as i64),
            Kind::U32 => self.display(varint_of(v)? as u32),
            Kind::U64 => self.display(varint_of(v)?),
            Kind::F64 => {
                let WireValue::Fixed64(bits) = v else {
                    return Err(mismatch(""));
                };
                let x = f64::from_bits(bits);
                if !x.is_finite() {
                    return Err(ProtoError::Malformed("a float that JSON cannot hold"));
                }
                let _ = serde_json::to_writer(&mut self.out, &x);
            }
            Kind::Msg(mi) => self.message(MessageRef(mi), bytes_of(v)?, depth + 1)?,
            Kind::Time | Kind::MicroTime => {
                let b = bytes_of(v)?;
                if b.is_empty() {
                    self.out.extend_from_slice(b"null");
                    return Ok(());
                }
                let (mut secs, mut nanos) = (0i64, 0i32);
                for r in Fields::new(b) {
                    match r? {
                        (1, x) => secs = varint_of(x)? as i64,
                        (2, x) => nanos = varint_of(x)? as i64 as i32,
                        _ => {}
                    }
                }
                let s = if kind == Kind::Time {
                    gotime::format_time(secs)?
                } else {
                    gotime::format_micro_time(secs, nanos)?
                };
                self.string(s.as_bytes());
            }
            Kind::Duration => {
                let mut d = 0i64;
                for r in Fields::new(bytes_of(v)?) {
                    if let (1, x) = r? {
                        d = varint_of(x)? as i64;
                    }
                }
                self.string(gotime::format_duration(d).as_bytes());
            }
            Kind::Quantity => {
                let mut s: &[u8] = b"0";
                for r in Fields::new(bytes_of(v)?) {
                    if let (1, x) = r? {
                        s = bytes_of(x)?;
                    }
                }
                self.string(if s.is_empty() { b"0" } else { s });
            }
            Kind::IntOrString => {
                let (mut ty, mut int, mut st): (u64, i32, &[u8]) = (0, 0, &[]);
                for r in Fields::new(bytes_of(v)?) {
                    match r? {
                        (1, x) => ty = varint_of(x)?,
                        (2, x) => int = varint_of(x)? as i64 as i32,
                        (3, x) => st = bytes_of(x)?,
                        _ => {}
                    }
                }
                if ty == 1 {
                    self.string(st);
                } else {
                    self.display(int);
                }
            }
            Kind::RawJson => {
                let mut raw: &[u8] = &[];
                for r in Fields::new(bytes_of(v)?) {
                    if let (1, x) = r? {
                        raw = bytes_of(x)?;
                    }
                }
                if raw.is_empty() {
                    self.out.extend_from_slice(b"null");
                } else {
                    let rv: Box<serde_json::value::RawValue> = serde_json::from_slice(raw)
                        .map_err(|e| ProtoError::Json(format!("embedded raw JSON: {e}")))?;
                    self.out.extend_from_slice(rv.get().as_bytes());
                }
            }
            Kind::SchemaOrArray(p) | Kind::SchemaOrStringArray(p) => {
                let mut schema = None;
                let mut many: Vec<WireValue<'_>> = Vec::new();
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
                    self.out.push(b'[');
                    self.elements(ek, &many, depth)?;
                    self.out.push(b']');
                } else if let Some(s) = schema {
                    self.message(MessageRef(p), s, depth + 1)?;
                } else {
                    self.out.extend_from_slice(b"null");
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
                    Some(s) => self.message(MessageRef(p), s, depth + 1)?,
                    None => self
                        .out
                        .extend_from_slice(if allows { b"true" } else { b"false" }),
                }
            }
            Kind::Wrapper(ek) => {
                let mut items: Vec<WireValue<'_>> = Vec::new();
                for r in Fields::new(bytes_of(v)?) {
                    if let (1, x) = r? {
                        items.push(x);
                    }
                }
                // a present wrapper is a non-nil slice, even with no items
                self.out.push(b'[');
                self.elements(*ek, &items, depth)?;
                self.out.push(b']');
            }
            Kind::Map(_) => return Err(ProtoError::Malformed("a map inside a map")),
        }
        Ok(())
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
        (Kind::Bytes, WireValue::Bytes(b)) => b.is_empty(),
        (Kind::Wrapper(_), WireValue::Bytes(b)) => b.is_empty(),
        _ if f.pointer() => false,
        (Kind::Str, WireValue::Bytes(b)) => b.is_empty(),
        (Kind::Bool | Kind::I32 | Kind::I64 | Kind::U32 | Kind::U64, WireValue::Varint(x)) => {
            x == 0
        }
        (Kind::F64, WireValue::Fixed64(x)) => f64::from_bits(x) == 0.0,
        _ => false,
    }
}
