//! cel-go's two-variable comprehensions (`ext.TwoVarComprehensions`, in Kubernetes' CEL
//! environment since 1.32): `all`, `exists` and `existsOne` (or `exists_one`) with an index
//! (a map's key) and a value, `transformList`, `transformMap` and `transformMapEntry`, with
//! an optional filter:
//!
//! ```text
//! self.ports.all(i, p, i == 0 || p.port > self.ports[i - 1].port)
//! self.labels.exists(k, v, k.startsWith('team/') && v != '')
//! self.weights.transformList(name, w, w > 0, name)
//! self.env.transformMapEntry(k, v, {v: k})
//! ```
//!
//! They are parsed as cel-go's macros expand them: a comprehension with a second iteration
//! variable, which the CRD's type and cost checks read as cel-go's do. The `cel` crate
//! evaluates one variable only, so the expression evaluated is [`lower`]ed first: the range
//! is bound once to a hidden name, the loop runs over its indices (a map's keys), and the
//! value is read from the range where the second variable is named.

use cel::common::ast::{
    CallExpr, ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue, MapExpr, operators,
};
use cel::common::types::{CelInt, CelList, CelMap, CelMapKey, DYN_TYPE, MAP_TYPE};
use cel::common::value::{CowVal, Val};
use cel::parser::{Macro, MacroExprHelper};
use cel::{DeclarationError, Env, ExecutionError, ParseError};

/// The accumulator's name, as cel-go's macros name it.
const ACCU: &str = "@result";
/// cel-go's function adding an entry (or a map's entries) to a map, refusing a key it has.
const MAP_INSERT: &str = "cel.@mapInsert";
/// A list's indices, or a map's keys: what a lowered comprehension iterates over.
const KEYS: &str = "@twoVarKeys";

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Answer<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

#[derive(Clone, Copy)]
enum Form {
    All,
    Exists,
    ExistsOne,
    TransformList,
    TransformMap,
    TransformMapEntry,
}

pub(super) use lower::lower;

mod lower;

/// Registers the macros and the functions their expansions call.
pub(super) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    let forms = [
        ("all", Form::All, 3),
        ("exists", Form::Exists, 3),
        ("existsOne", Form::ExistsOne, 3),
        ("exists_one", Form::ExistsOne, 3),
        ("transformList", Form::TransformList, 3),
        ("transformList", Form::TransformList, 4),
        ("transformMap", Form::TransformMap, 3),
        ("transformMap", Form::TransformMap, 4),
        ("transformMapEntry", Form::TransformMapEntry, 3),
        ("transformMapEntry", Form::TransformMapEntry, 4),
    ];
    for (name, form, arity) in forms {
        env.add_macro(Macro::receiver(name, arity, move |h, target, args| {
            expand(form, h, target, args).map(Some)
        }))?;
    }
    env.add_overload(
        MAP_INSERT,
        "@mapInsert_map_key_value",
        vec![MAP_TYPE, DYN_TYPE, DYN_TYPE],
        map_insert,
    )?;
    env.add_overload(
        MAP_INSERT,
        "@mapInsert_map_map",
        vec![MAP_TYPE, MAP_TYPE],
        map_merge,
    )?;
    env.add_overload(KEYS, "@twoVarKeys_dyn", vec![DYN_TYPE], keys)?;
    Ok(())
}

/// A macro argument that names a variable, in cel-go's words when it does not.
fn variable(h: &MacroExprHelper<'_>, e: &IdedExpr) -> Result<String, ParseError> {
    match &e.expr {
        Expr::Ident(name) => Ok(name.clone()),
        _ => Err(h.new_error(e.id, "argument must be a simple name")),
    }
}

fn call(h: &mut MacroExprHelper<'_>, name: &str, args: Vec<IdedExpr>) -> IdedExpr {
    h.next_expr(Expr::Call(CallExpr {
        func_name: name.to_string(),
        target: None,
        args,
    }))
}

