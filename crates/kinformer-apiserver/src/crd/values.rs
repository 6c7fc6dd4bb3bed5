//! A custom resource's value validations, as kube-apiserver's schema validator (kube-openapi's
//! `validate` package, through apiextensions-apiserver) checks them and words them: numbers
//! (`minimum`, `maximum` and their exclusive forms, `multipleOf`, the range of an integer's
//! format), strings (`maxLength`, `minLength`, `pattern`: the first that fails), arrays
//! (`minItems`, `maxItems`), objects (`minProperties`, `maxProperties`), and the uniqueness of
//! `x-kubernetes-list-type: set` and `map` lists.
//!
//! kube-apiserver turns a failed `maxLength` into "Too long", and a failed `maxItems` or
//! `maxProperties` into "Too many"; a value out of its type's range is a cause without a field
//! (`<nil>`). Numbers are written as Go's `%v` writes them.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Number, Value};

use super::{Cause, go_value};
use crate::go_text::go_float;

/// A JSON number as kube-apiserver's decoder holds it: an `int64` when it is one, else a
/// `float64`.
#[derive(Clone, Copy)]
enum GoNum {
    Int(i64),
    Float(f64),
}

impl GoNum {
    fn of(n: &Number) -> Self {
        match n.as_i64() {
            Some(i) => Self::Int(i),
            None => Self::Float(n.as_f64().unwrap_or(f64::NAN)),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Self::Int(i) => i as f64,
            Self::Float(f) => f,
        }
    }

    fn go(self) -> String {
        match self {
            Self::Int(i) => i.to_string(),
            Self::Float(f) => go_float(f),
        }
    }
}

/// A number as Go's `%v` writes what kube-apiserver decoded it into.
pub(super) fn go_number(n: &Number) -> String {
    GoNum::of(n).go()
}

fn bound(sch: &Map<String, Value>, key: &str) -> Option<f64> {
    sch.get(key).and_then(Value::as_f64)
}

fn count(sch: &Map<String, Value>, key: &str) -> Option<i64> {
    sch.get(key).and_then(Value::as_i64)
}

fn flag(sch: &Map<String, Value>, key: &str) -> bool {
    sch.get(key).and_then(Value::as_bool) == Some(true)
}

fn invalid(path: &str, value: &str, detail: String) -> Cause {
    (
        path.to_string(),
        "FieldValueInvalid".into(),
        format!("Invalid value: {value}: {detail}"),
    )
}

/// A cause without a field, as kube-apiserver words errors its validator does not type.
fn unfielded(detail: String) -> Cause {
    invalid("<nil>", "\"\"", detail)
}

/// Whether `f` is a whole number as go-openapi's `IsFloat64AJSONInteger` decides it (within
/// 2^53, a relative error under 1e-9 above the truncated value).
fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    if f == f.trunc() {
        return true;
    }
    if f < 0.0 {
        return false;
    }
    let g = f.trunc();
    if g == 0.0 {
        return false;
    }
    (f - g).abs() / (f.abs() + g.abs()) < 1e-9
}

/// The numeric type and format the range check uses: only for a schema with one type, and
/// only the formats that type knows.
fn numeric_kind<'a>(ty: &'a str, format: &'a str) -> (&'a str, &'a str) {
    match (ty, format) {
        ("integer", "int32" | "int64") | ("number", "float" | "double") => (ty, format),
        ("integer" | "number", _) => (ty, ""),
        _ => ("", ""),
    }
}

/// go-openapi's `IsValueValidAgainstRange`: whether `v` fits the type and format, else the
/// error (`prefix` names what is checked: the value or a bound).
fn out_of_range(v: GoNum, ty: &str, format: &str, prefix: &str, path: &str) -> Option<Cause> {
    let fits = match (ty, v) {
        ("integer", GoNum::Int(i)) => format != "int32" || i32::try_from(i).is_ok(),
        ("integer", GoNum::Float(f)) => {
            f == f.trunc()
                && if format == "int32" {
                    (f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&f)
                } else {
                    (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f)
                }
        }
        (_, v) if matches!(format, "float") => v.as_f64().abs() <= f64::from(f32::MAX),
        _ => true,
    };
    if fits {
        return None;
    }
    let what = if format.is_empty() {
        format!("{ty} (default format)")
    } else {
        format!("{ty} with format {format}")
    };
    Some(unfielded(format!(
        "{prefix} value must be of type {what} in {path}"
    )))
}

