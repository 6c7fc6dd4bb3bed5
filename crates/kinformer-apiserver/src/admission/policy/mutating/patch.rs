//! What a mutation's expression builds and how it is applied, as kube-apiserver's
//! `k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch` applies it:
//!
//! - the `Object` types (`Object{...}`, `Object.spec{...}`, any `Object.<path>` named after
//!   the field path from the root; list items and map values after their field's path) and
//!   `JSONPatch{op, path, from, value}`, which only mutation expressions may construct, and
//!   `jsonpatch.escapeKey`;
//! - an `ApplyConfiguration` is merged into the object with the schema's list and map types
//!   (structured-merge-diff's merge, right-hand side wins, no ownership: nothing is removed),
//!   after refusing any value that lands on an atomic list, map or struct;
//! - a `JSONPatch` list is applied as evanphx/json-patch v4 applies it (negative indices, a
//!   `replace` of a missing key adds it, a failed `test` discards the whole patch silently).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, LazyLock};

use cel::common::types::{CelString, Type};
use cel::common::value::{CowVal, Val};
use cel::objects::{Key, Map as CelMap};
use cel::{Env, ExecutionError, StructType, Value as Cel};
use parking_lot::Mutex;
use serde_json::{Map, Value};

use crate::objects::apply::merge::merge;
use crate::objects::apply::schema::{ListType, MapType, MergeSchema};

/// The hidden key under which a constructed value keeps its type's name.
const TYPE_KEY: &str = "\u{0}type";
/// The root type of an apply configuration.
const OBJECT: &str = "Object";
/// The type of one JSON Patch operation.
const JSON_PATCH: &str = "JSONPatch";
/// Environments kept, by the type names their expressions construct.
const MAX_ENVS: usize = 256;
/// The deepest value converted (the schemas' own bound).
const MAX_DEPTH: usize = 64;

static ENVS: LazyLock<Mutex<HashMap<String, Arc<Env>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The type names `expr` may construct: `JSONPatch` and every `Object` or `Object.<path>`
/// followed by `{` (read from the text: a name inside a string literal only adds a type).
pub(super) fn constructed_types(expr: &str) -> impl Iterator<Item = String> + '_ {
    let bytes = expr.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut names = Vec::new();
    for (start, _) in expr
        .match_indices(OBJECT)
        .chain(expr.match_indices(JSON_PATCH))
    {
        if start > 0 && (ident(bytes[start - 1]) || bytes[start - 1] == b'.') {
            continue;
        }
        let mut end = start;
        while end < bytes.len() && (ident(bytes[end]) || bytes[end] == b'.') {
            end += 1;
        }
        let name = &expr[start..end];
        let rest = expr[end..].trim_start();
        let object_path = name == OBJECT || name.starts_with("Object.");
        if rest.starts_with('{') && (name == JSON_PATCH || object_path) {
            names.push(name.to_string());
        }
    }
    names.into_iter()
}

/// The environment mutation expressions constructing `names` are evaluated in: Kubernetes'
/// libraries, those types and `jsonpatch.escapeKey` (cached by the names).
pub(super) fn env_for(names: &BTreeSet<String>) -> Arc<Env> {
    let key = names.iter().cloned().collect::<Vec<_>>().join(" ");
    if let Some(env) = ENVS.lock().get(&key) {
        return env.clone();
    }
    let mut env = crate::crd::kubernetes_env();
    for name in names {
        if let Err(e) = env.add_type(Constructed(Type::new_struct(name.clone()))) {
            tracing::warn!("the CEL type {name} could not be added: {e}");
        }
    }
    if let Err(e) = cel::add_overload!(env, fn escape_key: (CelString) -> CelString, name = "jsonpatch.escapeKey")
    {
        tracing::warn!("jsonpatch.escapeKey could not be added: {e}");
    }
    let env = Arc::new(env);
    let mut envs = ENVS.lock();
    if envs.len() >= MAX_ENVS {
        envs.clear();
    }
    envs.insert(key, env.clone());
    env
}