fn ident(h: &mut MacroExprHelper<'_>, name: &str) -> IdedExpr {
    h.next_expr(Expr::Ident(name.to_string()))
}

fn literal(h: &mut MacroExprHelper<'_>, l: LiteralValue) -> IdedExpr {
    h.next_expr(Expr::Literal(l))
}

/// The comprehension cel-go's macro for `form` expands `target.f(v1, v2, [filter,] e)` to.
fn expand(
    form: Form,
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<IdedExpr, ParseError> {
    let (Some(first), Some(second)) = (args.first(), args.get(1)) else {
        return Err(h.new_error(0, "two iteration variables expected"));
    };
    let v1 = variable(h, first)?;
    let v2 = variable(h, second)?;
    if v1 == v2 {
        return Err(h.new_error(second.id, format!("duplicate variable name: {v1}")));
    }
    for (v, e) in [(&v1, first), (&v2, second)] {
        if v == ACCU || v == "__result__" {
            return Err(h.new_error(e.id, "iteration variable overwrites accumulator variable"));
        }
    }
    let Some(range) = target.take() else {
        return Err(h.new_error(0, "a receiver expected"));
    };
    let mut rest: Vec<IdedExpr> = args.drain(2..).collect();
    let body = rest.pop().unwrap_or_default();
    let filter = rest.pop();
    let accu = |h: &mut MacroExprHelper<'_>| ident(h, ACCU);
    let (init, cond, step, result) = match form {
        Form::All => {
            let a = accu(h);
            let cond = call(h, operators::NOT_STRICTLY_FALSE, vec![a]);
            let a = accu(h);
            let step = call(h, operators::LOGICAL_AND, vec![a, body]);
            (
                literal(h, LiteralValue::Boolean(true.into())),
                cond,
                step,
                accu(h),
            )
        }
        Form::Exists => {
            let a = accu(h);
            let not = call(h, operators::LOGICAL_NOT, vec![a]);
            let cond = call(h, operators::NOT_STRICTLY_FALSE, vec![not]);
            let a = accu(h);
            let step = call(h, operators::LOGICAL_OR, vec![a, body]);
            (
                literal(h, LiteralValue::Boolean(false.into())),
                cond,
                step,
                accu(h),
            )
        }
        Form::ExistsOne => {
            let one = literal(h, LiteralValue::Int(1.into()));
            let a = accu(h);
            let more = call(h, operators::ADD, vec![a, one]);
            let a = accu(h);
            let step = call(h, operators::CONDITIONAL, vec![body, more, a]);
            let one = literal(h, LiteralValue::Int(1.into()));
            let a = accu(h);
            let result = call(h, operators::EQUALS, vec![a, one]);
            let init = literal(h, LiteralValue::Int(0.into()));
            (
                init,
                literal(h, LiteralValue::Boolean(true.into())),
                step,
                result,
            )
        }
        Form::TransformList | Form::TransformMap | Form::TransformMapEntry => {
            let step = match form {
                Form::TransformList => {
                    let item = h.next_expr(Expr::List(ListExpr::new(vec![body])));
                    let a = accu(h);
                    call(h, operators::ADD, vec![a, item])
                }
                Form::TransformMap => {
                    let key = ident(h, &v1);
                    let a = accu(h);
                    call(h, MAP_INSERT, vec![a, key, body])
                }
                _ => {
                    let a = accu(h);
                    call(h, MAP_INSERT, vec![a, body])
                }
            };
            let step = match filter {
                Some(f) => {
                    let a = accu(h);
                    call(h, operators::CONDITIONAL, vec![f, step, a])
                }
                None => step,
            };
            let init = match form {
                Form::TransformList => h.next_expr(Expr::List(ListExpr::new(Vec::new()))),
                _ => h.next_expr(Expr::Map(MapExpr::default())),
            };
            (
                init,
                literal(h, LiteralValue::Boolean(true.into())),
                step,
                accu(h),
            )
        }
    };
    Ok(h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: range,
        iter_var: v1,
        iter_var2: Some(v2),
        accu_var: ACCU.to_string(),
        accu_init: init,
        loop_cond: cond,
        loop_step: step,
        result,
    }))))
}

