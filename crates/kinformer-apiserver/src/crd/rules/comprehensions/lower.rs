//! Two-variable comprehensions rewritten as comprehensions of one variable, which the `cel`
//! crate evaluates.

use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, LiteralValue, operators,
};

use super::KEYS;

/// `expr` with every two-variable comprehension rewritten as one the `cel` crate evaluates,
/// or `None` when it has none.
pub(in crate::crd::rules) fn lower(expr: &IdedExpr) -> Option<IdedExpr> {
    if !has_two_variables(expr) {
        return None;
    }
    let mut ids = Ids(max_id(expr));
    let mut out = expr.clone();
    rewrite(&mut out, &mut ids);
    Some(out)
}

/// Fresh node ids, above the parsed expression's.
struct Ids(u64);

impl Ids {
    fn next(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }

    fn node(&mut self, expr: Expr) -> IdedExpr {
        IdedExpr {
            id: self.next(),
            expr,
        }
    }
}

/// Each direct subexpression of `e`.
fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    match &e.expr {
        Expr::Call(c) => c.target.as_deref().into_iter().chain(&c.args).collect(),
        Expr::Select(s) => vec![&s.operand],
        Expr::List(l) => l.elements.iter().collect(),
        Expr::Map(m) => entries(&m.entries),
        Expr::Struct(s) => entries(&s.entries),
        Expr::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ],
        _ => Vec::new(),
    }
}

fn entries(entries: &[cel::common::ast::IdedEntryExpr]) -> Vec<&IdedExpr> {
    entries
        .iter()
        .flat_map(|e| match &e.expr {
            EntryExpr::MapEntry(m) => vec![&m.key, &m.value],
            EntryExpr::StructField(f) => vec![&f.value],
        })
        .collect()
}

/// Each direct subexpression of `e`, to rewrite in place.
fn children_mut(e: &mut IdedExpr) -> Vec<&mut IdedExpr> {
    match &mut e.expr {
        Expr::Call(c) => c
            .target
            .as_deref_mut()
            .into_iter()
            .chain(&mut c.args)
            .collect(),
        Expr::Select(s) => vec![&mut *s.operand],
        Expr::List(l) => l.elements.iter_mut().collect(),
        Expr::Map(m) => entries_mut(&mut m.entries),
        Expr::Struct(s) => entries_mut(&mut s.entries),
        Expr::Comprehension(c) => vec![
            &mut c.iter_range,
            &mut c.accu_init,
            &mut c.loop_cond,
            &mut c.loop_step,
            &mut c.result,
        ],
        _ => Vec::new(),
    }
}

fn entries_mut(entries: &mut [cel::common::ast::IdedEntryExpr]) -> Vec<&mut IdedExpr> {
    entries
        .iter_mut()
        .flat_map(|e| match &mut e.expr {
            EntryExpr::MapEntry(m) => vec![&mut m.key, &mut m.value],
            EntryExpr::StructField(f) => vec![&mut f.value],
        })
        .collect()
}

fn has_two_variables(e: &IdedExpr) -> bool {
    matches!(&e.expr, Expr::Comprehension(c) if c.iter_var2.is_some())
        || children(e).into_iter().any(has_two_variables)
}

fn max_id(e: &IdedExpr) -> u64 {
    let entry_ids = match &e.expr {
        Expr::Map(m) => m.entries.iter().map(|x| x.id).max(),
        Expr::Struct(s) => s.entries.iter().map(|x| x.id).max(),
        _ => None,
    };
    children(e)
        .into_iter()
        .map(max_id)
        .chain(entry_ids)
        .fold(e.id, u64::max)
}

/// Rewrites `e`'s children, and `e` itself when it is a two-variable comprehension:
///
/// `range.f(k, v, ...)` → `bind(@t, range, loop over @twoVarKeys(@t) as @k)`, with `k` read
/// as `@k` and `v` as `@t[@k]` in the loop's condition and step. The hidden names carry the
/// node's id, so a comprehension nested in another does not capture the outer one's.
fn rewrite(e: &mut IdedExpr, ids: &mut Ids) {
    for child in children_mut(e) {
        rewrite(child, ids);
    }
    let id = e.id;
    if let Expr::Comprehension(c) = &mut e.expr
        && let Some(v2) = c.iter_var2.take()
    {
        let lowered = one_variable(id, c, &v2, ids);
        *e = lowered;
    }
}

