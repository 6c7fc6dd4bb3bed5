//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) for the kinds
//! whose messages the server knows: the `k8s\0` envelope around `runtime.Unknown`, then the
//! access and identity reviews `kubectl auth can-i` / `auth whoami` send. Other kinds are
//! still refused with 415 (responses are always JSON, which client-go's negotiator accepts).
//!
//! The wire format is read defensively: every length is checked against what is left, nesting
//! is bounded, and malformed input is a 400, never a panic.

use serde_json::{Map, Value};

use crate::resource::ResourceInfo;
use crate::status::ApiError;

/// The media type.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The envelope's magic prefix.
const MAGIC: &[u8] = b"k8s\0";

/// One field of a message: its number and its value.
#[derive(Debug, PartialEq)]
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

fn bad(why: &str) -> ApiError {
    ApiError::bad_request(format!("cannot decode protobuf body: {why}"))
}

fn varint(buf: &mut &[u8]) -> Result<u64, ApiError> {
    let mut out = 0u64;
    for i in 0..10 {
        let (&b, rest) = buf.split_first().ok_or_else(|| bad("truncated varint"))?;
        *buf = rest;
        out |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(out);
        }
    }
    Err(bad("varint too long"))
}

/// The fields of one message, in order.
fn fields(mut buf: &[u8]) -> Result<Vec<(u64, Field<'_>)>, ApiError> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let key = varint(&mut buf)?;
        let (num, wire) = (key >> 3, key & 7);
        let f = match wire {
            0 => Field::Varint(varint(&mut buf)?),
            1 | 5 => {
                let n = if wire == 1 { 8 } else { 4 };
                if buf.len() < n {
                    return Err(bad("truncated fixed field"));
                }
                buf = &buf[n..];
                Field::Fixed
            }
            2 => {
                let n = usize::try_from(varint(&mut buf)?).map_err(|_| bad("length"))?;
                if buf.len() < n {
                    return Err(bad("length past the end"));
                }
                let (b, rest) = buf.split_at(n);
                buf = rest;
                Field::Bytes(b)
            }
            _ => return Err(bad("unsupported wire type")),
        };
        out.push((num, f));
    }
    Ok(out)
}

fn string(b: &[u8]) -> Result<String, ApiError> {
    String::from_utf8(b.to_vec()).map_err(|_| bad("string is not UTF-8"))
}

/// A message of string fields (and nested messages given by `nested`) as a JSON object.
fn message(
    buf: &[u8],
    strings: &[(u64, &str)],
    nested: &[(u64, &str, &Schema)],
    depth: usize,
) -> Result<Map<String, Value>, ApiError> {
    if depth > 8 {
        return Err(bad("nested too deeply"));
    }
    let mut out = Map::new();
    for (num, f) in fields(buf)? {
        if let Field::Bytes(b) = f {
            if let Some((_, name)) = strings.iter().find(|(n, _)| *n == num) {
                out.insert(name.to_string(), Value::String(string(b)?));
            } else if let Some((_, name, schema)) = nested.iter().find(|(n, _, _)| *n == num) {
                let m = message(b, schema.strings, schema.nested, depth + 1)?;
                out.insert(name.to_string(), Value::Object(m));
            }
        }
    }
    Ok(out)
}

/// The fields of a message the decoder reads (string fields and nested messages).
struct Schema {
    strings: &'static [(u64, &'static str)],
    nested: &'static [(u64, &'static str, &'static Schema)],
}

const OBJECT_META: Schema = Schema {
    strings: &[(1, "name"), (2, "generateName"), (3, "namespace")],
    nested: &[],
};
const RESOURCE_ATTRIBUTES: Schema = Schema {
    strings: &[
        (1, "namespace"),
        (2, "verb"),
        (3, "group"),
        (4, "version"),
        (5, "resource"),
        (6, "subresource"),
        (7, "name"),
    ],
    nested: &[],
};
const NON_RESOURCE_ATTRIBUTES: Schema = Schema {
    strings: &[(1, "path"), (2, "verb")],
    nested: &[],
};
/// `SelfSubjectAccessReviewSpec` (`SubjectAccessReviewSpec` shares fields 1 and 2 and adds
/// `user` = 3).
const ACCESS_REVIEW_SPEC: Schema = Schema {
    strings: &[(3, "user"), (6, "uid")],
    nested: &[
        (1, "resourceAttributes", &RESOURCE_ATTRIBUTES),
        (2, "nonResourceAttributes", &NON_RESOURCE_ATTRIBUTES),
    ],
};
/// `SelfSubjectRulesReviewSpec`.
const RULES_REVIEW_SPEC: Schema = Schema {
    strings: &[(1, "namespace")],
    nested: &[],
};
/// `TokenReviewSpec`.
const TOKEN_REVIEW_SPEC: Schema = Schema {
    strings: &[(1, "token")],
    nested: &[],
};

