//! The worst-case cost of one CEL expression, as cel-go's static estimator (`checker/cost.go`)
//! computes it with Kubernetes' size estimator and function costs (`library/cost.go`): each
//! identifier and field selection costs 1, each call its function's cost (most 1, string
//! functions a tenth of the string's length, regular expressions more), and a comprehension
//! (`all`, `exists`, `map`, ...) its body times the largest size its range may have. Sizes come
//! from the schema (a field's `maxLength`, `maxItems`, ...), from literals, and from what a
//! function returns; a value of no known size is taken as unbounded.
//!
//! The same walk is the type check kube-apiserver's compiler makes: the types that choose an
//! operator's cost (a string against a number, a list against a map) come from the schema,
//! literals and function results, and a value of unknown type costs what the dearest of its
//! operator's overloads would. Where the types are certain, what cel-go's checker refuses is
//! reported in its words: a field the schema does not declare, a name nothing declares, an
//! operator between types it has no overload for (`types`). Where they are not (a value of
//! `x-kubernetes-int-or-string`, what an unknown function returns), nothing is reported.

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

use super::{Kind, Node};

mod functions;
mod types;

/// A size: characters of a string, items of a list, entries of a map.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Size {
    pub(super) min: u64,
    pub(super) max: u64,
}

const UNKNOWN: Size = Size {
    min: 0,
    max: u64::MAX,
};
const ONE: Size = Size { min: 1, max: 1 };

/// Functions called through a namespace (`strings.quote(s)`, `format.dns1123Label()`).
const NAMESPACES: [&str; 9] = [
    "strings", "lists", "sets", "math", "format", "ip", "cidr", "base64", "optional",
];

/// `ceil(x × f)` in f64, saturating, as cel-go's `multiplyByCostFactor`.
fn factor(x: u64, f: f64) -> u64 {
    let xf = x as f64;
    if xf > 0.0 && f > 0.0 && xf > 18_446_744_073_709_551_616.0 / f {
        return u64::MAX;
    }
    let c = (xf * f).ceil();
    if c >= 18_446_744_073_709_551_616.0 {
        u64::MAX
    } else {
        c as u64
    }
}

/// A tenth of `x`, rounded up: the cost of traversing a string of `x` characters.
fn tenth(x: u64) -> u64 {
    factor(x, 0.1)
}

/// A value's type, as far as costs need it.
#[derive(Clone, Debug, PartialEq)]
enum Ty {
    Str,
    Bytes,
    Int,
    Uint,
    Double,
    Bool,
    Null,
    Duration,
    Timestamp,
    Type,
    /// A quantity, URL, IP, CIDR or semver: compared for a constant cost.
    Lib,
    /// A format of Kubernetes' format library (`kubernetes.NamedFormat`).
    Format,
    /// An optional of the type (what `format.named` and `validate` return).
    Optional(Box<Ty>),
    List(Box<Ty>),
    Map(Box<Ty>),
    Object,
    Dyn,
    /// What an expression the type check refused evaluates to: any overload takes it, as
    /// `dyn`, and cel-go names it `!error!` where none does.
    Error,
}

impl Ty {
    fn of(node: Node<'_>, depth: usize) -> Ty {
        match node.kind() {
            Some(Kind::Str) => Ty::Str,
            Some(Kind::Bytes) => Ty::Bytes,
            Some(Kind::Int) => Ty::Int,
            Some(Kind::Double) => Ty::Double,
            Some(Kind::Bool) => Ty::Bool,
            Some(Kind::Duration) => Ty::Duration,
            Some(Kind::Timestamp) => Ty::Timestamp,
            Some(Kind::List) if depth < 32 => Ty::List(Box::new(
                node.items().map_or(Ty::Dyn, |i| Ty::of(i, depth + 1)),
            )),
            Some(Kind::Map) if depth < 32 => Ty::Map(Box::new(
                node.values().map_or(Ty::Dyn, |v| Ty::of(v, depth + 1)),
            )),
            Some(Kind::Object) => Ty::Object,
            _ => Ty::Dyn,
        }
    }

    /// The size every value of a scalar type has.
    fn scalar(&self) -> bool {
        matches!(
            self,
            Ty::Bool | Ty::Double | Ty::Duration | Ty::Int | Ty::Timestamp | Ty::Uint
        )
    }

