//! `x-kubernetes-validations`: the CEL rules of a custom resource's schema, evaluated as
//! kube-apiserver's `apiextensions-apiserver/pkg/apiserver/schema/cel` evaluates them, after
//! the schema's own checks and only when none of those is blocking.
//!
//! Each rule sees the value it is declared on as `self` (typed by its schema: `integer` as an
//! int, `number` as a double), and, for a transition rule (one naming `oldSelf`), the value it
//! replaces; a transition rule is evaluated only on an update that has an old value at the same
//! place (object fields by name, `x-kubernetes-list-type: map` items by their keys). At the root
//! `self` holds `apiVersion`, `kind`, `metadata.name` and `metadata.generateName` besides the
//! schema's fields. A failed rule is a cause in kube-apiserver's words: its `message` (or
//! `messageExpression`, or `failed rule: <the rule>`), at its `fieldPath`, of its `reason`; on an
//! update, a failure of a rule without `oldSelf` on a value that did not change is a warning
//! instead (validation ratcheting).
//!
//! Rules are compiled once (the `cel` crate, with the libraries of Kubernetes' environment:
//! [`ENV`]) and cached; what kube-apiserver checks of them when the CRD is written (syntax,
//! types, the estimated cost) is `rule_checks`. Properties are read by the names CEL gives them
//! (`my__dash__field` for `my-field`); strings of the `duration`, `date-time`, `date` and
//! `byte` formats reach rules typed as Kubernetes types them. cel-go's two-variable
//! comprehensions (`all(i, v, ...)`, `transformList`, `transformMap`, `transformMapEntry`) are
//! parsed as its macros expand them and evaluated (`comprehensions`). What is not evaluated as
//! kube-apiserver evaluates it: the runtime cost budget, rules under `allOf`, and
//! `optionalOldSelf` (such rules are evaluated only with an old value).

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, LazyLock};

use cel::objects::{Key, Map as CelMap};
use cel::{Context, Env, ExecutionError, IdedExpr, Program, Value as Cel};
use parking_lot::Mutex;
use serde_json::{Map, Value};

use super::{Cause, MAX_DEPTH, go_value};
use paths::normalized_field_path;
pub(super) use paths::{field_path_segments, map_keys, same_keys};

#[macro_use]
mod opaque;

mod comprehensions;
mod format;
mod library;
mod net;
mod paths;
mod quantity;
mod semver;
mod sets;
mod typed;
mod urls;

/// The longest rule compiled (kube-apiserver bounds rules by their cost instead).
const MAX_RULE_BYTES: usize = 16 * 1024;
/// Compiled rules kept; the cache starts over when it is full.
const MAX_PROGRAMS: usize = 4_096;
/// The longest message a `messageExpression` may give (kube-apiserver's
/// `MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

type Compiled = Result<Arc<Rule>, String>;

/// A compiled expression: the program as parsed (what a CRD's checks read; a two-variable
/// comprehension is one with a second iteration variable, as cel-go parses it), and the
/// expression evaluated in its place when it has such comprehensions, which the `cel` crate
/// evaluates with one variable only (`comprehensions::lower`).
pub(crate) struct Rule {
    program: Program,
    lowered: Option<IdedExpr>,
}

impl Rule {
    fn new(program: Program) -> Rule {
        let lowered = comprehensions::lower(program.expression());
        Rule { program, lowered }
    }

    /// Evaluates the expression in `ctx`.
    fn execute(&self, ctx: &Context<'_, '_>) -> cel::ResolveResult {
        match &self.lowered {
            Some(e) => Cel::resolve(e, ctx),
            None => self.program.execute(ctx),
        }
    }
}

impl std::ops::Deref for Rule {
    type Target = Program;

    fn deref(&self) -> &Program {
        &self.program
    }
}

static PROGRAMS: LazyLock<Mutex<HashMap<String, Compiled>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// CEL's standard library with the extensions Kubernetes' environment has: cel-go's strings
/// (`lowerAscii`, `split`, `join`, ...), lists (`slice`, `lists.range`, ...) and sets
/// (`sets.contains`, ...) libraries, and Kubernetes' quantity, lists (`isSorted`, `sum`, ...),
/// regex (`find`), IP and CIDR, URL, semver and format (`format.uri().validate(s)`, ...)
/// libraries. Not cel-go's math library, which Kubernetes' does not have: a rule naming `math`
/// is refused when its CRD is written, as kube-apiserver refuses it.
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(kubernetes_env()));

