//! What each function costs, by name: cel-go's standard functions (`checker/cost.go`), its
//! strings, lists and sets libraries, and Kubernetes' own (`library/cost.go`); a function
//! missing here costs 1, as in both.

use super::{E, Estimator, ONE, Size, Ty, UNKNOWN, entry_union, factor, tenth};

/// The function cel-go's `sortBy` macro expands to: `list.@sortByAssociatedKeys(keys)`.
const SORT_BY: &str = "@sortByAssociatedKeys";

impl<'a> Estimator<'a> {
    /// A function's own cost (its arguments' and target's are added by the caller), its
    /// result's type, and the size or schema node of its result when one is known.
    pub(super) fn function(&self, name: &str, target: Option<&E<'a>>, args: &[E<'a>]) -> E<'a> {
        let sz = |e: Option<&E<'a>>| e.map_or(UNKNOWN, |e| self.size(e));
        let a0 = args.first();
        let a1 = args.get(1);
        // The value the function works on: its target, or its first argument.
        let subject = target.or(a0);
        let s = sz(subject);
        // A refused expression's type takes overloads as a value of unknown type does.
        let ty_of = |e: Option<&E<'a>>| e.map_or(Ty::Dyn, |e| e.ty.clone().unknown_if_error());
        // A regular expression's: the subject's length by the pattern's.
        let regex =
            || factor(s.max.saturating_add(1), 0.1).saturating_mul(factor(sz(a0).max, 0.25));
        match name {
            "_==_" | "_!=_" => {
                // Kubernetes prices `==` between its library's values (quantities, IPs, ...)
                // at 1, between two formats at a traversal of the longest format name (64);
                // `!=` keeps the generic rule, which their unknown size makes dear.
                let lib = name == "_==_" && [a0, a1].iter().any(|e| ty_of(*e) == Ty::Lib);
                let formats = name == "_==_" && [a0, a1].iter().all(|e| ty_of(*e) == Ty::Format);
                let cost = if lib {
                    1
                } else if formats {
                    tenth(64)
                } else {
                    tenth(sz(a0).max.min(sz(a1).max))
                };
                E::value(cost, Ty::Bool)
            }
            "_<_" | "_<=_" | "_>_" | "_>=_" => {
                let tys = [ty_of(a0), ty_of(a1)];
                let strings = tenth(sz(a0).max.min(sz(a1).max));
                let cost = if tys.iter().any(|t| matches!(t, Ty::Str | Ty::Bytes)) {
                    strings
                } else if tys.contains(&Ty::Dyn) {
                    strings.max(1)
                } else {
                    1
                };
                E::value(cost, Ty::Bool)
            }
            "_+_" => {
                let (l, r) = (sz(a0), sz(a1));
                let sum = Size {
                    min: l.min.saturating_add(r.min),
                    max: l.max.saturating_add(r.max),
                };
                // With a value of unknown type on one side, the overload is the other side's;
                // times and durations are not followed.
                let mut out = match (ty_of(a0), ty_of(a1)) {
                    (Ty::Duration | Ty::Timestamp, _) | (_, Ty::Duration | Ty::Timestamp) => {
                        E::value(1, Ty::Dyn)
                    }
                    (t @ (Ty::Str | Ty::Bytes), _) | (_, t @ (Ty::Str | Ty::Bytes)) => {
                        E::value(tenth(sum.max), t).sized(sum)
                    }
                    (Ty::List(l), Ty::List(r)) => {
                        let ty = if *l == Ty::Dyn { *r } else { *l };
                        E::value(1, Ty::List(Box::new(ty))).sized(sum)
                    }
                    (t @ Ty::List(_), Ty::Dyn) | (Ty::Dyn, t @ Ty::List(_)) => {
                        E::value(1, t).sized(sum)
                    }
                    (Ty::Dyn, Ty::Dyn) => E::value(tenth(sum.max).max(1), Ty::Dyn),
                    (Ty::Dyn, t) | (t, _) => E::value(1, t),
                };
                // lists joined: the entries of either
                out.entry = entry_union(a0.and_then(|a| a.entry), a1.and_then(|a| a.entry));
                out
            }
            "@in" => match ty_of(a1) {
                Ty::List(_) => E::value(sz(a1).max, Ty::Bool),
                Ty::Map(_) => E::value(1, Ty::Bool),
                _ => E::value(sz(a1).max.max(1), Ty::Bool),
            },
            "_[_]" | "_[?_]" => {
                let at = a0.and_then(|o| match (&o.ty, o.at) {
                    (Ty::List(_), Some(n)) => n.items(),
                    (Ty::Map(_), Some(n)) => n.values(),
                    _ => None,
                });
                let ty = at.map_or_else(|| ty_of(a0).elem(), |n| Ty::of(n, 0));
                // an item of a list or map built in the expression: its entries' size; of one
                // a function returns, the root's (cel-go's size estimator drops the first step
                // of its path, `@items`)
                let size = a0.and_then(|o| match (o.entry, o.at, &o.ty) {
                    (Some(e), _, _) => Some(e.val),
                    (None, None, Ty::List(_) | Ty::Map(_)) if o.pathless => Some(Size {
                        min: 0,
                        max: self.root.max_elements(),
                    }),
                    _ => None,
                });
                E {
                    at,
                    size,
                    ..E::value(1, ty)
                }
            }
            // A value of any type to the type check; its size stays the argument's.
            "dyn" => {
                let mut out = E::value(1, Ty::Dyn);
                out.size = a0.map(|a| self.size(a));
                out
            }
            "matches" if target.is_some() => E::value(regex(), Ty::Bool),
            "find" | "findAll" => {
                let ty = if name == "find" {
                    Ty::Str
                } else {
                    Ty::List(Box::new(Ty::Str))
                };
                E::value(regex(), ty).sized(Size { min: 0, max: s.max })
            }
            "startsWith" | "endsWith" => E::value(tenth(sz(a0).max), Ty::Bool),
            "contains" if target.is_some_and(|t| t.ty.string_like()) => {
                E::value(tenth(s.max).saturating_mul(tenth(sz(a0).max)), Ty::Bool)
            }
            "format" if target.is_some() => E::value(tenth(s.max), Ty::Str),
            "bytes" if ty_of(a0) == Ty::Str => E::value(tenth(s.max), Ty::Bytes).sized(Size {
                min: s.min,
                max: s.max.saturating_mul(4),
            }),
            "string" if ty_of(a0) == Ty::Bytes => E::value(tenth(s.max), Ty::Str).sized(Size {
                min: s.min / 4,
                max: s.max,
            }),
            "strings.quote" => E::value(tenth(s.max), Ty::Str).sized(Size {
                min: s.min.saturating_add(2),
                max: s.max.saturating_mul(2).saturating_add(2),
            }),
            "lowerAscii" | "upperAscii" | "substring" | "trim" if target.is_some() => {
                E::value(tenth(s.max), Ty::Str).sized(s)
            }
            "replace" if target.is_some() => {
                let (r, w) = (sz(a0), sz(a1));
                let max = if r.min == 0 {
                    s.max
                        .saturating_add(1)
                        .saturating_mul(w.max)
                        .saturating_add(s.max)
                } else if w.max <= r.min {
                    s.max
                } else {
                    s.max.div_ceil(r.min).saturating_mul(w.max)
                };
                E::value(factor(s.max, 0.2), Ty::Str).sized(Size { min: 0, max })
            }
            "split" if target.is_some() => {
                let max = int_literal(args, 1).unwrap_or(s.max);
                E::value(factor(s.max, 0.2), Ty::List(Box::new(Ty::Str)))
                    .sized(Size { min: 0, max })
            }
            "join" if target.is_some() => {
                let list = target.map_or(UNKNOWN, |t| self.size(t));
                let elem = self.elem_size(target);
                let mut total = list.max.saturating_mul(elem.max);
                if let Some(sep) = a0 {
                    total = total.saturating_add(
                        self.size(sep)
                            .max
                            .saturating_mul(list.max.saturating_sub(1)),
                    );
                }
                E::value(tenth(total), Ty::Str).sized(Size { min: 0, max: total })
            }
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf"
                if target.is_some_and(|t| matches!(t.ty, Ty::List(_))) =>
            {
                let t = target.map(|t| t.ty.elem()).unwrap_or(Ty::Dyn);
                let per = if matches!(t, Ty::Str | Ty::Bytes) {
                    1 + tenth(self.elem_size(target).max)
                } else {
                    1
                };
                let ty = match name {
                    "isSorted" => Ty::Bool,
                    "indexOf" | "lastIndexOf" => Ty::Int,
                    _ => t,
                };
                E::value(s.max.saturating_mul(per), ty)
            }
            "indexOf" | "lastIndexOf" if target.is_some() => E::value(tenth(s.max), Ty::Int),
            "url" | "jsonpatch.escapeKey" => E::value(tenth(s.max), Ty::Lib).sized(s),
            // a URL's parts, each at a constant cost (a string, and a map of lists)
            "getScheme" | "getHostname" | "getHost" | "getPort" | "getEscapedPath"
                if target.is_some() =>
            {
                E::value(1, Ty::Str)
            }
            "getQuery" if target.is_some() => {
                E::value(1, Ty::Map(Box::new(Ty::List(Box::new(Ty::Str)))))
            }
            "isIP" | "isCIDR" | "isQuantity" | "isSemver" => E::value(tenth(s.max), Ty::Bool),
            "ip" | "cidr" | "quantity" | "semver" if target.is_none() => {
                E::value(tenth(s.max), Ty::Lib)
            }
            "ip.isCanonical" => E::value(factor(s.max, 0.2), Ty::Bool),
            "containsIP" | "containsCIDR" => {
                let base = if name == "containsIP" { 4 } else { 7 };
                let extra = if ty_of(a0) == Ty::Str {
                    tenth(sz(a0).max)
                } else {
                    0
                };
                E::value(base + extra, Ty::Bool)
            }
            // the longest regex of a format (128) at a quarter per character, per tenth of the
            // string: the list of errors when there are some
            "validate" if target.is_some() => E::value(
                factor(tenth(sz(a0).max), 32.0),
                Ty::Optional(Box::new(Ty::List(Box::new(Ty::Str)))),
            ),
            "format.named" => E::value(1, Ty::Optional(Box::new(Ty::Format))),
            n if n.starts_with("format.") && target.is_none() && args.is_empty() => {
                E::value(1, Ty::Format)
            }
            // an optional's value, of the type it holds
            "value" | "orValue" if matches!(ty_of(target), Ty::Optional(_)) => {
                E::value(1, ty_of(target).elem())
            }
            "sets.contains" | "sets.intersects" | "sets.equivalent" => {
                let f = if name == "sets.equivalent" { 2.0 } else { 1.0 };
                E::value(
                    factor(sz(a0).max.saturating_mul(sz(a1).max), f).saturating_add(1),
                    Ty::Bool,
                )
            }
            "slice" | "reverse" | "distinct" | "flatten" | "sort" | SORT_BY | "lists.range"
                if target.is_some() || name == "lists.range" =>
            {
                let n = match name {
                    "lists.range" => int_literal(args, 0).unwrap_or(u64::MAX),
                    "slice" => {
                        let from = int_literal(args, 0).unwrap_or(0);
                        int_literal(args, 1).unwrap_or(s.max).saturating_sub(from)
                    }
                    "distinct" | "sort" => s.max.saturating_mul(s.max),
                    // what `sortBy` expands to: priced by the list of keys it sorts by
                    SORT_BY => sz(a0).max.saturating_mul(sz(a0).max),
                    _ => s.max,
                };
                let f = match name {
                    "flatten" => int_literal(args, 0).map_or(1.0, |x| x as f64),
                    "distinct" => 2.0,
                    "sort" | SORT_BY => {
                        let sorted = if name == "sort" { target } else { a0 };
                        match sorted.map(|t| t.ty.elem()) {
                            Some(Ty::Str | Ty::Bytes) => 2.1,
                            _ => 2.0,
                        }
                    }
                    _ => 1.0,
                };
                let ty = if name == "lists.range" {
                    Ty::List(Box::new(Ty::Int))
                } else {
                    ty_of(target)
                };
                E::value(factor(n, f).saturating_add(11), ty).sized(Size { min: 0, max: n })
            }
            _ => E::value(1, result_type(name, target, args)),
        }
    }

    /// The size of a list's items: by its schema, else by their type.
    pub(super) fn elem_size(&self, list: Option<&E<'a>>) -> Size {
        match list.and_then(|l| l.at).and_then(|n| n.items()) {
            Some(n) => Size {
                min: 0,
                max: n.max_elements(),
            },
            None => {
                if list.is_some_and(|l| l.ty.elem().scalar()) {
                    ONE
                } else {
                    UNKNOWN
                }
            }
        }
    }
}