/// `jsonpatch.escapeKey`: a key as a JSON Pointer token (`~` as `~0`, `/` as `~1`).
fn escape_key(s: &CelString<'_>) -> CelString<'static> {
    CelString::from(s.inner().replace('~', "~0").replace('/', "~1"))
}

/// A type an expression constructs: a map of its fields that remembers the type's name.
struct Constructed(Type);

impl StructType for Constructed {
    fn get_type(&self) -> &Type {
        &self.0
    }

    fn new_value<'b, 'v>(
        &self,
        fields: BTreeMap<String, CowVal<'b, 'v>>,
    ) -> Result<Box<dyn Val + 'v>, ExecutionError> {
        let name = self.0.name();
        let mut map = HashMap::with_capacity(fields.len() + 1);
        for (field, value) in fields {
            let value = Cel::try_from(&*value)?;
            if name == JSON_PATCH {
                if !matches!(field.as_str(), "op" | "path" | "from" | "value") {
                    return Err(ExecutionError::function_error(
                        JSON_PATCH,
                        format!("unexpected JSONPatchType field: {field}"),
                    ));
                }
                if field != "value" && !matches!(value, Cel::String(_)) {
                    return Err(ExecutionError::function_error(
                        JSON_PATCH,
                        format!(
                            "unexpected type {} for JSONPatchType '{field}' field",
                            type_name(&value)
                        ),
                    ));
                }
            }
            map.insert(Key::String(Arc::new(field)), value);
        }
        map.insert(
            Key::String(Arc::new(TYPE_KEY.to_string())),
            Cel::String(Arc::new(name.to_string())),
        );
        let value = Cel::Map(CelMap { map: Arc::new(map) });
        let boxed: Box<dyn Val> = value.try_into()?;
        Ok(boxed)
    }
}

/// The name of the type a constructed value was built as, if it is one.
fn constructed_as(v: &Cel) -> Option<&str> {
    match v {
        Cel::Map(m) => match m.map.get(&Key::String(Arc::new(TYPE_KEY.to_string()))) {
            Some(Cel::String(s)) => Some(s.as_str()),
            _ => None,
        },
        _ => None,
    }
}

/// A CEL value's type, as cel-go names it in these errors.
fn type_name(v: &Cel) -> String {
    if let Some(name) = constructed_as(v) {
        return name.to_string();
    }
    match v {
        Cel::List(_) => "list(dyn)",
        Cel::Map(_) => "map(dyn, dyn)",
        Cel::Int(_) => "int",
        Cel::UInt(_) => "uint",
        Cel::Float(_) => "double",
        Cel::String(_) => "string",
        Cel::Bytes(_) => "bytes",
        Cel::Bool(_) => "bool",
        Cel::Null => "null_type",
        Cel::Duration(_) => "google.protobuf.Duration",
        Cel::Timestamp(_) => "google.protobuf.Timestamp",
        _ => "dyn",
    }
    .to_string()
}

/// `v` as JSON. `path` is the type name a constructed value here must have (its field path
/// from the root `Object`); `None` accepts any (a JSON Patch value's own initializer).
fn to_json(v: &Cel, path: Option<&str>, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err("the value is nested too deeply".into());
    }
    Ok(match v {
        Cel::Null => Value::Null,
        Cel::Bool(b) => Value::Bool(*b),
        Cel::Int(i) => Value::from(*i),
        Cel::UInt(u) => Value::from(*u),
        Cel::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| format!("the number {f} is not JSON"))?,
        Cel::String(s) => Value::String(s.to_string()),
        Cel::Bytes(b) => {
            use base64::Engine;
            Value::String(base64::engine::general_purpose::STANDARD.encode(b.as_slice()))
        }
        Cel::Timestamp(t) => Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)),
        Cel::Duration(d) => Value::String(format!("{}s", d.num_milliseconds() as f64 / 1000.0)),
        Cel::List(items) => Value::Array(
            items
                .iter()
                .map(|i| to_json(i, path, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Cel::Map(m) => {
            let constructed = constructed_as(v);
            if let (Some(name), Some(want)) = (constructed, path)
                && name != want
            {
                return Err(format!(
                    "type mismatch: unexpected type name {name:?}, expected {want:?}, which matches field name path from root Object type"
                ));
            }
            let own = constructed.or(path).map(str::to_string);
            let mut out = Map::new();
            let mut entries: Vec<(&Key, &Cel)> = m.map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            for (k, value) in entries {
                let key = match k {
                    Key::String(s) if s.as_str() == TYPE_KEY => continue,
                    Key::String(s) => s.to_string(),
                    Key::Int(i) => i.to_string(),
                    Key::Uint(u) => u.to_string(),
                    Key::Bool(b) => b.to_string(),
                };
                // a constructed value's fields are typed by their path; a map's values by the
                // map field's own path
                let child = match (&own, constructed) {
                    (Some(p), Some(_)) => Some(format!("{p}.{key}")),
                    (Some(p), None) => Some(p.clone()),
                    (None, _) => None,
                };
                out.insert(key, to_json(value, child.as_deref(), depth + 1)?);
            }
            Value::Object(out)
        }
        other => return Err(format!("invalid return type: {}", type_name(other))),
    })
}

