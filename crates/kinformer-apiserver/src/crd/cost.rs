//! The estimated cost of a CRD's CEL rules, checked when the CRD is written, as
//! kube-apiserver's `apiextensions-apiserver` checks it (`validation.go`, with cel-go's
//! `checker/cost.go` and Kubernetes' `library/cost.go` estimating each expression): a rule
//! whose worst case, times the number of values it may be evaluated on, exceeds 10,000,000
//! is refused, and so is a schema whose rules add up to more than 100,000,000. The worst case
//! comes from the schema's bounds: a string without `maxLength`, a list without `maxItems`, a
//! map without `maxProperties` is taken to be as large as a 3 MiB request allows.
//!
//! The same walk refuses a transition rule (`oldSelf`) under the items of a list that is not a
//! `x-kubernetes-list-type: map`, where there is no old value to pair a new one with.

use std::sync::LazyLock;

use cel::common::ast::{Expr, IdedExpr, LiteralValue};
use serde_json::{Map, Value, json};

use super::{Cause, MAX_DEPTH};

mod estimate;
#[cfg(test)]
mod tests;

use estimate::Estimator;

/// kube-apiserver's `StaticEstimatedCostLimit`: one expression, times its cardinality.
const RULE_LIMIT: u64 = 10_000_000;
/// kube-apiserver's `StaticEstimatedCRDCostLimit`: every expression of one schema.
const TOTAL_LIMIT: u64 = 100_000_000;
/// The largest request body, which bounds what a schema leaves unbounded.
const MAX_REQUEST: u64 = 3 * 1024 * 1024;
/// The expressions named when the total is exceeded (the most costly, at least 1% of it).
const MOST_EXPENSIVE: usize = 4;

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

fn str_of<'a>(m: &'a Value, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or("")
}

