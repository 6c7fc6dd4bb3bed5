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
    Some(rewrite(expr, &mut ids))
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

/// `e` with its children rewritten, and itself when it is a two-variable comprehension:
///
/// `range.f(k, v, ...)` → `bind(@t, range, loop over @twoVarKeys(@t) as @k)`, with `k` read
/// as `@k` and `v` as `@t[@k]` in the loop's condition and step. The hidden names carry the
/// node's id, so a comprehension nested in another does not capture the outer one's.
fn rewrite(e: &IdedExpr, ids: &mut Ids) -> IdedExpr {
    let mut out = e.clone();
    match &mut out.expr {
        Expr::Call(c) => {
            if let Some(t) = c.target.as_deref_mut() {
                *t = rewrite(t, ids);
            }
            for a in &mut c.args {
                *a = rewrite(a, ids);
            }
        }
        Expr::Select(s) => *s.operand = rewrite(&s.operand, ids),
        Expr::List(l) => {
            for x in &mut l.elements {
                *x = rewrite(x, ids);
            }
        }
        Expr::Map(m) => {
            for x in &mut m.entries {
                rewrite_entry(&mut x.expr, ids);
            }
        }
        Expr::Struct(s) => {
            for x in &mut s.entries {
                rewrite_entry(&mut x.expr, ids);
            }
        }
        Expr::Comprehension(c) => {
            for x in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                *x = rewrite(x, ids);
            }
            if let Some(v2) = c.iter_var2.take() {
                return one_variable(e.id, c, &v2, ids);
            }
        }
        _ => {}
    }
    out
}

fn rewrite_entry(entry: &mut EntryExpr, ids: &mut Ids) {
    match entry {
        EntryExpr::MapEntry(m) => {
            m.key = rewrite(&m.key, ids);
            m.value = rewrite(&m.value, ids);
        }
        EntryExpr::StructField(f) => f.value = rewrite(&f.value, ids),
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
    let cond = subst.apply(&c.loop_cond, ids);
    let step = subst.apply(&c.loop_step, ids);
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
        loop_cond: cond,
        loop_step: step,
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
    /// `e` with `v1` read as the hidden key and `v2` as the range at that key, where they are
    /// not shadowed by a comprehension inside `e`.
    fn apply(&self, e: &IdedExpr, ids: &mut Ids) -> IdedExpr {
        if let Expr::Ident(name) = &e.expr {
            if Some(name.as_str()) == self.v1 {
                return IdedExpr {
                    id: e.id,
                    expr: Expr::Ident(self.key.to_string()),
                };
            }
            if Some(name.as_str()) == self.v2 {
                let range = ids.node(Expr::Ident(self.range.to_string()));
                let key = ids.node(Expr::Ident(self.key.to_string()));
                return IdedExpr {
                    id: e.id,
                    expr: Expr::Call(CallExpr {
                        func_name: operators::INDEX.to_string(),
                        target: None,
                        args: vec![range, key],
                    }),
                };
            }
        }
        let mut out = e.clone();
        match &mut out.expr {
            Expr::Call(c) => {
                if let Some(t) = c.target.as_deref_mut() {
                    *t = self.apply(t, ids);
                }
                for a in &mut c.args {
                    *a = self.apply(a, ids);
                }
            }
            Expr::Select(s) => *s.operand = self.apply(&s.operand, ids),
            Expr::List(l) => {
                for x in &mut l.elements {
                    *x = self.apply(x, ids);
                }
            }
            Expr::Map(m) => {
                for x in &mut m.entries {
                    self.apply_entry(&mut x.expr, ids);
                }
            }
            Expr::Struct(s) => {
                for x in &mut s.entries {
                    self.apply_entry(&mut x.expr, ids);
                }
            }
            Expr::Comprehension(c) => {
                c.iter_range = self.apply(&c.iter_range, ids);
                c.accu_init = self.apply(&c.accu_init, ids);
                // the loop's own variables shadow ours in its condition and step, its
                // accumulator in its result too
                let unless = |v: Option<&'a str>, names: &[Option<&str>]| {
                    v.filter(|v| !names.contains(&Some(*v)))
                };
                let accu = Some(c.accu_var.as_str());
                let in_loop = [Some(c.iter_var.as_str()), c.iter_var2.as_deref(), accu];
                let inner = Subst {
                    v1: unless(self.v1, &in_loop),
                    v2: unless(self.v2, &in_loop),
                    ..*self
                };
                c.loop_cond = inner.apply(&c.loop_cond, ids);
                c.loop_step = inner.apply(&c.loop_step, ids);
                let after = Subst {
                    v1: unless(self.v1, &[accu]),
                    v2: unless(self.v2, &[accu]),
                    ..*self
                };
                c.result = after.apply(&c.result, ids);
            }
            _ => {}
        }
        out
    }

    fn apply_entry(&self, entry: &mut EntryExpr, ids: &mut Ids) {
        match entry {
            EntryExpr::MapEntry(m) => {
                m.key = self.apply(&m.key, ids);
                m.value = self.apply(&m.value, ids);
            }
            EntryExpr::StructField(f) => f.value = self.apply(&f.value, ids),
        }
    }
}