/// A number's checks, in go-openapi's order: its range, then `multipleOf`, `minimum`,
/// `maximum`.
pub(super) fn check_number(
    sch: &Map<String, Value>,
    n: &Number,
    ty: &str,
    format: &str,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    let v = GoNum::of(n);
    let (ty, format) = numeric_kind(ty, format);
    causes.extend(out_of_range(v, ty, format, "Checked", path));
    // A bound out of the type's range is reported, then compared as a float.
    let native = |b: f64, prefix: &str, causes: &mut Vec<Cause>| {
        let err = out_of_range(GoNum::Float(b), ty, format, prefix, path);
        let ok = err.is_none();
        causes.extend(err);
        ok
    };
    if let Some(factor) = bound(sch, "multipleOf") {
        let native = native(factor, "MultipleOf", causes);
        let bad = match v {
            GoNum::Int(i) if native => {
                let factor = factor as i64;
                if factor <= 0 {
                    Some(format!(
                        "factor MultipleOf declared for {path} must be positive: {factor}"
                    ))
                } else {
                    (i % factor != 0)
                        .then(|| format!("{path} in body should be a multiple of {factor}"))
                }
            }
            _ if factor <= 0.0 => Some(format!(
                "factor MultipleOf declared for {path} must be positive: {}",
                go_float(factor)
            )),
            _ => {
                let data = v.as_f64();
                let mult = if factor < 1.0 {
                    1.0 / factor * data
                } else {
                    data / factor
                };
                (!is_json_integer(mult)).then(|| {
                    format!(
                        "{path} in body should be a multiple of {}",
                        go_float(factor)
                    )
                })
            }
        };
        if let Some(detail) = bad {
            causes.push(invalid(path, &v.go(), detail));
        }
    }
    for (key, exclusive_key, is_min) in [
        ("minimum", "exclusiveMinimum", true),
        ("maximum", "exclusiveMaximum", false),
    ] {
        let Some(b) = bound(sch, key) else { continue };
        let prefix = if is_min {
            "Minimum boundary"
        } else {
            "Maximum boundary"
        };
        let native = native(b, prefix, causes);
        let exclusive = flag(sch, exclusive_key);
        let (fails, shown) = match v {
            GoNum::Int(i) if native => {
                let b = b as i64;
                let fails = match (is_min, exclusive) {
                    (true, false) => i < b,
                    (true, true) => i <= b,
                    (false, false) => i > b,
                    (false, true) => i >= b,
                };
                (fails, b.to_string())
            }
            _ => {
                let d = v.as_f64();
                let fails = match (is_min, exclusive) {
                    (true, false) => d < b,
                    (true, true) => d <= b,
                    (false, false) => d > b,
                    (false, true) => d >= b,
                };
                (fails, go_float(b))
            }
        };
        if fails {
            let relation = match (is_min, exclusive) {
                (true, false) => "greater than or equal to",
                (true, true) => "greater than",
                (false, false) => "less than or equal to",
                (false, true) => "less than",
            };
            causes.push(invalid(
                path,
                &v.go(),
                format!("{path} in body should be {relation} {shown}"),
            ));
        }
    }
}

/// Compiled `pattern`s, shared by every validation (a CRD's few patterns are compiled once).
type Compiled = Result<Arc<regex::Regex>, String>;

static PATTERNS: parking_lot::Mutex<Option<HashMap<String, Compiled>>> =
    parking_lot::const_mutex(None);

/// The most patterns kept compiled; past it the cache starts again.
const MAX_PATTERNS: usize = 1024;

/// The most memory one compiled pattern may take (the schema is the client's input).
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

pub(super) fn pattern(p: &str) -> Compiled {
    let mut cache = PATTERNS.lock();
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some(r) = cache.get(p) {
        return r.clone();
    }
    if cache.len() >= MAX_PATTERNS {
        cache.clear();
    }
    let compiled = regex::RegexBuilder::new(p)
        .size_limit(PATTERN_SIZE_LIMIT)
        .build()
        .map(Arc::new)
        .map_err(|e| e.to_string());
    cache.insert(p.to_string(), compiled.clone());
    compiled
}

/// A string's checks: `maxLength` (in characters, "Too long"), `minLength`, `pattern`; only the
/// first that fails is reported, as go-openapi does.
pub(super) fn check_string(sch: &Map<String, Value>, s: &str, path: &str, causes: &mut Vec<Cause>) {
    let chars = || i64::try_from(s.chars().count()).unwrap_or(i64::MAX);
    if let Some(max) = count(sch, "maxLength")
        && chars() > max
    {
        causes.push((
            path.to_string(),
            "FieldValueTooLong".into(),
            format!(
                "Too long: may not be more than {max} {}",
                if max == 1 { "byte" } else { "bytes" }
            ),
        ));
        return;
    }
    let quoted = go_value(&Value::String(s.to_string()));
    if let Some(min) = count(sch, "minLength")
        && chars() < min
    {
        causes.push(invalid(
            path,
            &quoted,
            format!("{path} in body should be at least {min} chars long"),
        ));
        return;
    }
    if let Some(p) = sch.get("pattern").and_then(Value::as_str) {
        let detail = match pattern(p) {
            Ok(re) if re.is_match(s) => return,
            Ok(_) => format!("{path} in body should match '{p}'"),
            Err(e) => format!("{path} in body should match '{p}, but pattern is invalid: {e}'"),
        };
        causes.push(invalid(path, &quoted, detail));
    }
}