/// A new environment with CEL's standard library and the Kubernetes libraries of [`ENV`], for
/// an evaluator that adds to it (mutating admission policies' `Object` types).
pub(crate) fn kubernetes_env() -> Env {
    let mut env = Env::stdlib();
    for (name, ext) in [
        ("strings", cel::extensions::strings as Extension),
        ("lists", cel::extensions::lists),
        ("quantity", quantity::extension),
        ("lists and regex", library::extension),
        ("IP and CIDR", net::extension),
        ("URL", urls::extension),
        ("semver", semver::extension),
        ("two-variable comprehensions", comprehensions::extension),
        ("sets", sets::extension),
        ("format", format::extension),
    ] {
        if let Err(e) = env.add_extension(ext) {
            tracing::warn!("CEL's {name} library could not be added: {e}");
        }
    }
    env
}

type Extension = fn(&mut Env) -> Result<(), cel::DeclarationError>;

/// Whether `schema` declares any rule (kube-apiserver has no CEL validator otherwise).
pub(super) fn has_rules(schema: &Value) -> bool {
    fn any(v: &Value, depth: usize) -> bool {
        depth <= MAX_DEPTH
            && match v {
                Value::Object(m) => {
                    m.contains_key("x-kubernetes-validations")
                        || m.values().any(|x| any(x, depth + 1))
                }
                Value::Array(a) => a.iter().any(|x| any(x, depth + 1)),
                _ => false,
            }
    }
    any(schema, 0)
}

/// The cause kube-apiserver gives instead of evaluating rules when a schema check failed in a
/// way that would make them meaningless (a wrong type, a missing field, ...), if one did.
pub(super) fn blocked(causes: &[Cause]) -> Option<Cause> {
    const BLOCKING: [&str; 5] = [
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    ];
    causes
        .iter()
        .any(|(_, reason, _)| BLOCKING.contains(&reason.as_str()))
        .then(|| {
            (
                "<nil>".into(),
                "FieldValueInvalid".into(),
                "Invalid value: null: some validation rules were not checked because the object \
                 was invalid; correct the existing errors to complete validation"
                    .into(),
            )
        })
}

/// Refuses a schema node whose `x-kubernetes-validations` is not a list of objects (what is
/// in the rules is checked by `rule_checks`, in kube-apiserver's words).
pub(super) fn check_shape(sch: &Map<String, Value>) -> Result<(), String> {
    let Some(rules) = sch.get("x-kubernetes-validations") else {
        return Ok(());
    };
    let Value::Array(rules) = rules else {
        return Err("x-kubernetes-validations must be a list".into());
    };
    for (i, rule) in rules.iter().enumerate() {
        if !rule.is_object() {
            return Err(format!("x-kubernetes-validations[{i}] must be an object"));
        }
    }
    Ok(())
}

/// Evaluates every rule of `schema` against `obj` (the whole object, `apiVersion`, `kind` and
/// `metadata` included), with `old` the object it replaces on an update.
pub(super) fn validate(
    schema: &Value,
    obj: &Map<String, Value>,
    old: Option<&Map<String, Value>>,
    causes: &mut Vec<Cause>,
) {
    let root = |o: &Map<String, Value>| {
        let mut o = o.clone();
        if let Some(Value::Object(meta)) = o.get_mut("metadata") {
            meta.retain(|k, _| k == "name" || k == "generateName");
        }
        Value::Object(o)
    };
    // the root compares whole objects (their metadata too) for ratcheting
    let unchanged = old.is_some_and(|o| o == obj);
    let new = root(obj);
    let old = old.map(root);
    let mut walk = Walk { causes };
    walk.node(schema, &new, old.as_ref(), "", unchanged, 0);
}

struct Walk<'a> {
    causes: &'a mut Vec<Cause>,
}

