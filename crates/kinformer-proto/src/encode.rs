//! JSON to protobuf: the fields the JSON object carries, written as Go's generated Marshal
//! writes them (field order of the table, unpacked repeated scalars, map entries by key).
//! A JSON `null` is an absent field. JSON fields the Go type does not have are dropped, as
//! Go's JSON decoder drops them.

use base64::Engine;
use serde_json::{Map, Value};

use crate::ProtoError;
use crate::de::MAX_DEPTH;
use crate::gotime;
use crate::schema::{Kind, MessageRef, Table};
use crate::wire::{begin_nested, end_nested, put_bytes, put_key, put_varint_field};

fn wrong(what: &str, v: &Value) -> ProtoError {
    let got = match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    ProtoError::Json(format!("expected {what}, got {got}"))
}

fn int(v: &Value, what: &str) -> Result<i64, ProtoError> {
    if let Some(i) = v.as_i64() {
        return Ok(i);
    }
    match v.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(f as i64),
        _ => Err(wrong(what, v)),
    }
}

/// Writes the fields of `obj` as message `m`.
pub(crate) fn message(
    m: MessageRef,
    obj: &Map<String, Value>,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), ProtoError> {
    if depth > MAX_DEPTH {
        return Err(ProtoError::Json("nested too deeply".into()));
    }
    for f in m.get().fields {
        if f.inline() {
            let Kind::Msg(mi) = f.kind else {
                return Err(ProtoError::Malformed("inline field is not a message"));
            };
            let start = begin_nested(out, f.num);
            message(m.sibling(mi), obj, out, depth + 1)?;
            end_nested(out, start);
            continue;
        }
        let Some(v) = obj.get(f.json) else { continue };
        if v.is_null() {
            continue;
        }
        let field_err = |e: ProtoError| match e {
            ProtoError::Json(s) => ProtoError::Json(format!("{}: {s}", f.json)),
            e => e,
        };
        if f.repeated() {
            let arr = v
                .as_array()
                .ok_or_else(|| wrong("an array", v))
                .map_err(field_err)?;
            for e in arr {
                value(m.table(), out, f.num, f.kind, e, depth).map_err(field_err)?;
            }
            continue;
        }
        value(m.table(), out, f.num, f.kind, v, depth).map_err(field_err)?;
    }
    Ok(())
}