/// The `i`th argument when it is a non-negative integer literal.
fn int_literal(args: &[E<'_>], i: usize) -> Option<u64> {
    args.get(i)?.int
}

/// The type a function returns, for the functions whose cost is their default.
fn result_type(name: &str, target: Option<&E<'_>>, args: &[E<'_>]) -> Ty {
    let subject = target
        .or(args.first())
        .map_or(Ty::Dyn, |e| e.ty.clone().unknown_if_error());
    // An arithmetic operator with a value of unknown type on one side takes the other's.
    let subject = match (&subject, args.get(1).map(|a| &a.ty)) {
        (Ty::Duration | Ty::Timestamp, _) | (_, Some(Ty::Duration | Ty::Timestamp)) => Ty::Dyn,
        (Ty::Dyn, Some(other)) if target.is_none() => other.clone().unknown_if_error(),
        _ => subject,
    };
    match name {
        "size" | "int" => Ty::Int,
        "charAt" => Ty::Str,
        "uint" => Ty::Uint,
        "double" => Ty::Double,
        "string" => Ty::Str,
        "bytes" => Ty::Bytes,
        "bool"
        | "!_"
        | "@not_strictly_false"
        | "has"
        | "matches"
        | "startsWith"
        | "endsWith"
        | "contains"
        | "isURL"
        | "hasValue" => Ty::Bool,
        "timestamp" => Ty::Timestamp,
        "duration" => Ty::Duration,
        "type" => Ty::Type,
        "-_" | "_-_" | "_*_" | "_/_" | "_%_" => subject,
        _ => Ty::Dyn,
    }
}