impl Walk<'_> {
    /// The rules of `schema` on `v` (at `path`), then those of its fields or items.
    /// `unchanged`: whether the value, or the nearest value above it that has an old
    /// counterpart, equals its old value.
    fn node(
        &mut self,
        schema: &Value,
        v: &Value,
        old: Option<&Value>,
        path: &str,
        unchanged: bool,
        depth: usize,
    ) {
        let Value::Object(sch) = schema else { return };
        if v.is_null() || depth > MAX_DEPTH {
            return;
        }
        if let Some(Value::Array(rules)) = sch.get("x-kubernetes-validations") {
            let old = old.filter(|o| !o.is_null());
            let mut this = Node {
                schema,
                sch,
                v,
                old,
                self_cel: None,
                old_cel: None,
            };
            for rule in rules.iter().filter_map(Value::as_object) {
                self.rule(&mut this, rule, path, unchanged);
            }
        }
        match v {
            Value::Object(obj) => {
                let props = sch.get("properties").and_then(Value::as_object);
                let additional = sch.get("additionalProperties").filter(|a| a.is_object());
                let old_obj = old.and_then(Value::as_object);
                for (k, x) in obj {
                    let (child_schema, child_path) =
                        match (props.and_then(|p| p.get(k)), additional) {
                            (Some(ps), _) => (ps, child(path, k)),
                            (None, Some(ap)) => (ap, format!("{path}[{k}]")),
                            (None, None) => continue,
                        };
                    let old_x = old_obj.and_then(|o| o.get(k));
                    let same = old_x.map_or(unchanged, |o| o == x);
                    self.node(child_schema, x, old_x, &child_path, same, depth + 1);
                }
            }
            Value::Array(items) => {
                let Some(item_schema) = sch.get("items") else {
                    return;
                };
                let keys = map_keys(sch);
                let old_items = old.and_then(Value::as_array);
                for (i, x) in items.iter().enumerate() {
                    let old_x = keys
                        .as_ref()
                        .zip(old_items)
                        .and_then(|(keys, olds)| olds.iter().find(|o| same_keys(keys, o, x)));
                    let same = old_x.map_or(unchanged, |o| o == x);
                    self.node(
                        item_schema,
                        x,
                        old_x,
                        &format!("{path}[{i}]"),
                        same,
                        depth + 1,
                    );
                }
            }
            _ => {}
        }
    }

    fn rule(
        &mut self,
        node: &mut Node<'_>,
        rule: &Map<String, Value>,
        path: &str,
        unchanged: bool,
    ) {
        let text = str_of(rule, "rule");
        let message = str_of(rule, "message").trim();
        // kube-apiserver's ruleErrorString: the message if there is one, else the rule
        let rule_error = if message.is_empty() {
            text.trim()
        } else {
            message
        };
        let ty = node.sch.get("type").and_then(Value::as_str).unwrap_or("");
        let typed = |detail: String| -> Cause {
            (
                if path.is_empty() { "<nil>" } else { path }.to_string(),
                "FieldValueInvalid".into(),
                format!("Invalid value: \"{ty}\": {detail}"),
            )
        };
        let program = match compile(text) {
            Ok(p) => p,
            Err(e) => {
                self.causes.push(typed(format!("rule compile error: {e}")));
                return;
            }
        };
        let uses_old = program.references().has_variable("oldSelf");
        if uses_old && node.old.is_none() {
            // a transition rule needs an old value to compare with
            return;
        }
        let ctx = node.context(uses_old);
        match run(&program, &ctx) {
            Ok(Cel::Bool(true)) => return,
            Ok(Cel::Bool(false)) => {}
            Ok(other) => {
                self.causes.push(typed(format!(
                    "no such overload: the rule gave {} instead of a bool evaluating rule: \
                     {rule_error}",
                    type_of(&other)
                )));
                return;
            }
            Err(e) => {
                self.causes
                    .push(typed(format!("{e} evaluating rule: {rule_error}")));
                return;
            }
        }
        let detail = message_expression(rule, &ctx).unwrap_or_else(|| {
            if message.is_empty() {
                format!("failed rule: {rule_error}")
            } else {
                message.to_string()
            }
        });
        let at = match normalized_field_path(str_of(rule, "fieldPath")) {
            Some(rel) if path.is_empty() => rel,
            Some(rel) => format!("{path}.{rel}"),
            // the root's path is Go's nil field path
            None if path.is_empty() => "<nil>".to_string(),
            None => path.to_string(),
        };
        let omit = matches!(node.v, Value::Object(_) | Value::Array(_));
        // an object's or a list's value is left out of the cause
        let value = if omit {
            String::new()
        } else {
            go_value(node.v)
        };
        let (reason, body) = match str_of(rule, "reason") {
            "FieldValueForbidden" => ("FieldValueForbidden", format!("Forbidden: {detail}")),
            "FieldValueRequired" => ("FieldValueRequired", format!("Required value: {detail}")),
            "FieldValueDuplicate" if omit => ("FieldValueDuplicate", "Duplicate value".into()),
            "FieldValueDuplicate" => ("FieldValueDuplicate", format!("Duplicate value: {value}")),
            _ if omit => ("FieldValueInvalid", format!("Invalid value: {detail}")),
            _ => (
                "FieldValueInvalid",
                format!("Invalid value: {value}: {detail}"),
            ),
        };
        if !uses_old && unchanged {
            // ratcheting: an unchanged value keeps passing, with a warning
            crate::warnings::record(format!("{at}: {body}"));
            return;
        }
        self.causes.push((at, reason.into(), body));
    }
}

