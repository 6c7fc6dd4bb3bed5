//! What cel-go's type checker refuses, where the types are certain: a name nothing declares,
//! and a function or operator applied to types it has no overload for, in cel-go's words
//! (`found no matching overload for '_==_' applied to '(int, string)'`). A value of unknown
//! type (`x-kubernetes-int-or-string`, `dyn(...)`, what the check already refused) takes any
//! overload, as in cel-go, and is reported only in arithmetic where the other side has none
//! (`(dyn, double)` for `%`). Whatever else is uncertain (an unknown function's result, an
//! object's type, which kube-apiserver names at random) is let through: kube-apiserver may
//! refuse what is reported nowhere here, but what it accepts is not refused.

use super::{NAMESPACES, Ty};

/// Names Kubernetes' CEL environment declares besides the rule's variables and locals: the
/// type names and the namespaces of its functions.
const DECLARED: [&str; 14] = [
    "self",
    "oldSelf",
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
    "google",
];

/// Namespaces of functions the `cel` crate knows that Kubernetes' environment does not have:
/// cel-go names them undeclared.
const UNDECLARED_NAMESPACES: [&str; 2] = ["math", "base64"];

/// The functions of the sets and format libraries' namespaces.
const SETS: [&str; 3] = ["contains", "equivalent", "intersects"];
const FORMATS: [&str; 14] = [
    "named",
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

/// Whether `ns.function(...)` names nothing Kubernetes' environment declares (cel-go then
/// names both the namespace and the function undeclared).
pub(super) fn undeclared(ns: &str, function: &str) -> bool {
    match ns {
        "sets" => !SETS.contains(&function),
        "format" => !FORMATS.contains(&function),
        _ => UNDECLARED_NAMESPACES.contains(&ns),
    }
}

/// The type named `kubernetes.NamedFormat` in cel-go's words.
const FORMAT: &str = "kubernetes.NamedFormat";

/// Whether `name` is declared outside the rule (its variables, types and namespaces).
pub(super) fn declared(name: &str) -> bool {
    DECLARED.contains(&name) || NAMESPACES.contains(&name)
}

impl Ty {
    /// `dyn` for a refused expression's type, else the type.
    pub(super) fn unknown_if_error(self) -> Ty {
        if self == Ty::Error { Ty::Dyn } else { self }
    }

    /// The type's name when it is certain.
    pub(super) fn name(&self) -> Option<&'static str> {
        Some(match self {
            Ty::Bool => "bool",
            Ty::Int => "int",
            Ty::Uint => "uint",
            Ty::Double => "double",
            Ty::Str => "string",
            Ty::Bytes => "bytes",
            Ty::Null => "null_type",
            Ty::Duration => "duration",
            Ty::Timestamp => "timestamp",
            Ty::Type => "type",
            Ty::List(_) => "list",
            Ty::Map(_) => "map",
            Ty::Object => "object",
            Ty::Format => FORMAT,
            Ty::Optional(_) => "optional_type",
            Ty::Lib | Ty::Dyn | Ty::Error => return None,
        })
    }

    /// The type's full name (`list(string)`, `map(string, int)`) when it is certain.
    pub(super) fn full_name(&self) -> Option<String> {
        match self {
            Ty::Null => Some("null".into()),
            Ty::List(e) => Some(format!("list({})", e.full_name()?)),
            Ty::Map(v) => Some(format!("map(string, {})", v.full_name()?)),
            Ty::Format => Some(FORMAT.into()),
            Ty::Optional(t) => Some(format!("optional_type({})", t.full_name()?)),
            t => t.scalar_name().map(String::from),
        }
    }

    /// The name of a scalar type whose overloads are checked here.
    fn scalar_name(&self) -> Option<&'static str> {
        match self {
            Ty::Bool
            | Ty::Int
            | Ty::Uint
            | Ty::Double
            | Ty::Str
            | Ty::Bytes
            | Ty::Duration
            | Ty::Timestamp => self.name(),
            _ => None,
        }
    }
}

fn numeric(t: &str) -> bool {
    matches!(t, "int" | "uint" | "double")
}