    fn string_like(&self) -> bool {
        matches!(self, Ty::Str | Ty::Bytes | Ty::Dyn)
    }

    fn elem(&self) -> Ty {
        match self {
            Ty::List(t) | Ty::Map(t) | Ty::Optional(t) => (**t).clone(),
            _ => Ty::Dyn,
        }
    }
}

/// An expression estimated: its cost, type, the schema node it reads (its path, in cel-go's
/// terms) and the size computed for it, if any.
#[derive(Clone, Debug)]
struct E<'a> {
    cost: u64,
    ty: Ty,
    at: Option<Node<'a>>,
    size: Option<Size>,
    /// The value of a non-negative integer literal.
    int: Option<u64>,
    /// The sizes of a list's indices and items, or a map's keys and values, when it is built
    /// in the expression (cel-go's entry size): what indexing it gives.
    entry: Option<Entry>,
    /// Whether cel-go's path for the value is empty: what a function, a comprehension or a
    /// literal gives (an item of it is then sized by the root, see `_[_]`).
    pathless: bool,
}

/// The sizes of a container's keys (a list's indices) and values.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Entry {
    key: Size,
    val: Size,
}

impl Size {
    /// The size of either (cel-go's `Union`).
    fn union(self, other: Size) -> Size {
        Size {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }
}

/// The union of two entry sizes, none unless both are known.
fn entry_union(a: Option<Entry>, b: Option<Entry>) -> Option<Entry> {
    let (a, b) = (a?, b?);
    Some(Entry {
        key: a.key.union(b.key),
        val: a.val.union(b.val),
    })
}

/// What the union of no sizes starts from: nothing yet, or exactly 0 for an empty container.
fn no_sizes(empty: bool) -> Size {
    Size {
        min: if empty { 0 } else { u64::MAX },
        max: 0,
    }
}

impl<'a> E<'a> {
    fn value(cost: u64, ty: Ty) -> Self {
        E {
            cost,
            ty,
            at: None,
            size: None,
            int: None,
            entry: None,
            pathless: false,
        }
    }

