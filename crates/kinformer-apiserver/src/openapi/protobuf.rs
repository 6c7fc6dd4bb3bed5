//! The OpenAPI v2 document in gnostic's protobuf form
//! (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, the message
//! `openapi.v2.Document` of gnostic-models' `OpenAPIv2.proto`), which client-go's
//! `OpenAPISchema` asks for (kubectl's v2 `explain`, client-side apply's patch strategies).
//!
//! Written: `swagger`, `info` and the `definitions` (every schema keyword v2 has, vendor
//! extensions and `default`/`enum`/`example` values as YAML text, JSON being YAML, as gnostic
//! reads them back). Deliberate difference from kube-apiserver: no `paths` in this form (the
//! JSON form has them; client-go reads the definitions).

use serde_json::{Map, Value};

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn string(out: &mut Vec<u8>, field: u32, s: &str) {
    bytes(out, field, s.as_bytes());
}

/// An `Any` holding `v` as YAML (its JSON text).
fn any(out: &mut Vec<u8>, field: u32, v: &Value) {
    let mut m = Vec::new();
    string(&mut m, 2, &v.to_string());
    bytes(out, field, &m);
}

fn named_any(out: &mut Vec<u8>, field: u32, name: &str, v: &Value) {
    let mut m = Vec::new();
    string(&mut m, 1, name);
    any(&mut m, 2, v);
    bytes(out, field, &m);
}

fn named_schema(out: &mut Vec<u8>, field: u32, name: &str, s: &Value) {
    let mut m = Vec::new();
    string(&mut m, 1, name);
    bytes(&mut m, 2, &schema(s));
    bytes(out, field, &m);
}

/// One `Schema` message.
fn schema(s: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    let Value::Object(m) = s else { return out };
    let str_field = |out: &mut Vec<u8>, k: &str, f: u32| {
        if let Some(Value::String(v)) = m.get(k) {
            string(out, f, v);
        }
    };
    let num = |out: &mut Vec<u8>, k: &str, f: u32| {
        if let Some(v) = m.get(k).and_then(Value::as_f64) {
            key(out, f, 1);
            out.extend_from_slice(&v.to_le_bytes());
        }
    };
    let int = |out: &mut Vec<u8>, k: &str, f: u32| {
        if let Some(v) = m.get(k).and_then(Value::as_i64) {
            key(out, f, 0);
            varint(out, v as u64);
        }
    };
    let flag = |out: &mut Vec<u8>, k: &str, f: u32| {
        if m.get(k).and_then(Value::as_bool) == Some(true) {
            key(out, f, 0);
            varint(out, 1);
        }
    };
    str_field(&mut out, "$ref", 1);
    str_field(&mut out, "format", 2);
    str_field(&mut out, "title", 3);
    str_field(&mut out, "description", 4);
    if let Some(d) = m.get("default") {
        any(&mut out, 5, d);
    }
    num(&mut out, "multipleOf", 6);
    num(&mut out, "maximum", 7);
    flag(&mut out, "exclusiveMaximum", 8);
    num(&mut out, "minimum", 9);
    flag(&mut out, "exclusiveMinimum", 10);
    int(&mut out, "maxLength", 11);
    int(&mut out, "minLength", 12);
    str_field(&mut out, "pattern", 13);
    int(&mut out, "maxItems", 14);
    int(&mut out, "minItems", 15);
    flag(&mut out, "uniqueItems", 16);
    int(&mut out, "maxProperties", 17);
    int(&mut out, "minProperties", 18);
    if let Some(Value::Array(req)) = m.get("required") {
        for r in req.iter().filter_map(Value::as_str) {
            string(&mut out, 19, r);
        }
    }
    if let Some(Value::Array(e)) = m.get("enum") {
        for v in e {
            any(&mut out, 20, v);
        }
    }
    match m.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut item = Vec::new();
            key(&mut item, 2, 0);
            varint(&mut item, u64::from(*b));
            bytes(&mut out, 21, &item);
        }
        Some(s @ Value::Object(_)) => {
            let mut item = Vec::new();
            bytes(&mut item, 1, &schema(s));
            bytes(&mut out, 21, &item);
        }
        _ => {}
    }
    let types: Vec<&str> = match m.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() {
        let mut item = Vec::new();
        for t in types {
            string(&mut item, 1, t);
        }
        bytes(&mut out, 22, &item);
    }
    let items: Vec<&Value> = match m.get("items") {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(s @ Value::Object(_)) => vec![s],
        _ => Vec::new(),
    };
    if !items.is_empty() {
        let mut item = Vec::new();
        for s in items {
            bytes(&mut item, 1, &schema(s));
        }
        bytes(&mut out, 23, &item);
    }
    if let Some(Value::Array(all)) = m.get("allOf") {
        for s in all {
            bytes(&mut out, 24, &schema(s));
        }
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        let mut p = Vec::new();
        for (name, s) in props {
            named_schema(&mut p, 1, name, s);
        }
        bytes(&mut out, 25, &p);
    }
    flag(&mut out, "readOnly", 27);
    if let Some(x) = m.get("example") {
        any(&mut out, 30, x);
    }
    for (k, v) in m.iter().filter(|(k, _)| k.starts_with("x-")) {
        named_any(&mut out, 31, k, v);
    }
    out
}

/// The protobuf form of a v2 document (JSON).
pub(crate) fn document(doc: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(Value::String(s)) = doc.get("swagger") {
        string(&mut out, 1, s);
    }
    if let Some(Value::Object(info)) = doc.get("info") {
        let mut i = Vec::new();
        for (k, f) in [("title", 1), ("version", 2)] {
            if let Some(Value::String(s)) = info.get(k) {
                string(&mut i, f, s);
            }
        }
        bytes(&mut out, 2, &i);
    }
    let empty = Map::new();
    let defs = doc
        .get("definitions")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut d = Vec::new();
    for (name, s) in defs {
        named_schema(&mut d, 1, name, s);
    }
    bytes(&mut out, 9, &d);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_gnostics_field_numbers() {
        let doc = json!({"swagger": "2.0", "info": {"title": "K", "version": "v"},
            "definitions": {"a.B": {"type": "object", "required": ["x"],
                "x-kubernetes-list-type": "map",
                "properties": {"x": {"type": "string", "enum": ["E"]}}}}});
        let b = document(&doc);
        // swagger = 1 ("2.0"), info = 2 {title = 1, version = 2}
        assert_eq!(&b[..5], &[0x0a, 3, b'2', b'.', b'0']);
        assert_eq!(&b[5..11], &[0x12, 6, 0x0a, 1, b'K', 0x12]);
        // definitions = 9, one NamedSchema named "a.B"
        let defs = &b[13..];
        assert_eq!(defs[0], 0x4a);
        assert!(defs.windows(3).any(|w| w == b"a.B"));
        // the extension as a NamedAny with its YAML ("map" in JSON)
        assert!(defs.windows(5).any(|w| w == b"\"map\""));
        // the enum value as an Any's YAML
        assert!(defs.windows(3).any(|w| w == b"\"E\""));
    }
}