fn take<'b, 'v, const N: usize>(args: Args<'b, 'v>) -> Result<[CowVal<'b, 'v>; N], ExecutionError> {
    args.try_into()
        .map_err(|args: Vec<_>| ExecutionError::invalid_argument_count(N, args.len()))
}

/// A list's indices, or a map's keys.
fn keys<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let [range] = take(args)?;
    let range = range.as_ref();
    if let Some(list) = range.downcast_ref::<CelList>() {
        let n = list.inner().len() as i64;
        let indices: Vec<Box<dyn Val + 'v>> = (0..n)
            .map(|i| Box::new(CelInt::from(i)) as Box<dyn Val + 'v>)
            .collect();
        return Ok(CowVal::owned(CelList::from(indices)));
    }
    let Some(iterable) = range.as_iterable() else {
        return Err(ExecutionError::function_error(
            KEYS,
            format!(
                "cannot be range of a comprehension (must be list, map, or dynamic): {}",
                range.get_type().name()
            ),
        ));
    };
    let mut items = iterable.iter();
    let mut out: Vec<Box<dyn Val + 'v>> = Vec::new();
    while let Some(k) = items.next() {
        out.push(k.clone_as_boxed());
    }
    Ok(CowVal::owned(CelList::from(out)))
}

/// `m` with `k: v` added, or cel-go's error when it has `k`.
fn insert<'v>(
    m: &mut std::collections::HashMap<CelMapKey<'v>, Box<dyn Val + 'v>>,
    k: &(dyn Val + 'v),
    v: Box<dyn Val + 'v>,
) -> Result<(), ExecutionError> {
    let key: CelMapKey<'v> = CowVal::<'_, 'v>::Owned(k.clone_as_boxed()).try_into()?;
    if m.keys().any(|have| same_key(have, &key)) {
        return Err(ExecutionError::function_error(
            MAP_INSERT,
            format!("insert failed: key {} already exists", key_text(&key)),
        ));
    }
    m.insert(key, v);
    Ok(())
}

/// Whether two keys are equal as CEL compares map keys (numbers by value).
fn same_key(a: &CelMapKey<'_>, b: &CelMapKey<'_>) -> bool {
    use CelMapKey as K;
    match (a, b) {
        (K::Int(x), K::UInt(y)) | (K::UInt(y), K::Int(x)) => {
            u64::try_from(*x.inner()).is_ok_and(|x| x == *y.inner())
        }
        _ => a == b,
    }
}

/// A key as Go's `%v` prints cel-go's value.
fn key_text(k: &CelMapKey<'_>) -> String {
    use CelMapKey as K;
    match k {
        K::Bool(b) => b.inner().to_string(),
        K::Int(i) => i.inner().to_string(),
        K::UInt(u) => u.inner().to_string(),
        K::String(s) => s.inner().to_string(),
    }
}

fn map_entries<'v>(
    m: &(dyn Val + 'v),
) -> Result<std::collections::HashMap<CelMapKey<'v>, Box<dyn Val + 'v>>, ExecutionError> {
    match m.downcast_ref::<CelMap>() {
        Some(map) => Ok(map.clone().into_inner()),
        None => Err(ExecutionError::function_error(
            MAP_INSERT,
            format!("no such overload: {}", m.get_type().name()),
        )),
    }
}

fn map_insert<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let [m, k, v] = take(args)?;
    let mut entries = map_entries(m.as_ref())?;
    insert(&mut entries, k.as_ref(), v.into_owned())?;
    Ok(CowVal::owned(CelMap::from(entries)))
}

fn map_merge<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let [m, more] = take(args)?;
    let mut entries = map_entries(m.as_ref())?;
    for (k, v) in map_entries(more.as_ref())? {
        insert(&mut entries, k.inner(), v)?;
    }
    Ok(CowVal::owned(CelMap::from(entries)))
}

#[cfg(test)]
mod tests;
