//! Kubernetes' lists library (`k8s.io/apiserver/pkg/cel/library/lists.go`: `isSorted()`,
//! `sum()`, `min()`, `max()`, `indexOf(x)`, `lastIndexOf(x)` on a list) and the `find` /
//! `findAll` of its regex library (`regex.go`), as CRD rules call them
//! (`self.priorities.isSorted()`, `self.weights.sum() == 100`,
//! `self.image.find('[0-9]+$') != ''`), and the `first()` and `last()` of cel-go's optional
//! library (an optional of a list's first or last item, `optional.none()` when it is empty).

use cel::common::types::{
    CelBool, CelInt, CelList, CelOptional, CelString, DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE,
};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Answer<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// The arguments of an overload registered with `N` of them (the receiver included).
pub(super) fn take<'b, 'v, const N: usize>(
    args: Args<'b, 'v>,
) -> Result<[CowVal<'b, 'v>; N], ExecutionError> {
    args.try_into()
        .map_err(|args: Vec<_>| ExecutionError::invalid_argument_count(N, args.len()))
}

/// Each element of a list, borrowed.
pub(super) fn elements<'b, 'v>(
    list: &'b (dyn Val + 'v),
) -> Result<Vec<&'b (dyn Val + 'v)>, ExecutionError> {
    let Some(iterable) = list.as_iterable() else {
        return Err(no_overload(list));
    };
    let mut items = iterable.iter();
    let mut out = Vec::new();
    while let Some(item) = items.next() {
        out.push(item);
    }
    Ok(out)
}

fn no_overload(v: &dyn Val) -> ExecutionError {
    ExecutionError::function_error("", format!("no such overload: {}", v.get_type().name()))
}

/// An optional of the first item (`last`: the last), `optional.none()` for an empty list.
fn end<'b, 'v, const LAST: bool>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let [list] = take(args)?;
    let items = elements(list.as_ref())?;
    let item = if LAST { items.last() } else { items.first() };
    Ok(CowVal::owned(match item {
        Some(x) => CelOptional::of(x.clone_as_boxed()),
        None => CelOptional::none(),
    }))
}

fn is_sorted<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let [list] = take(args)?;
    let items = elements(list.as_ref())?;
    for pair in items.windows(2) {
        let cmp = pair[0].as_comparer().ok_or_else(|| no_overload(pair[0]))?;
        if cmp.compare(pair[1])? == std::cmp::Ordering::Greater {
            return Ok(CowVal::owned(CelBool::from(false)));
        }
    }
    Ok(CowVal::owned(CelBool::from(true)))
}

/// The sum of the elements (an empty list sums to the int 0).
fn sum<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let [list] = take(args)?;
    let items = elements(list.as_ref())?;
    let Some((first, rest)) = items.split_first() else {
        return Ok(CowVal::owned(CelInt::from(0)));
    };
    let mut acc: Box<dyn Val + 'v> = first.clone_as_boxed();
    for item in rest {
        let adder = acc.as_adder().ok_or_else(|| no_overload(*item))?;
        let next = adder.add(*item)?;
        let next: Box<dyn Val + 'v> = match next {
            CowVal::Owned(b) => b,
            CowVal::Borrowed(b) => b.clone_as_boxed(),
        };
        acc = next;
    }
    Ok(CowVal::Owned(acc))
}

/// The least (`prefer` Greater: a later element replaces the current one when the current one
/// compares greater) or the greatest element; an error on an empty list, in cel-go's words.
fn extreme<'b, 'v>(args: Args<'b, 'v>, name: &str, prefer: std::cmp::Ordering) -> Answer<'b, 'v> {
    let [list] = take(args)?;
    let items = elements(list.as_ref())?;
    let mut best: Option<&(dyn Val + 'v)> = None;
    for item in items {
        best = Some(match best {
            None => item,
            Some(b) => {
                let cmp = b.as_comparer().ok_or_else(|| no_overload(b))?;
                if cmp.compare(item)? == prefer {
                    item
                } else {
                    b
                }
            }
        });
    }
    match best {
        Some(b) => Ok(CowVal::Owned(b.clone_as_boxed())),
        None => Err(ExecutionError::function_error(
            name,
            format!("{name} called on empty list"),
        )),
    }
}

fn min<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    extreme(args, "min", std::cmp::Ordering::Greater)
}

fn max<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    extreme(args, "max", std::cmp::Ordering::Less)
}

fn position<'b, 'v>(args: Args<'b, 'v>, last: bool) -> Answer<'b, 'v> {
    let [list, item] = take(args)?;
    let items = elements(list.as_ref())?;
    let found = |(_, x): &(usize, &&(dyn Val + 'v))| x.equals(item.as_ref());
    let at = if last {
        items.iter().enumerate().rev().find(found)
    } else {
        items.iter().enumerate().find(found)
    };
    let at = at.map_or(-1, |(i, _)| i64::try_from(i).unwrap_or(i64::MAX));
    Ok(CowVal::owned(CelInt::from(at)))
}

fn index_of<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    position(args, false)
}

fn last_index_of<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    position(args, true)
}

/// A regex of a rule, compiled (an invalid one is the function's error, as in cel-go).
fn regex(name: &str, pattern: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|e| ExecutionError::function_error(name, e))
}

fn str_arg<'a>(v: &'a CowVal<'_, '_>) -> Result<&'a str, ExecutionError> {
    <&str>::try_from(v.as_ref()).map_err(|_| no_overload(v.as_ref()))
}

/// The first match of the regex in the string, `''` when there is none.
fn find<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let [s, re] = take(args)?;
    let found = regex("find", str_arg(&re)?)?
        .find(str_arg(&s)?)
        .map_or(String::new(), |m| m.as_str().to_string());
    Ok(CowVal::owned(CelString::from(found)))
}

fn all_matches<'b, 'v>(s: &str, re: &str, limit: i64) -> Answer<'b, 'v> {
    let re = regex("findAll", re)?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let found: Vec<Box<dyn Val + 'v>> = re
        .find_iter(s)
        .take(limit)
        .map(|m| Box::new(CelString::from(m.as_str().to_string())) as Box<dyn Val + 'v>)
        .collect();
    Ok(CowVal::owned(CelList::from(found)))
}

/// Every match, or the first `n` (every one when `n` is negative).
fn find_all<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let [s, re] = take(args)?;
    all_matches(str_arg(&s)?, str_arg(&re)?, -1)
}

fn find_all_n<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let [s, re, n] = take(args)?;
    let n = n
        .as_ref()
        .downcast_ref::<CelInt>()
        .map(|i| *i.inner())
        .ok_or_else(|| no_overload(n.as_ref()))?;
    all_matches(str_arg(&s)?, str_arg(&re)?, n)
}

/// Registers the functions on `env`.
pub(super) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list.isSorted()", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("first", "list_first", LIST_TYPE, vec![], end::<false>)?;
    env.add_member_overload("last", "list_last", LIST_TYPE, vec![], end::<true>)?;
    env.add_member_overload("sum", "list.sum()", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list.min()", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list.max()", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list.indexOf(dyn)",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list.lastIndexOf(dyn)",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    env.add_member_overload(
        "find",
        "string.find(string)",
        STRING_TYPE,
        vec![STRING_TYPE],
        find,
    )?;
    env.add_member_overload(
        "findAll",
        "string.findAll(string)",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string.findAll(string,int)",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all_n,
    )?;
    Ok(())
}