/// One value with rules, converted for CEL once for all of them.
struct Node<'a> {
    schema: &'a Value,
    sch: &'a Map<String, Value>,
    v: &'a Value,
    old: Option<&'a Value>,
    self_cel: Option<Cel>,
    old_cel: Option<Cel>,
}

impl Node<'_> {
    fn context(&mut self, with_old: bool) -> Context<'static, 'static> {
        let schema = self.schema;
        let mut ctx = Context::with_env(ENV.clone());
        let this = self
            .self_cel
            .get_or_insert_with(|| to_cel(Some(schema), self.v, 0))
            .clone();
        ctx.add_variable_from_value("self", this);
        if with_old && let Some(old) = self.old {
            let old = self
                .old_cel
                .get_or_insert_with(|| to_cel(Some(schema), old, 0))
                .clone();
            ctx.add_variable_from_value("oldSelf", old);
        }
        ctx
    }
}

fn str_of<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or("")
}

fn child(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

/// The compiled `rule`, `None` when it does not compile.
#[cfg(test)]
pub(super) fn compiled(rule: &str) -> Option<Arc<Rule>> {
    compile(rule).ok()
}

/// The parsed `rule`, or the parser's words.
pub(super) fn parsed(rule: &str) -> Result<Arc<Rule>, String> {
    compile(rule)
}

/// The compiled `rule`, from the cache if it was compiled before.
fn compile(rule: &str) -> Compiled {
    if let Some(p) = PROGRAMS.lock().get(rule) {
        return p.clone();
    }
    let compiled = if rule.len() > MAX_RULE_BYTES {
        Err(format!("the rule is longer than {MAX_RULE_BYTES} bytes"))
    } else {
        match catch_unwind(|| ENV.compile(rule)) {
            Ok(Ok(p)) => Ok(Arc::new(Rule::new(p))),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("the rule could not be parsed".into()),
        }
    };
    let mut programs = PROGRAMS.lock();
    if programs.len() >= MAX_PROGRAMS {
        programs.clear();
    }
    programs.insert(rule.to_string(), compiled.clone());
    compiled
}

/// A CEL context in the environment rules are evaluated in (Kubernetes' libraries), for the
/// other CEL evaluators of the server (admission policies).
pub(crate) fn cel_context() -> Context<'static, 'static> {
    Context::with_env(ENV.clone())
}

/// Why an expression gave no value: it does not compile, or it failed while evaluated (each
/// in cel-go's words where [`run`] knows them).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ExpressionError {
    /// It does not compile.
    Compile(String),
    /// It failed while evaluated.
    Eval(String),
}

/// Compiles `expr` (cached, as rules are) and evaluates it in `ctx`.
pub(crate) fn cel_evaluate(expr: &str, ctx: &Context<'_, '_>) -> Result<Cel, ExpressionError> {
    let program = compile(expr).map_err(ExpressionError::Compile)?;
    run(&program, ctx).map_err(ExpressionError::Eval)
}