/// The schema of the kinds this module decodes (fields 1 = metadata, 2 = spec).
fn spec_schema(res: &ResourceInfo) -> Option<&'static Schema> {
    const EMPTY: Schema = Schema {
        strings: &[],
        nested: &[],
    };
    match (res.group.as_str(), res.kind.as_str()) {
        (
            "authorization.k8s.io",
            "SelfSubjectAccessReview" | "SubjectAccessReview" | "LocalSubjectAccessReview",
        ) => Some(&ACCESS_REVIEW_SPEC),
        ("authorization.k8s.io", "SelfSubjectRulesReview") => Some(&RULES_REVIEW_SPEC),
        ("authentication.k8s.io", "TokenReview") => Some(&TOKEN_REVIEW_SPEC),
        ("authentication.k8s.io", "SelfSubjectReview") => Some(&EMPTY),
        _ => None,
    }
}

/// Whether `content_type` is the Kubernetes protobuf media type.
pub(crate) fn is_protobuf(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case(MEDIA_TYPE))
}

/// Whether protobuf bodies of `res` can be decoded.
pub(crate) fn decodable(res: &ResourceInfo) -> bool {
    spec_schema(res).is_some()
}

/// Decodes a protobuf body of `res` into its JSON form.
pub(crate) fn decode(res: &ResourceInfo, body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let schema = spec_schema(res).ok_or_else(|| {
        ApiError::unsupported_body_media_type(&["application/json", "application/yaml"])
    })?;
    let inner = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| bad("missing the k8s envelope"))?;
    // runtime.Unknown: 1 = typeMeta {1 = apiVersion, 2 = kind}, 2 = raw.
    let mut type_meta = Map::new();
    let mut raw: &[u8] = &[];
    for (num, f) in fields(inner)? {
        match (num, f) {
            (1, Field::Bytes(b)) => {
                type_meta = message(b, &[(1, "apiVersion"), (2, "kind")], &[], 0)?;
            }
            (2, Field::Bytes(b)) => raw = b,
            _ => {}
        }
    }
    let mut obj = type_meta;
    crate::objects::check_type_meta(res, &obj)?;
    for (num, f) in fields(raw)? {
        match (num, f) {
            (1, Field::Bytes(b)) => {
                let m = message(b, OBJECT_META.strings, OBJECT_META.nested, 1)?;
                obj.insert("metadata".into(), Value::Object(m));
            }
            (2, Field::Bytes(b)) => {
                let m = message(b, schema.strings, schema.nested, 1)?;
                obj.insert("spec".into(), Value::Object(m));
            }
            _ => {}
        }
    }
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::test_util::res;

    fn len_field(num: u64, b: &[u8]) -> Vec<u8> {
        let mut out = vec![((num << 3) | 2) as u8, b.len() as u8];
        out.extend_from_slice(b);
        out
    }

    #[test]
    fn decodes_a_self_subject_access_review() {
        let attrs = [len_field(2, b"list"), len_field(5, b"pods")].concat();
        let spec = len_field(1, &attrs);
        let raw = len_field(2, &spec);
        let tm = [
            len_field(1, b"authorization.k8s.io/v1"),
            len_field(2, b"SelfSubjectAccessReview"),
        ]
        .concat();
        let body = [MAGIC.to_vec(), len_field(1, &tm), len_field(2, &raw)].concat();
        let r = res("selfsubjectaccessreviews");
        let obj = decode(&r, &body).unwrap();
        assert_eq!(
            Value::Object(obj),
            serde_json::json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"verb": "list", "resource": "pods"}}})
        );
    }

    #[test]
    fn malformed_bodies_are_400() {
        let r = res("selfsubjectaccessreviews");
        for body in [
            &b"nope"[..],
            b"k8s\0\x0a\x7f",
            b"k8s\0\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
            b"k8s\0\x0f",
        ] {
            assert_eq!(decode(&r, body).unwrap_err().code, 400, "{body:?}");
        }
        assert_eq!(decode(&res("pods"), b"k8s\0").unwrap_err().code, 415);
    }
}