    fn sized(mut self, size: Size) -> Self {
        self.size = Some(size);
        self
    }
}

/// Estimates expressions written on one schema node (`self`).
pub(crate) struct Estimator<'a> {
    root: Node<'a>,
    locals: Vec<(String, E<'a>)>,
    /// What the type check refused: the node's id and cel-go's words.
    errors: Vec<(u64, String)>,
}

/// An expression checked and estimated.
pub(crate) struct Outcome {
    /// Its worst-case cost.
    pub(crate) cost: u64,
    /// What the type check refused: the node's id and cel-go's words, in the order found.
    pub(crate) errors: Vec<(u64, String)>,
    /// The type it evaluates to, when certain (`bool`, `int`, `string`, `list`, ...).
    pub(crate) ty: Option<&'static str>,
}

impl<'a> Estimator<'a> {
    pub(crate) fn new(root: Node<'a>) -> Self {
        Estimator {
            root,
            locals: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Checks and estimates an expression.
    pub(crate) fn run(mut self, e: &IdedExpr) -> Outcome {
        let out = self.expr(e, 0);
        Outcome {
            cost: out.cost,
            errors: self.errors,
            ty: out.ty.name(),
        }
    }

    fn size(&self, e: &E<'a>) -> Size {
        if let Some(s) = e.size {
            return s;
        }
        if let Some(n) = e.at {
            return Size {
                min: 0,
                max: n.max_elements(),
            };
        }
        if e.ty.scalar() { ONE } else { UNKNOWN }
    }

    fn expr(&mut self, e: &IdedExpr, depth: usize) -> E<'a> {
        if depth > 200 {
            return E::value(u64::MAX, Ty::Dyn);
        }
        let d = depth + 1;
        match &e.expr {
            Expr::Literal(l) => {
                let ty = match l {
                    LiteralValue::Boolean(_) => Ty::Bool,
                    LiteralValue::Bytes(_) => Ty::Bytes,
                    LiteralValue::Double(_) => Ty::Double,
                    LiteralValue::Int(_) => Ty::Int,
                    LiteralValue::UInt(_) => Ty::Uint,
                    LiteralValue::Null => Ty::Null,
                    LiteralValue::String(_) => Ty::Str,
                };
                let n = literal_size(l);
                let mut out = E::value(0, ty).sized(Size { min: n, max: n });
                if let LiteralValue::Int(i) = l {
                    out.int = u64::try_from(*i.inner()).ok();
                }
                out
            }
            Expr::Ident(name) => self.ident(e.id, name),
            Expr::Select(s) => {
                let op = self.expr(&s.operand, d);
                let at = match (&op.ty, op.at) {
                    (Ty::Object, Some(n)) => n.field(&s.field),
                    _ => None,
                };
                if at.is_none() && op.ty == Ty::Object && op.at.is_some() {
                    self.errors
                        .push((e.id, format!("undefined field '{}'", s.field)));
                    return E::value(op.cost, Ty::Error);
                }
                if s.test {
                    return E::value(op.cost, Ty::Bool);
                }
                let extra = u64::from(matches!(op.ty, Ty::Object | Ty::Map(_)));
                let ty = match (&op.ty, at) {
                    (_, Some(n)) => Ty::of(n, 0),
                    (Ty::Map(v), None) => (**v).clone(),
                    _ => Ty::Dyn,
                };
                E {
                    at,
                    ..E::value(op.cost.saturating_add(extra), ty)
                }
            }
            Expr::List(l) => {
                let mut cost: u64 = 10;
                let mut elem = None;
                let mut val = no_sizes(l.elements.is_empty());
                let mut items = Homogeneous::default();
                for x in &l.elements {
                    let item = self.expr(x, d);
                    cost = cost.saturating_add(item.cost);
                    val = val.union(self.size(&item));
                    items.item(x, &item.ty, &mut self.errors);
                    elem.get_or_insert(item.ty);
                }
                let n = l.elements.len() as u64;
                let mut out = E::value(cost, Ty::List(Box::new(elem.unwrap_or(Ty::Dyn))))
                    .sized(Size { min: n, max: n });
                out.entry = Some(Entry { key: ONE, val });
                out.pathless = true;
                out
            }
            Expr::Map(m) => {
                let mut cost: u64 = 30;
                let mut val = None;
                let (mut keys, mut values) = (Homogeneous::default(), Homogeneous::default());
                let empty = m.entries.is_empty();
                let mut sizes = Entry {
                    key: no_sizes(empty),
                    val: no_sizes(empty),
                };
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        let k = self.expr(&me.key, d);
                        let v = self.expr(&me.value, d);
                        keys.item(&me.key, &k.ty, &mut self.errors);
                        values.item(&me.value, &v.ty, &mut self.errors);
                        cost = cost.saturating_add(k.cost).saturating_add(v.cost);
                        sizes.key = sizes.key.union(self.size(&k));
                        sizes.val = sizes.val.union(self.size(&v));
                        val.get_or_insert(v.ty);
                    }
                }
                let n = m.entries.len() as u64;
                let mut out = E::value(cost, Ty::Map(Box::new(val.unwrap_or(Ty::Dyn))))
                    .sized(Size { min: n, max: n });
                out.entry = Some(sizes);
                out.pathless = true;
                out
            }
            Expr::Struct(s) => {
                let mut cost: u64 = 40;
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        cost = cost.saturating_add(self.expr(&f.value, d).cost);
                    }
                }
                E::value(cost, Ty::Dyn)
            }
            Expr::Comprehension(c) => E {
                pathless: true,
                ..self.comprehension(c, d)
            },
            Expr::Call(c) => {
                let out = self.call(e.id, c, d);
                E {
                    pathless: !matches!(c.func_name.as_str(), "_[_]" | "_[?_]" | "dyn"),
                    ..out
                }
            }
            Expr::Unspecified => E::value(0, Ty::Dyn),
        }
    }

    fn ident(&mut self, id: u64, name: &str) -> E<'a> {
        if let Some((_, local)) = self.locals.iter().rev().find(|(n, _)| n == name) {
            let mut v = local.clone();
            v.cost = 1;
            return v;
        }
        if !types::declared(name) {
            self.errors.push((
                id,
                format!("undeclared reference to '{name}' (in container '')"),
            ));
            return E::value(1, Ty::Error);
        }
        // `self` and `oldSelf` read the rule's node; so, in cel-go's size estimator, does any
        // other name (a type such as `int`), whose size is looked up from the root.
        let ty = match name {
            "self" | "oldSelf" => Ty::of(self.root, 0),
            _ => Ty::Type,
        };
        E {
            at: Some(self.root),
            ..E::value(1, ty)
        }
    }

    fn comprehension(&mut self, c: &ComprehensionExpr, d: usize) -> E<'a> {
        let range = self.expr(&c.iter_range, d);
        let init = self.expr(&c.accu_init, d);
        let n = self.size(&range).max;
        let (first, second) = self.iteration(&range);
        let mark = self.locals.len();
        match &c.iter_var2 {
            Some(v2) => {
                self.locals.push((c.iter_var.clone(), first));
                self.locals.push((v2.clone(), second));
            }
            // One variable: a list's items, a map's keys.
            None if matches!(range.ty, Ty::Map(_)) => {
                self.locals.push((c.iter_var.clone(), first));
            }
            None => self.locals.push((c.iter_var.clone(), second)),
        }
        // the accumulator starts as its initial value: its schema node and sizes too
        let accu = E {
            at: init.at,
            size: init.size,
            entry: init.entry,
            pathless: init.pathless,
            ..E::value(1, init.ty.clone())
        };
        if is_bind(c) {
            // `cel.bind(name, value, result)` (and what `sortBy` expands to): the result, with
            // the name for the value, evaluated once
            self.locals.push((c.accu_var.clone(), accu));
            let result = self.expr(&c.result, d);
            self.locals.truncate(mark);
            let cost = range
                .cost
                .saturating_add(init.cost)
                .saturating_add(result.cost);
            let size = self.size(&result);
            return E {
                entry: result.entry,
                ..E::value(cost, result.ty).sized(size)
            };
        }
        self.locals.push((c.accu_var.clone(), accu));
        let cond = self.expr(&c.loop_cond, d);
        let step = self.expr(&c.loop_step, d);
        let accu_ty = match (&init.ty, &step.ty) {
            (Ty::List(_), Ty::List(_)) | (Ty::Map(_), Ty::Map(_)) => step.ty.clone(),
            (t, _) => t.clone(),
        };
        if let Some(last) = self.locals.last_mut() {
            last.1 = E::value(1, accu_ty);
        }
        let result = self.expr(&c.result, d);
        self.locals.truncate(mark);
        let body = cond.cost.saturating_add(step.cost);
        let cost = range
            .cost
            .saturating_add(init.cost)
            .saturating_add(result.cost)
            .saturating_add(n.saturating_mul(body));
        let mut out = E::value(cost, result.ty);
        // a list or map built in the loop has at most one entry per iteration
        if matches!(init.ty, Ty::List(_) | Ty::Map(_)) {
            out.size = Some(self.size(&range));
            out.entry = step.entry;
        }
        out
    }

    /// What a comprehension's variables read: a list's indices and items, a map's keys and
    /// values. Items and keys read the range's schema, or, when the range is no schema value,
    /// the root (cel-go's size estimator drops the first step of their path).
    fn iteration(&self, range: &E<'a>) -> (E<'a>, E<'a>) {
        match &range.ty {
            Ty::Map(v) => (
                E {
                    at: Some(range.at.map_or(self.root, |_| Node::key())),
                    ..E::value(1, Ty::Str)
                },
                E {
                    at: range.at.and_then(|n| n.values()),
                    ..E::value(1, (**v).clone())
                },
            ),
            ty => (
                E::value(1, Ty::Int),
                E {
                    at: range.at.map_or(Some(self.root), |n| n.items()),
                    ..E::value(1, ty.elem())
                },
            ),
        }
    }

    fn call(&mut self, id: u64, c: &CallExpr, d: usize) -> E<'a> {
        // `strings.quote(s)`: a namespaced function, not a method of a variable `strings`.
        let namespace = match c.target.as_deref() {
            Some(
                t @ IdedExpr {
                    expr: Expr::Ident(ns),
                    ..
                },
            ) if NAMESPACES.contains(&ns.as_str()) && !self.locals.iter().any(|(n, _)| n == ns) => {
                Some((t.id, ns.as_str()))
            }
            _ => None,
        };
        if let Some((target_id, ns)) = namespace
            && types::undeclared(ns, &c.func_name)
        {
            let undeclared =
                |name: &str| format!("undeclared reference to '{name}' (in container '')");
            self.errors.push((target_id, undeclared(ns)));
            self.errors.push((id, undeclared(&c.func_name)));
        }
        let (name, target) = match namespace {
            Some((_, ns)) => (format!("{ns}.{}", c.func_name), None),
            None => (
                c.func_name.clone(),
                c.target.as_deref().map(|t| self.expr(t, d)),
            ),
        };
        let args: Vec<E<'a>> = c.args.iter().map(|a| self.expr(a, d)).collect();
        let args_cost = args.iter().fold(0u64, |acc, a| acc.saturating_add(a.cost));
        let tys: Vec<&Ty> = args.iter().map(|a| &a.ty).collect();
        let refused = types::overload_error(&name, target.as_ref().map(|t| &t.ty), &tys);
        let mut out = match (name.as_str(), args.as_slice()) {
            ("_&&_" | "_||_", _) => E::value(args_cost, Ty::Bool),
            ("_?_:_", [cond, t, f]) => {
                let (ts, fs) = (self.size(t), self.size(f));
                let ty = if t.ty == f.ty { t.ty.clone() } else { Ty::Dyn };
                E {
                    entry: entry_union(t.entry, f.entry),
                    ..E::value(cond.cost.saturating_add(t.cost.max(f.cost)), ty).sized(ts.union(fs))
                }
            }
            _ => {
                let tgt_cost = target.as_ref().map_or(0, |t| t.cost);
                let mut out = self.function(&name, target.as_ref(), &args);
                out.cost = out.cost.saturating_add(args_cost).saturating_add(tgt_cost);
                out
            }
        };
        if let Some(message) = refused {
            self.errors.push((id, message));
            out.ty = Ty::Error;
        }
        out
    }
}

