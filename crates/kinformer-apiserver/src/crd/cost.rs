//! The estimated cost of a CRD's CEL rules, checked when the CRD is written, as
//! kube-apiserver's `apiextensions-apiserver` checks it (`validation.go`, with cel-go's
//! `checker/cost.go` and Kubernetes' `library/cost.go` estimating each expression): a rule
//! whose worst case, times the number of values it may be evaluated on, exceeds 10,000,000
//! is refused, and so is a schema whose rules add up to more than 100,000,000. The worst case
//! comes from the schema's bounds: a string without `maxLength`, a list without `maxItems`, a
//! map without `maxProperties` is taken to be as large as a 3 MiB request allows.
//!
//! The walk over a schema's rules that applies these limits is `rule_checks`.

use std::sync::LazyLock;

use serde_json::{Value, json};

use super::{MAX_DEPTH, s};

mod estimate;
#[cfg(test)]
mod tests;

pub(super) use estimate::{Estimator, Outcome};

/// kube-apiserver's `StaticEstimatedCostLimit`: one expression, times its cardinality.
pub(super) const RULE_LIMIT: u64 = 10_000_000;
/// kube-apiserver's `StaticEstimatedCRDCostLimit`: every expression of one schema.
pub(super) const TOTAL_LIMIT: u64 = 100_000_000;
/// The largest request body, which bounds what a schema leaves unbounded.
const MAX_REQUEST: u64 = 3 * 1024 * 1024;
/// The expressions named when the total is exceeded (the most costly, at least 1% of it).
pub(super) const MOST_EXPENSIVE: usize = 4;

const TRY: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

/// A node of a schema as a rule sees it: the schema, and whether it is a resource's root
/// (whose `apiVersion`, `kind` and `metadata` CEL sees whatever the schema declares).
#[derive(Clone, Copy, Debug)]
pub(super) struct Node<'a> {
    schema: &'a Value,
    root: bool,
}