/// Writes one value of `kind` as field `num`; `t` is the table its message indices refer to.
fn value(
    t: &'static Table,
    out: &mut Vec<u8>,
    num: u32,
    kind: Kind,
    v: &Value,
    depth: usize,
) -> Result<(), ProtoError> {
    match kind {
        Kind::Str => match v {
            Value::String(s) => put_bytes(out, num, s.as_bytes()),
            Value::Null => put_bytes(out, num, b""),
            _ => return Err(wrong("a string", v)),
        },
        Kind::Bytes => {
            let s = v.as_str().ok_or_else(|| wrong("a base64 string", v))?;
            let b = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|_| ProtoError::Json("invalid base64".into()))?;
            put_bytes(out, num, &b);
        }
        Kind::Bool => match v {
            Value::Bool(b) => put_varint_field(out, num, u64::from(*b)),
            Value::Null => put_varint_field(out, num, 0),
            _ => return Err(wrong("a bool", v)),
        },
        Kind::I32 => {
            let i = if v.is_null() { 0 } else { int(v, "an int32")? };
            let i =
                i32::try_from(i).map_err(|_| ProtoError::Json(format!("{i} is not an int32")))?;
            put_varint_field(out, num, i64::from(i) as u64);
        }
        Kind::I64 => {
            let i = if v.is_null() { 0 } else { int(v, "an int64")? };
            put_varint_field(out, num, i as u64);
        }
        Kind::U32 | Kind::U64 => {
            let i = v.as_u64().ok_or_else(|| wrong("an unsigned integer", v))?;
            if kind == Kind::U32 && i > u64::from(u32::MAX) {
                return Err(ProtoError::Json(format!("{i} is not a uint32")));
            }
            put_varint_field(out, num, i);
        }
        Kind::F64 => {
            let x = v.as_f64().ok_or_else(|| wrong("a number", v))?;
            put_key(out, num, 1);
            out.extend_from_slice(&x.to_bits().to_le_bytes());
        }
        Kind::Msg(mi) => {
            let start = begin_nested(out, num);
            match v {
                Value::Object(o) => message(t.message(mi), o, out, depth + 1)?,
                Value::Null => {}
                _ => return Err(wrong("an object", v)),
            }
            end_nested(out, start);
        }
        Kind::Time | Kind::MicroTime => {
            let s = v.as_str().ok_or_else(|| wrong("a time string", v))?;
            let (secs, nanos) = gotime::parse_time(s)?;
            let start = begin_nested(out, num);
            put_varint_field(out, 1, secs as u64);
            put_varint_field(out, 2, i64::from(nanos) as u64);
            end_nested(out, start);
        }
        Kind::Duration => {
            let s = v.as_str().ok_or_else(|| wrong("a duration string", v))?;
            let d = gotime::parse_duration(s)?;
            let start = begin_nested(out, num);
            put_varint_field(out, 1, d as u64);
            end_nested(out, start);
        }
        Kind::Quantity => {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Err(wrong("a quantity", v)),
            };
            let start = begin_nested(out, num);
            put_bytes(out, 1, s.as_bytes());
            end_nested(out, start);
        }
        Kind::IntOrString => {
            let start = begin_nested(out, num);
            match v {
                Value::String(s) => {
                    put_varint_field(out, 1, 1);
                    put_varint_field(out, 2, 0);
                    put_bytes(out, 3, s.as_bytes());
                }
                _ => {
                    let i = int(v, "an int or a string")?;
                    let i = i32::try_from(i)
                        .map_err(|_| ProtoError::Json(format!("{i} is not an int32")))?;
                    put_varint_field(out, 1, 0);
                    put_varint_field(out, 2, i64::from(i) as u64);
                    put_bytes(out, 3, b"");
                }
            }
            end_nested(out, start);
        }
        Kind::RawJson => {
            let raw = serde_json::to_vec(v).map_err(|e| ProtoError::Json(e.to_string()))?;
            let start = begin_nested(out, num);
            put_bytes(out, 1, &raw);
            end_nested(out, start);
        }
        Kind::SchemaOrArray(p) => {
            let start = begin_nested(out, num);
            match v {
                Value::Array(a) => {
                    for e in a {
                        value(t, out, 2, Kind::Msg(p), e, depth + 1)?;
                    }
                }
                Value::Object(_) => value(t, out, 1, Kind::Msg(p), v, depth + 1)?,
                _ => return Err(wrong("a schema or an array of schemas", v)),
            }
            end_nested(out, start);
        }
        Kind::SchemaOrBool(p) => {
            let start = begin_nested(out, num);
            match v {
                Value::Bool(b) => put_varint_field(out, 1, u64::from(*b)),
                Value::Object(_) => {
                    put_varint_field(out, 1, 1);
                    value(t, out, 2, Kind::Msg(p), v, depth + 1)?;
                }
                _ => return Err(wrong("a schema or a bool", v)),
            }
            end_nested(out, start);
        }
        Kind::SchemaOrStringArray(p) => {
            let start = begin_nested(out, num);
            match v {
                Value::Array(a) => {
                    for e in a {
                        value(t, out, 2, Kind::Str, e, depth + 1)?;
                    }
                }
                Value::Object(_) => value(t, out, 1, Kind::Msg(p), v, depth + 1)?,
                _ => return Err(wrong("a schema or an array of strings", v)),
            }
            end_nested(out, start);
        }
        Kind::Map(vk) => {
            let o = v.as_object().ok_or_else(|| wrong("an object", v))?;
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            for k in keys {
                let start = begin_nested(out, num);
                put_bytes(out, 1, k.as_bytes());
                let val = &o[k];
                if !val.is_null() {
                    value(t, out, 2, *vk, val, depth + 1)?;
                }
                end_nested(out, start);
            }
        }
        Kind::Wrapper(ek) => {
            let a = v.as_array().ok_or_else(|| wrong("an array", v))?;
            let start = begin_nested(out, num);
            for e in a {
                value(t, out, 1, *ek, e, depth + 1)?;
            }
            end_nested(out, start);
        }
    }
    Ok(())
}