/// `v` as a CEL value without a schema (numbers as they are written, objects as maps).
pub(crate) fn json_to_cel(v: &Value) -> Cel {
    to_cel(None, v, 0)
}

/// Runs `program`, with cel-go's words for the errors rules commonly meet.
fn run(program: &Rule, ctx: &Context<'_, '_>) -> Result<Cel, String> {
    match catch_unwind(AssertUnwindSafe(|| program.execute(ctx))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(ExecutionError::NoSuchKey(k))) => Err(format!("no such key: {k}")),
        Ok(Err(ExecutionError::DivisionByZero(_))) => Err("division by zero".into()),
        Ok(Err(ExecutionError::RemainderByZero(_))) => Err("modulus by zero".into()),
        // a string that is not a duration or a timestamp, in cel-go's words
        Ok(Err(ExecutionError::FunctionError { function, message }))
            if matches!(function.as_str(), "duration" | "timestamp")
                && !message.starts_with("range error") =>
        {
            let to = if function == "duration" {
                "Duration"
            } else {
                "Timestamp"
            };
            Err(format!(
                "type conversion error from 'string' to 'google.protobuf.{to}'"
            ))
        }
        // cel-go gives a function's own words, without naming it
        Ok(Err(ExecutionError::FunctionError { message, .. })) => Err(message),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("internal error".into()),
    }
}

/// The message a rule's `messageExpression` gives, when it gives a usable one (kube-apiserver
/// falls back to the rule's message otherwise).
fn message_expression(rule: &Map<String, Value>, ctx: &Context<'_, '_>) -> Option<String> {
    let expr = str_of(rule, "messageExpression");
    if expr.is_empty() {
        return None;
    }
    let Ok(Cel::String(s)) = run(&*compile(expr).ok()?, ctx) else {
        return None;
    };
    let s = s.trim();
    (!s.is_empty() && s.len() <= MAX_MESSAGE_BYTES && !s.contains('\n')).then(|| s.to_string())
}

/// `v` as a CEL value, typed by `schema` where it has one.
fn to_cel(schema: Option<&Value>, v: &Value, depth: usize) -> Cel {
    let ty = schema
        .and_then(|s| s.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("");
    match v {
        _ if depth > MAX_DEPTH => Cel::Null,
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            match (ty, n.as_i64()) {
                ("number", _) => Cel::Float(f),
                (_, Some(i)) => Cel::Int(i),
                // a whole number written as a fraction (the schema checks let only those through)
                ("integer", None) => Cel::Int(f as i64),
                (_, None) => Cel::Float(f),
            }
        }
        Value::String(s) => typed::string(schema, s),
        Value::Array(items) => {
            let item = schema.and_then(|s| s.get("items"));
            Cel::List(Arc::new(
                items.iter().map(|x| to_cel(item, x, depth + 1)).collect(),
            ))
        }
        Value::Object(obj) => {
            let props = schema.and_then(|s| s.get("properties"));
            let additional = schema
                .and_then(|s| s.get("additionalProperties"))
                .filter(|a| a.is_object());
            // An object's properties go by the names CEL gives them (`my__dash__field`); a
            // map's keys as they are.
            let map = obj
                .iter()
                .filter_map(|(k, x)| {
                    let sub = props.and_then(|p| p.get(k)).or(additional);
                    let name = match props {
                        Some(_) if additional.is_none() => super::cost::escape(k)?,
                        _ => k.clone(),
                    };
                    Some((Key::String(Arc::new(name)), to_cel(sub, x, depth + 1)))
                })
                .collect();
            Cel::Map(CelMap { map: Arc::new(map) })
        }
    }
}

fn type_of(v: &Cel) -> &'static str {
    match v {
        Cel::Int(_) => "int",
        Cel::UInt(_) => "uint",
        Cel::Float(_) => "double",
        Cel::String(_) => "string",
        Cel::Bytes(_) => "bytes",
        Cel::List(_) => "list",
        Cel::Map(_) => "map",
        Cel::Null => "null",
        _ => "a value",
    }
}

#[cfg(test)]
mod tests;
