//! cel-go's sets library (`ext.Sets()`, `github.com/google/cel-go/ext/sets.go`), which
//! Kubernetes' environment has since 1.29: `sets.contains(list, list)`,
//! `sets.equivalent(list, list)` and `sets.intersects(list, list)`.
//!
//! Lists are taken as sets: an element is in a list when it equals one of its items by CEL's
//! `==` (numbers across types, `1 == 1.0 == 1u`; lists and maps item by item), and neither
//! order nor repetition matters. As the library documents: every list contains the empty
//! list, the empty list intersects no list, and two empty lists are equivalent.

use cel::common::types::{CelBool, LIST_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::library::{elements, take};

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Answer<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// Whether `item` equals an item of `list` (cel-go's `Lister.Contains`).
fn has(list: &[&dyn Val], item: &dyn Val) -> bool {
    list.iter().any(|x| item.equals(*x))
}

/// Whether every item of `sub` is in `list`.
fn contains_all(list: &dyn Val, sub: &dyn Val) -> Result<bool, ExecutionError> {
    let list = elements(list)?;
    Ok(elements(sub)?.into_iter().all(|x| has(&list, x)))
}

fn answer<'b, 'v>(b: bool) -> Answer<'b, 'v> {
    Ok(CowVal::owned(CelBool::from(b)))
}

/// `sets.contains(list, sublist)`: every item of `sublist` is in `list`.
fn contains<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let [list, sub] = take(args)?;
    answer(contains_all(list.as_ref(), sub.as_ref())?)
}

/// `sets.equivalent(a, b)`: each contains the other.
fn equivalent<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let [a, b] = take(args)?;
    answer(contains_all(a.as_ref(), b.as_ref())? && contains_all(b.as_ref(), a.as_ref())?)
}

/// `sets.intersects(a, b)`: an item of `a` is in `b`.
fn intersects<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let [a, b] = take(args)?;
    let b = elements(b.as_ref())?;
    answer(elements(a.as_ref())?.into_iter().any(|x| has(&b, x)))
}

/// Registers the library on `env`.
pub(super) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    let lists = || vec![LIST_TYPE, LIST_TYPE];
    env.add_overload(
        "sets.contains",
        "list_sets_contains_list",
        lists(),
        contains,
    )?;
    env.add_overload(
        "sets.equivalent",
        "list_sets_equivalent_list",
        lists(),
        equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "list_sets_intersects_list",
        lists(),
        intersects,
    )?;
    Ok(())
}