/// The types of a literal's items (a map literal's keys, or its values): Kubernetes' environment
/// has cel-go's homogeneous aggregate literals, which refuse an item of another type than the
/// first, once per literal. Compared where both types are certain (a map's keys are taken as
/// strings: maps of other keys are not told apart); `dyn(x)` is of type `dyn`.
#[derive(Default)]
struct Homogeneous {
    /// The first item's type name (`None` inside when uncertain), once there is one.
    first: Option<Option<String>>,
    refused: bool,
}

impl Homogeneous {
    /// Takes in the item `e` of type `ty`, with cel-go's words in `errors` if it is the first
    /// of another type.
    fn item(&mut self, e: &IdedExpr, ty: &Ty, errors: &mut Vec<(u64, String)>) {
        let name = match &e.expr {
            Expr::Call(c) if c.func_name == "dyn" && c.target.is_none() => Some("dyn".to_string()),
            _ => ty.full_name(),
        };
        match &self.first {
            None => self.first = Some(name),
            Some(Some(first)) if !self.refused => {
                if let Some(now) = name
                    && *first != now
                {
                    errors.push((e.id, format!("expected type '{first}' but found '{now}'")));
                    self.refused = true;
                }
            }
            _ => {}
        }
    }
}

/// Whether `c` is a `cel.bind` (cel-go's `isBind`): a comprehension over an empty list literal
/// that never loops, with an accumulator of its own name.
fn is_bind(c: &ComprehensionExpr) -> bool {
    matches!(&c.iter_range.expr, Expr::List(l) if l.elements.is_empty())
        && matches!(
            &c.loop_cond.expr,
            Expr::Literal(LiteralValue::Boolean(b)) if !*b.inner()
        )
        && c.accu_var != "__result__"
}

/// A literal's size: characters of a string, bytes of bytes, 1 for anything else.
fn literal_size(l: &LiteralValue) -> u64 {
    match l {
        LiteralValue::String(s) => s.inner().chars().count() as u64,
        LiteralValue::Bytes(b) => b.inner().len() as u64,
        _ => 1,
    }
}