/// cel-go's words when `name` has no overload for these types, if they are all certain.
pub(super) fn overload_error(name: &str, target: Option<&Ty>, args: &[&Ty]) -> Option<String> {
    let refuse = |types: &[String]| no_overload(name, None, &types.join(", "));
    match (name, args) {
        ("_==_" | "_!=_", [a, b]) => {
            // One type on both sides; null only against an object, a duration, a timestamp
            // or a value of unknown type.
            let (x, y) = (a.full_name()?, b.full_name()?);
            let nullable = |t: &str| matches!(t, "duration" | "timestamp");
            let null_ok = (x == "null" && nullable(&y)) || (y == "null" && nullable(&x));
            return if x == y || null_ok {
                None
            } else {
                refuse(&[x, y])
            };
        }
        ("!_", [a]) => {
            let x = a.full_name()?;
            return if x == "bool" { None } else { refuse(&[x]) };
        }
        ("_&&_" | "_||_", [a, b]) => {
            let (x, y) = (a.full_name()?, b.full_name()?);
            return if x == "bool" && y == "bool" {
                None
            } else {
                refuse(&[x, y])
            };
        }
        // the sets library's functions take two lists of one type of item
        ("sets.contains" | "sets.equivalent" | "sets.intersects", [a, b]) => {
            let (x, y) = (a.full_name()?, b.full_name()?);
            let lists = matches!((a, b), (Ty::List(_), Ty::List(_)));
            return if lists && x == y {
                None
            } else {
                refuse(&[x, y])
            };
        }
        // `flatten()` takes a list of lists (with a depth, any list)
        ("flatten", []) => {
            let t = target?;
            return match t {
                Ty::List(inner) if !matches!(**inner, Ty::List(_) | Ty::Dyn | Ty::Error) => {
                    no_overload(name, Some(t.full_name()?.as_str()), "")
                }
                _ => None,
            };
        }
        ("format.named", [a]) => {
            let x = a.full_name()?;
            return if x == "string" { None } else { refuse(&[x]) };
        }
        ("validate", [a]) if target.is_some() => {
            let (t, x) = (target?.full_name()?, a.full_name()?);
            return if t == FORMAT && x == "string" {
                None
            } else {
                no_overload(name, Some(t.as_str()), &x)
            };
        }
        ("_?_:_", [c, t, f]) => {
            let cond = c.full_name()?;
            let (x, y) = (t.scalar_name(), f.scalar_name());
            let branches_differ = matches!((x, y), (Some(x), Some(y)) if x != y);
            return if cond == "bool" && !branches_differ {
                None
            } else {
                let names = [cond, t.full_name()?, f.full_name()?];
                refuse(&names)
            };
        }
        _ => {}
    }
    // In arithmetic a value of unknown type (`dyn`) takes any overload the other side has.
    let arithmetic = matches!(name, "_+_" | "_-_" | "_*_" | "_/_" | "_%_");
    let names: Vec<&str> = args
        .iter()
        .map(|t| match t {
            Ty::Dyn if arithmetic => Some("dyn"),
            Ty::Error if arithmetic => Some("!error!"),
            t => t.scalar_name(),
        })
        .collect::<Option<_>>()?;
    let time = |t: &&str| matches!(*t, "duration" | "timestamp");
    let wild = |t: &&str| matches!(*t, "dyn" | "!error!");
    let ok = match (name, names.as_slice()) {
        (_, [a, b]) if arithmetic && (wild(a) || wild(b)) => {
            let o = if wild(a) { b } else { a };
            wild(o)
                || match name {
                    "_+_" => *o != "bool",
                    "_-_" => numeric(o) || time(o),
                    "_%_" => matches!(*o, "int" | "uint"),
                    _ => numeric(o),
                }
        }
        // a timestamp and a duration add and subtract: not checked here
        ("_+_" | "_-_" | "_*_" | "_/_" | "_%_", [a, b]) if time(a) || time(b) => true,
        ("_<_" | "_<=_" | "_>_" | "_>=_", [a, b]) => a == b || (numeric(a) && numeric(b)),
        ("_+_", [a, b]) => a == b && *a != "bool",
        ("_-_" | "_*_" | "_/_", [a, b]) => a == b && numeric(a),
        ("_%_", [a, b]) => a == b && matches!(*a, "int" | "uint"),
        ("-_", [a]) => matches!(*a, "int" | "double"),
        ("size", [a]) if target.is_none() => matches!(*a, "string" | "bytes"),
        _ => true,
    };
    let member = match (name, target.and_then(Ty::scalar_name), names.as_slice()) {
        ("size", Some(t), []) => matches!(t, "string" | "bytes"),
        ("startsWith" | "endsWith" | "contains" | "matches", Some(t), [a]) => {
            t == "string" && *a == "string"
        }
        _ => true,
    };
    if ok && member {
        return None;
    }
    no_overload(name, target.and_then(Ty::scalar_name), &names.join(", "))
}

/// cel-go's words for a call with no overload: `'(int, string)'`, `'string.(int)'` with a
/// receiver.
fn no_overload(name: &str, receiver: Option<&str>, args: &str) -> Option<String> {
    let receiver = receiver.map(|r| format!("{r}.")).unwrap_or_default();
    Some(format!(
        "found no matching overload for '{name}' applied to '{receiver}({args})'"
    ))
}