/// The one-variable form of the comprehension `c` (node `id`), whose second variable is `v2`.
fn one_variable(id: u64, c: &mut ComprehensionExpr, v2: &str, ids: &mut Ids) -> IdedExpr {
    let range_name = format!("@t{id}");
    let key_name = format!("@k{id}");
    let v1 = std::mem::take(&mut c.iter_var);
    let subst = Subst {
        v1: Some(&v1),
        v2: Some(v2),
        range: &range_name,
        key: &key_name,
    };
    subst.apply(&mut c.loop_cond, ids);
    subst.apply(&mut c.loop_step, ids);
    let range = std::mem::take(&mut c.iter_range);
    let hidden_range = ids.node(Expr::Ident(range_name.clone()));
    let keys = ids.node(Expr::Call(CallExpr {
        func_name: KEYS.to_string(),
        target: None,
        args: vec![hidden_range],
    }));
    let loop_ = ids.node(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: keys,
        iter_var: key_name,
        iter_var2: None,
        accu_var: std::mem::take(&mut c.accu_var),
        accu_init: std::mem::take(&mut c.accu_init),
        loop_cond: std::mem::take(&mut c.loop_cond),
        loop_step: std::mem::take(&mut c.loop_step),
        result: std::mem::take(&mut c.result),
    })));
    // `bind(@t, range, loop)`: a comprehension over nothing whose accumulator is the range
    let nothing = ids.node(Expr::List(ListExpr::new(Vec::new())));
    let never = ids.node(Expr::Literal(LiteralValue::Boolean(false.into())));
    let same = ids.node(Expr::Ident(range_name.clone()));
    IdedExpr {
        id,
        expr: Expr::Comprehension(Box::new(ComprehensionExpr {
            iter_range: nothing,
            iter_var: "#unused".to_string(),
            iter_var2: None,
            accu_var: range_name,
            accu_init: range,
            loop_cond: never,
            loop_step: same,
            result: loop_,
        })),
    }
}

/// Reads of a two-variable comprehension's variables, as its lowered form reads them.
#[derive(Clone, Copy)]
struct Subst<'a> {
    /// The first variable, `None` where a comprehension inside shadows it.
    v1: Option<&'a str>,
    /// The second variable, `None` where shadowed.
    v2: Option<&'a str>,
    range: &'a str,
    key: &'a str,
}

impl<'a> Subst<'a> {
    /// Reads `v1` in `e` as the hidden key and `v2` as the range at that key, where they are
    /// not shadowed by a comprehension inside `e`.
    fn apply(&self, e: &mut IdedExpr, ids: &mut Ids) {
        if let Expr::Ident(name) = &e.expr {
            if Some(name.as_str()) == self.v1 {
                e.expr = Expr::Ident(self.key.to_string());
            } else if Some(name.as_str()) == self.v2 {
                let range = ids.node(Expr::Ident(self.range.to_string()));
                let key = ids.node(Expr::Ident(self.key.to_string()));
                e.expr = Expr::Call(CallExpr {
                    func_name: operators::INDEX.to_string(),
                    target: None,
                    args: vec![range, key],
                });
            }
            return;
        }
        let Expr::Comprehension(c) = &mut e.expr else {
            for child in children_mut(e) {
                self.apply(child, ids);
            }
            return;
        };
        self.apply(&mut c.iter_range, ids);
        self.apply(&mut c.accu_init, ids);
        // the loop's own variables shadow ours in its condition and step, its accumulator in
        // its result too
        let unless =
            |v: Option<&'a str>, names: &[Option<&str>]| v.filter(|v| !names.contains(&Some(*v)));
        let accu = Some(c.accu_var.as_str());
        let in_loop = [Some(c.iter_var.as_str()), c.iter_var2.as_deref(), accu];
        let inner = Subst {
            v1: unless(self.v1, &in_loop),
            v2: unless(self.v2, &in_loop),
            ..*self
        };
        let after = Subst {
            v1: unless(self.v1, &[accu]),
            v2: unless(self.v2, &[accu]),
            ..*self
        };
        inner.apply(&mut c.loop_cond, ids);
        inner.apply(&mut c.loop_step, ids);
        after.apply(&mut c.result, ids);
    }
}