/// Merges an `ApplyConfiguration` expression's result into `object`.
pub(super) fn apply_configuration(
    result: &Cel,
    object: &mut Value,
    schema: &dyn MergeSchema,
) -> Result<(), String> {
    if constructed_as(result) != Some(OBJECT) {
        return Err(format!(
            "must evaluate to Object but got {}",
            type_name(result)
        ));
    }
    let Value::Object(mut patch) = to_json(result, Some(OBJECT), 0)? else {
        return Err("invalid return type".into());
    };
    let mut atomic = Vec::new();
    let mut nulls = Vec::new();
    let mut path = Vec::new();
    for (k, v) in &patch {
        path.push(k.clone());
        check(
            schema,
            v,
            &mut path,
            &format!(".{k}"),
            &mut atomic,
            &mut nulls,
        );
        path.pop();
    }
    if let Some(at) = nulls.first() {
        return Err(format!(
            "error applying patch: failed to convert patch object to typed object: {at}: expected a value, got null"
        ));
    }
    if !atomic.is_empty() {
        return Err(format!(
            "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {}",
            atomic.join(", ")
        ));
    }
    let Value::Object(live) = object else {
        return Err("error applying patch: the object is not an object".into());
    };
    for k in ["apiVersion", "kind"] {
        match live.get(k) {
            Some(v) => patch.insert(k.into(), v.clone()),
            None => patch.remove(k),
        };
    }
    *live = merge(schema, live, &patch);
    Ok(())
}

/// Collects the paths (`.spec.tolerations`, `.spec.containers[0].args`) where `v`, at the
/// schema path `path`, lands on an atomic list, map or struct, and where it is null.
fn check(
    schema: &dyn MergeSchema,
    v: &Value,
    path: &mut Vec<String>,
    shown: &str,
    atomic: &mut Vec<String>,
    nulls: &mut Vec<String>,
) {
    let sp: Vec<&str> = path.iter().map(String::as_str).collect();
    match v {
        Value::Null => nulls.push(shown.to_string()),
        Value::Object(m) => {
            if schema.map_at(&sp) == MapType::Atomic {
                atomic.push(shown.to_string());
                return;
            }
            for (k, x) in m {
                path.push(k.clone());
                check(schema, x, path, &format!("{shown}.{k}"), atomic, nulls);
                path.pop();
            }
        }
        Value::Array(items) => {
            if schema.list_at(&sp) == ListType::Atomic {
                atomic.push(shown.to_string());
                return;
            }
            path.push("[]".into());
            for (i, x) in items.iter().enumerate() {
                check(schema, x, path, &format!("{shown}[{i}]"), atomic, nulls);
            }
            path.pop();
        }
        _ => {}
    }
}