fn uint(m: &Value, k: &str) -> Option<u64> {
    m.get(k)
        .and_then(Value::as_i64)
        .map(|n| u64::try_from(n).unwrap_or(0))
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
        let root = schema.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true));
        Node { schema, root }
    }

    /// The node's CEL type; `None` for a node CEL does not see.
    pub(super) fn kind(&self) -> Option<Kind> {
        let s = self.schema;
        if s.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
            return Some(Kind::Dyn);
        }
        Some(match str_of(s, "type") {
            "array" => {
                self.items()?.kind()?;
                Kind::List
            }
            "object" => match s.get("additionalProperties") {
                Some(v @ Value::Object(_)) => {
                    Node::of(v).kind()?;
                    Kind::Map
                }
                _ => Kind::Object,
            },
            "string" => match str_of(s, "format") {
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
        let child = Node::of(props?.get(name)?);
        child.kind().map(|_| child)
    }

    fn declares_type_and_meta(&self) -> bool {
        let t = |v: Option<&Value>, ty: &str| v.is_some_and(|v| str_of(v, "type") == ty);
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
        let s = self.schema;
        let unbounded = MAX_REQUEST - 2;
        match self.kind() {
            Some(Kind::Dyn) => uint(s, "maxLength").map_or(unbounded, |n| n.saturating_mul(4)),
            Some(Kind::Bytes) => uint(s, "maxLength").unwrap_or(unbounded),
            Some(Kind::Duration) => 32,
            Some(Kind::Timestamp) => {
                if str_of(s, "format") == "date" {
                    12
                } else {
                    32
                }
            }
            Some(Kind::Str) => {
                if let Some(n) = uint(s, "maxLength") {
                    n.saturating_mul(4)
                } else if let Some(Value::Array(e)) = s.get("enum")
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
            Some(Kind::List) => uint(s, "maxItems")
                .unwrap_or_else(|| unbounded / (self.items().map_or(0, |i| i.min_size(0)) + 1)),
            Some(Kind::Map) => uint(s, "maxProperties")
                .unwrap_or_else(|| unbounded / (self.values().map_or(0, |v| v.min_size(0)) + 6)),
            _ => 0,
        }
    }

    /// The fewest bytes the node's value takes in JSON (kube-apiserver's
    /// `MinSerializedSize`), which bounds how many of them fit in a request.
    pub(super) fn min_size(&self, depth: usize) -> u64 {
        let s = self.schema;
        match self.kind() {
            Some(Kind::Dyn | Kind::Int | Kind::Double) => 1,
            Some(Kind::Bool) => 4,
            Some(Kind::Duration) => 3,
            Some(Kind::Timestamp) => {
                if str_of(s, "format") == "date" {
                    12
                } else {
                    21
                }
            }
            Some(Kind::Object) if depth < MAX_DEPTH => {
                let props = s.get("properties").and_then(Value::as_object);
                let required = s.get("required").and_then(Value::as_array);
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
fn child_cardinality(parent: &Value, card: Option<u64>) -> Option<u64> {
    let n = match str_of(parent, "type") {
        "object" if parent.get("additionalProperties").is_some() => uint(parent, "maxProperties")?,
        "array" => uint(parent, "maxItems")?,
        _ => 1,
    };
    card.map(|c| guarded_product(c, n))
}

/// kube-apiserver's `multiplyWithOverflowGuard`.
fn guarded_product(a: u64, b: u64) -> u64 {
    a.saturating_mul(b)
}

/// kube-apiserver's "exceeds budget by factor of" text.
fn over_budget(what: &str, cost: u64, limit: u64) -> String {
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

struct Walk {
    causes: Vec<Cause>,
    total: u64,
    most_expensive: Vec<(String, u64)>,
}

impl Walk {
    fn observe(&mut self, path: &str, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost >= TOTAL_LIMIT / 100 {
            self.most_expensive.push((path.to_string(), cost));
            self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
            self.most_expensive.truncate(MOST_EXPENSIVE);
        }
    }

    fn forbidden(&mut self, path: String, message: String) {
        self.causes.push((
            path,
            "FieldValueForbidden".into(),
            format!("Forbidden: {message}"),
        ));
    }

    fn node(
        &mut self,
        schema: &Value,
        root: bool,
        path: &str,
        card: Option<u64>,
        uncorrelatable: Option<&str>,
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            return;
        }
        let Value::Object(m) = schema else {
            return;
        };
        if let Some(Value::Object(props)) = m.get("properties") {
            for (k, p) in props {
                let at = format!("{path}.properties[{k}]");
                let card = child_cardinality(schema, card);
                self.node(p, false, &at, card, uncorrelatable, depth + 1);
            }
        }
        if let Some(v @ Value::Object(_)) = m.get("additionalProperties") {
            let at = format!("{path}.additionalProperties");
            let card = child_cardinality(schema, card);
            self.node(v, false, &at, card, uncorrelatable, depth + 1);
        }
        if let Some(v @ Value::Object(_)) = m.get("items") {
            let at = format!("{path}.items");
            let card = child_cardinality(schema, card);
            let keyed = str_of(schema, "x-kubernetes-list-type") == "map";
            let unc = uncorrelatable.or((!keyed).then_some(path));
            self.node(v, false, &at, card, unc, depth + 1);
        }
        self.rules(
            m,
            Node::new(schema, root || Node::of(schema).root),
            path,
            card,
            uncorrelatable,
        );
    }

    fn rules(
        &mut self,
        m: &Map<String, Value>,
        node: Node<'_>,
        path: &str,
        card: Option<u64>,
        uncorrelatable: Option<&str>,
    ) {
        let Some(Value::Array(rules)) = m.get("x-kubernetes-validations") else {
            return;
        };
        if node.kind().is_none() {
            return;
        }
        let card = card.unwrap_or_else(|| MAX_REQUEST / (node.min_size(0) + 1));
        for (i, rule) in rules.iter().enumerate() {
            let at = format!("{path}.x-kubernetes-validations[{i}]");
            let text = str_of(rule, "rule");
            let Some(program) = super::rules::compiled(text) else {
                continue;
            };
            let cost = guarded_product(Estimator::new(node).cost(program.expression()), card);
            if cost > RULE_LIMIT {
                self.forbidden(
                    format!("{at}.rule"),
                    over_budget("estimated rule cost", cost, RULE_LIMIT),
                );
            }
            self.observe(&format!("{at}.rule"), cost);
            let message = str_of(rule, "messageExpression");
            if !message.is_empty()
                && let Some(program) = super::rules::compiled(message)
            {
                let cost = Estimator::new(node).cost(program.expression());
                if cost > RULE_LIMIT {
                    self.forbidden(
                        format!("{at}.messageExpression"),
                        over_budget("estimated messageExpression cost", cost, RULE_LIMIT),
                    );
                }
                self.observe(&format!("{at}.messageExpression"), cost);
            }
            if let Some(within) = uncorrelatable
                && uses_old_self(program.expression())
            {
                self.causes.push((
                    format!("{at}.rule"),
                    "FieldValueInvalid".into(),
                    format!(
                        "Invalid value: {text:?}: oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"
                    ),
                ));
            }
        }
    }
}

/// Checks the rules of one schema (a CRD version's, or the one all its versions share) whose
/// place in the CRD is `path` (`spec.validation.openAPIV3Schema` or
/// `spec.versions[i].schema.openAPIV3Schema`): each rule's and message expression's cost,
/// their total, and transition rules where no old value can be paired.
pub(super) fn check(schema: &Value, path: &str) -> Vec<Cause> {
    let mut walk = Walk {
        causes: Vec::new(),
        total: 0,
        most_expensive: Vec::new(),
    };
    walk.node(schema, true, path, Some(1), None, 0);
    if walk.total > TOTAL_LIMIT {
        for (at, _) in std::mem::take(&mut walk.most_expensive) {
            walk.forbidden(
                at,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema".into(),
            );
        }
        let total = walk.total;
        walk.forbidden(
            path.to_string(),
            over_budget(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                total,
                TOTAL_LIMIT,
            ),
        );
    }
    walk.causes
}

/// Whether an expression names `oldSelf` (outside a comprehension binding it).
fn uses_old_self(e: &IdedExpr) -> bool {
    fn any(e: &IdedExpr, depth: usize) -> bool {
        if depth > 200 {
            return false;
        }
        let d = depth + 1;
        match &e.expr {
            Expr::Ident(n) => n == "oldSelf",
            Expr::Call(c) => {
                c.target.as_deref().is_some_and(|t| any(t, d)) || c.args.iter().any(|a| any(a, d))
            }
            Expr::Select(s) => any(&s.operand, d),
            Expr::List(l) => l.elements.iter().any(|x| any(x, d)),
            Expr::Map(m) => m.entries.iter().any(|x| match &x.expr {
                cel::common::ast::EntryExpr::MapEntry(me) => any(&me.key, d) || any(&me.value, d),
                cel::common::ast::EntryExpr::StructField(f) => any(&f.value, d),
            }),
            Expr::Struct(s) => s.entries.iter().any(|x| match &x.expr {
                cel::common::ast::EntryExpr::MapEntry(me) => any(&me.key, d) || any(&me.value, d),
                cel::common::ast::EntryExpr::StructField(f) => any(&f.value, d),
            }),
            Expr::Comprehension(c) => [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ]
            .into_iter()
            .any(|x| any(x, d)),
            Expr::Literal(_) | Expr::Unspecified => false,
        }
    }
    any(e, 0)
}

/// A literal's size: characters of a string, bytes of bytes, 1 for anything else.
fn literal_size(l: &LiteralValue) -> u64 {
    match l {
        LiteralValue::String(s) => s.inner().chars().count() as u64,
        LiteralValue::Bytes(b) => b.inner().len() as u64,
        _ => 1,
    }
}