/// An array's size against `minItems` and `maxItems` (after its items' own causes).
pub(super) fn check_items(
    sch: &Map<String, Value>,
    len: usize,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    check_size(sch, ("minItems", "maxItems", "items"), len, path, causes);
}

/// An object's size against `minProperties` and `maxProperties` (before its fields' causes).
pub(super) fn check_properties(
    sch: &Map<String, Value>,
    len: usize,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    check_size(
        sch,
        ("minProperties", "maxProperties", "properties"),
        len,
        path,
        causes,
    );
}

/// A size against its schema's minimum and maximum (`keys`: their names, and what is counted
/// in the minimum's message): too few is invalid, too many is kube's "Too many" (in items,
/// whatever is counted).
fn check_size(
    sch: &Map<String, Value>,
    (min_key, max_key, counted): (&str, &str, &str),
    len: usize,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    if let Some(min) = count(sch, min_key)
        && len < min
    {
        causes.push(invalid(
            path,
            &len.to_string(),
            format!("{path} in body should have at least {min} {counted}"),
        ));
    }
    if let Some(max) = count(sch, max_key)
        && len > max
    {
        causes.push((
            path.to_string(),
            "FieldValueTooMany".into(),
            format!(
                "Too many: {len}: must have at most {max} {}",
                if max == 1 { "item" } else { "items" }
            ),
        ));
    }
}

/// The items of `x-kubernetes-list-type: set` and `map` lists must be unique (by value, or by
/// the `x-kubernetes-list-map-keys` fields): the first repeat of each is reported, after every
/// schema cause, as kube-apiserver does.
pub(super) fn list_duplicates(
    schema: &Value,
    v: &Value,
    path: &str,
    depth: usize,
    causes: &mut Vec<Cause>,
) {
    let Value::Object(sch) = schema else { return };
    if depth > super::MAX_DEPTH {
        return;
    }
    let child = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match v {
        Value::Object(obj) => {
            let props = sch.get("properties").and_then(Value::as_object);
            let additional = sch.get("additionalProperties").filter(|a| a.is_object());
            for (k, x) in obj {
                if let Some(s) = props.and_then(|p| p.get(k)).or(additional) {
                    list_duplicates(s, x, &child(k), depth + 1, causes);
                }
            }
        }
        Value::Array(items) => {
            let keys: Option<Vec<&str>> =
                match sch.get("x-kubernetes-list-type").and_then(Value::as_str) {
                    Some("set") => Some(Vec::new()),
                    Some("map") => Some(
                        sch.get("x-kubernetes-list-map-keys")
                            .and_then(Value::as_array)
                            .map(|ks| ks.iter().filter_map(Value::as_str).collect())
                            .unwrap_or_default(),
                    ),
                    _ => None,
                };
            if let Some(keys) = keys {
                let mut seen: Vec<(Value, bool)> = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let id = if keys.is_empty() {
                        item.clone()
                    } else {
                        Value::Object(
                            keys.iter()
                                .filter_map(|k| Some((k.to_string(), item.get(*k)?.clone())))
                                .collect(),
                        )
                    };
                    match seen.iter_mut().find(|(s, _)| *s == id) {
                        Some((_, reported @ false)) => {
                            *reported = true;
                            causes.push((
                                format!("{path}[{i}]"),
                                "FieldValueDuplicate".into(),
                                format!("Duplicate value: {}", go_value(&id)),
                            ));
                        }
                        Some(_) => {}
                        None => seen.push((id, false)),
                    }
                }
            }
            if let Some(item_schema) = sch.get("items") {
                for (i, x) in items.iter().enumerate() {
                    list_duplicates(item_schema, x, &format!("{path}[{i}]"), depth + 1, causes);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_as_go_openapi_decides_them() {
        assert!(is_json_integer(4.0));
        assert!(is_json_integer(-4.0));
        assert!(!is_json_integer(1.4));
        assert!(!is_json_integer(-1.4));
        assert!(is_json_integer(2.000_000_000_01));
        assert!(!is_json_integer(f64::NAN));
        assert!(!is_json_integer(1e300));
    }
}