static STRING: LazyLock<Value> = LazyLock::new(|| json!({"type": "string"}));
/// A map's keys: CEL's string type, which carries no size (kube-apiserver's `StringType`).
static KEY: LazyLock<Value> = LazyLock::new(|| json!({"type": "string", "maxLength": 0}));
static METADATA: LazyLock<Value> = LazyLock::new(
    || json!({"type": "object", "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}}}),
);

fn uint(m: &Value, k: &str) -> Option<u64> {
    m.get(k)
        .and_then(Value::as_i64)
        .map(|n| u64::try_from(n).unwrap_or(0))
}

/// CEL's reserved words, which a property's name is escaped from (`__namespace__`).
const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The name CEL gives a property (kube-apiserver's `cel.Escape`): `__dash__` for `-`,
/// `__dot__` for `.`, `__slash__` for `/`, `__underscores__` for `__`, `__in__` for the
/// reserved `in`; `None` when the name cannot be escaped (it starts with a digit or holds
/// another character), and CEL does not see the property.
pub(super) fn escape(name: &str) -> Option<String> {
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(r) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = r;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// What CEL makes of a schema node (kube-apiserver's `SchemaDeclType`).
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Kind {
    Str,
    Bytes,
    Int,
    Double,
    Bool,
    Duration,
    Timestamp,
    /// `x-kubernetes-int-or-string`.
    Dyn,
    List,
    Map,
    Object,
}

impl<'a> Node<'a> {
    pub(super) fn new(schema: &'a Value, root: bool) -> Self {
        Node { schema, root }
    }

    fn of(schema: &'a Value) -> Self {
        Node {
            schema,
            root: Node::is_embedded(schema),
        }
    }

    /// Whether a schema is an embedded resource's (whose root CEL sees as a resource's).
    pub(super) fn is_embedded(schema: &Value) -> bool {
        schema.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true))
    }

    /// The node's CEL type; `None` for a node CEL does not see.
    pub(super) fn kind(&self) -> Option<Kind> {
        let sch = self.schema;
        if sch.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
            return Some(Kind::Dyn);
        }
        Some(match s(sch, &["type"]) {
            "array" => {
                self.items()?.kind()?;
                Kind::List
            }
            "object" => match sch.get("additionalProperties") {
                Some(v @ Value::Object(_)) => {
                    Node::of(v).kind()?;
                    Kind::Map
                }
                _ => Kind::Object,
            },
            "string" => match s(sch, &["format"]) {
                "byte" => Kind::Bytes,
                "duration" => Kind::Duration,
                "date" | "date-time" => Kind::Timestamp,
                _ => Kind::Str,
            },
            "boolean" => Kind::Bool,
            "number" => Kind::Double,
            "integer" => Kind::Int,
            _ => return None,
        })
    }

    pub(super) fn items(&self) -> Option<Node<'a>> {
        self.schema
            .get("items")
            .filter(|v| v.is_object())
            .map(Node::of)
    }

    pub(super) fn values(&self) -> Option<Node<'a>> {
        match self.schema.get("additionalProperties") {
            Some(v @ Value::Object(_)) => Some(Node::of(v)),
            _ => None,
        }
    }

    pub(super) fn key() -> Node<'static> {
        Node::new(&KEY, false)
    }

    /// The field `name` of an object node, as CEL sees it (at a resource's root, `apiVersion`
    /// and `kind` are plain strings and `metadata` has `name` and `generateName`, unless the
    /// schema declares all of them so).
    pub(super) fn field(&self, name: &str) -> Option<Node<'a>> {
        if self.kind()? != Kind::Object {
            return None;
        }
        let props = self.schema.get("properties").and_then(Value::as_object);
        if self.root && !self.declares_type_and_meta() {
            match name {
                "apiVersion" | "kind" => return Some(Node::new(&STRING, false)),
                "metadata" => return Some(Node::new(&METADATA, false)),
                _ => {}
            }
        }
        // CEL names a property by its escaped name (`my__dash__field` for `my-field`).
        let (_, p) = props?
            .iter()
            .find(|(k, _)| escape(k).as_deref() == Some(name))?;
        let child = Node::of(p);
        child.kind().map(|_| child)
    }

    fn declares_type_and_meta(&self) -> bool {
        let t = |v: Option<&Value>, ty: &str| v.is_some_and(|v| s(v, &["type"]) == ty);
        let p = self.schema.get("properties");
        let get = |k: &str| p.and_then(|p| p.get(k));
        let meta = get("metadata").and_then(|m| m.get("properties"));
        t(get("apiVersion"), "string")
            && t(get("kind"), "string")
            && t(get("metadata"), "object")
            && t(meta.and_then(|m| m.get("name")), "string")
            && t(meta.and_then(|m| m.get("generateName")), "string")
    }

    /// The largest size the node's value may have: characters (bytes) of a string, items of
    /// a list, entries of a map; 0 for everything else (kube-apiserver's `MaxElements`).
    pub(super) fn max_elements(&self) -> u64 {
        let sch = self.schema;
        let unbounded = MAX_REQUEST - 2;
        match self.kind() {
            Some(Kind::Dyn) => uint(sch, "maxLength").map_or(unbounded, |n| n.saturating_mul(4)),
            Some(Kind::Bytes) => uint(sch, "maxLength").unwrap_or(unbounded),
            Some(Kind::Duration) => 32,
            Some(Kind::Timestamp) => {
                if s(sch, &["format"]) == "date" {
                    12
                } else {
                    32
                }
            }
            Some(Kind::Str) => {
                if let Some(n) = uint(sch, "maxLength") {
                    n.saturating_mul(4)
                } else if let Some(Value::Array(e)) = sch.get("enum")
                    && !e.is_empty()
                {
                    e.iter()
                        .filter_map(|v| v.as_str().map(|x| x.len() as u64))
                        .max()
                        .unwrap_or(0)
                } else {
                    unbounded
                }
            }
            Some(Kind::List) => uint(sch, "maxItems")
                .unwrap_or_else(|| unbounded / (self.items().map_or(0, |i| i.min_size(0)) + 1)),
            Some(Kind::Map) => uint(sch, "maxProperties")
                .unwrap_or_else(|| unbounded / (self.values().map_or(0, |v| v.min_size(0)) + 6)),
            _ => 0,
        }
    }

    /// The fewest bytes the node's value takes in JSON (kube-apiserver's
    /// `MinSerializedSize`), which bounds how many of them fit in a request.
    pub(super) fn min_size(&self, depth: usize) -> u64 {
        let sch = self.schema;
        match self.kind() {
            Some(Kind::Dyn | Kind::Int | Kind::Double) => 1,
            Some(Kind::Bool) => 4,
            Some(Kind::Duration) => 3,
            Some(Kind::Timestamp) => {
                if s(sch, &["format"]) == "date" {
                    12
                } else {
                    21
                }
            }
            Some(Kind::Object) if depth < MAX_DEPTH => {
                let props = sch.get("properties").and_then(Value::as_object);
                let required = sch.get("required").and_then(Value::as_array);
                let mut n: u64 = 2;
                for name in required.into_iter().flatten().filter_map(Value::as_str) {
                    let Some(p) = props.and_then(|p| p.get(name)) else {
                        continue;
                    };
                    let child = Node::of(p);
                    if p.get("default").is_none() && child.kind().is_some() {
                        n = n.saturating_add(name.len() as u64 + child.min_size(depth + 1) + 4);
                    }
                }
                n
            }
            _ => 2,
        }
    }
}

/// How many values of a node a rule may meet in one object: the product of the bounds of
/// the lists and maps above it, `None` when one of them is unbounded.
pub(super) fn child_cardinality(parent: &Value, card: Option<u64>) -> Option<u64> {
    let n = match s(parent, &["type"]) {
        "object" if parent.get("additionalProperties").is_some() => uint(parent, "maxProperties")?,
        "array" => uint(parent, "maxItems")?,
        _ => 1,
    };
    card.map(|c| c.saturating_mul(n))
}

/// How many values a rule on `node` may meet when a list or map above it is unbounded: as
/// many of its smallest value as a request holds (kube-apiserver's `maxCardinality`).
pub(super) fn fallback_cardinality(node: Node<'_>) -> u64 {
    MAX_REQUEST / (node.min_size(0) + 1)
}

/// kube-apiserver's "exceeds budget by factor of" text.
pub(super) fn over_budget(what: &str, cost: u64, limit: u64) -> String {
    let f = cost as f64 / limit as f64;
    let factor = if f > 100.0 {
        "more than 100x".to_string()
    } else if f < 1.5 {
        format!("{f:.6}x")
    } else {
        format!("{f:.1}x")
    };
    format!("{what} exceeds budget by factor of {factor} {TRY}")
}