/// Applies a `JSONPatch` expression's result (a list of `JSONPatch`) to `object`.
pub(super) fn json_patch(result: &Cel, object: &mut Value) -> Result<(), String> {
    let wrong = || {
        format!(
            "must evaluate to list(JSONPatch) but got {}",
            type_name(result)
        )
    };
    let Cel::List(items) = result else {
        return Err(wrong());
    };
    let mut ops = Vec::with_capacity(items.len());
    for item in items.iter() {
        if constructed_as(item) != Some(JSON_PATCH) {
            return Err(wrong());
        }
        let Cel::Map(m) = item else {
            return Err(wrong());
        };
        let field = |k: &str| m.map.get(&Key::String(Arc::new(k.to_string())));
        let text = |k: &str| match field(k) {
            Some(Cel::String(s)) => s.to_string(),
            _ => String::new(),
        };
        let mut op = Map::new();
        op.insert("op".into(), text("op").into());
        op.insert("path".into(), text("path").into());
        if !text("from").is_empty() {
            op.insert("from".into(), text("from").into());
        }
        if let Some(v) = field("value") {
            let v = to_json(v, None, 0).map_err(|e| {
                format!("JSONPath valueExpression evaluated to a type that could not marshal to JSON: {e}")
            })?;
            op.insert("value".into(), v);
        }
        ops.push(op);
    }
    let original = object.clone();
    for op in ops {
        match apply_op(op, object) {
            Ok(()) => {}
            Err(Failed::Test) => {
                // a failed test discards the whole patch, and is no error
                *object = original;
                return Ok(());
            }
            Err(Failed::Error(e)) => return Err(format!("JSON Patch: {e}")),
        }
    }
    Ok(())
}

/// Why one operation was not applied.
enum Failed {
    /// A `test` that did not hold.
    Test,
    /// Anything else, in evanphx/json-patch's words where known.
    Error(String),
}

/// Applies one operation as evanphx/json-patch v4 does.
fn apply_op(mut op: Map<String, Value>, doc: &mut Value) -> Result<(), Failed> {
    let kind = op
        .get("op")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let path = op
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if !matches!(
        kind.as_str(),
        "add" | "remove" | "replace" | "move" | "copy" | "test"
    ) {
        return Err(Failed::Error(format!("Unexpected kind: {kind}")));
    }
    if matches!(kind.as_str(), "move" | "copy") && !op.contains_key("from") {
        return Err(Failed::Error(format!(
            "{kind} operation failed to decode from: operation, missing from field: missing value"
        )));
    }
    let (parent_path, last) = match path.rfind('/') {
        Some(i) => (&path[..i], unescape(&path[i + 1..])),
        None => ("", path.clone()),
    };
    let parent = doc.pointer(parent_path);
    // a negative index counts from the end (of the array with the new item, for an add)
    if let (Some(Value::Array(items)), Ok(n)) = (parent, last.parse::<i64>())
        && n < 0
    {
        let len = items.len() as i64 + i64::from(kind == "add");
        if n >= -len {
            let resolved = format!("{parent_path}/{}", len + n);
            op.insert("path".into(), resolved.into());
        }
    }
    match (kind.as_str(), parent) {
        ("add", None) => {
            return Err(Failed::Error(format!(
                "add operation does not apply: doc is missing path: {path:?}: missing value"
            )));
        }
        // a replace of a key the object lacks sets it
        ("replace", Some(Value::Object(m))) if !m.contains_key(&last) => {
            op.insert("op".into(), "add".into());
        }
        ("replace", _) if doc.pointer(&path).is_none() => {
            return Err(Failed::Error(format!(
                "replace operation does not apply: doc is missing key: {path}: missing value"
            )));
        }
        ("remove", Some(Value::Object(m))) if !m.contains_key(&last) => {
            return Err(Failed::Error(format!(
                "error in remove for path: '{path}': Unable to remove nonexistent key: {last}: missing value"
            )));
        }
        ("remove", Some(Value::Array(items)))
            if last.parse::<usize>().is_ok_and(|i| i >= items.len()) =>
        {
            return Err(Failed::Error(format!(
                "error in remove for path: '{path}': Unable to access invalid index: {last}: invalid index referenced"
            )));
        }
        ("test", None) => {
            return Err(Failed::Error(format!(
                "test operation does not apply: is missing path: {path}"
            )));
        }
        ("test", Some(_)) if doc.pointer(&path).is_none() => return Err(Failed::Test),
        _ => {}
    }
    let patch: json_patch::Patch = serde_json::from_value(Value::Array(vec![Value::Object(op)]))
        .map_err(|e| Failed::Error(format!("{kind} operation could not be read: {e}")))?;
    json_patch::patch(doc, &patch).map_err(|e| match e.kind {
        json_patch::PatchErrorKind::TestFailed => Failed::Test,
        other => Failed::Error(format!("{kind} operation does not apply: {other}: {path}")),
    })
}

/// A JSON Pointer token's text.
fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}
