//! What cel-go's type checker refuses, where the types are certain: a name nothing declares,
//! and a function or operator applied to types it has no overload for, in cel-go's words
//! (`found no matching overload for '_==_' applied to '(int, string)'`). Values whose type is
//! not certain (`x-kubernetes-int-or-string`, what an unknown function returns, a list or map
//! compared whole) are let through: kube-apiserver may accept what is reported nowhere here,
//! but nothing it accepts is refused.

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

/// Whether `name` is declared outside the rule (its variables, types and namespaces).
pub(super) fn declared(name: &str) -> bool {
    DECLARED.contains(&name) || NAMESPACES.contains(&name)
}

impl Ty {
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
            Ty::Duration => "google.protobuf.Duration",
            Ty::Timestamp => "google.protobuf.Timestamp",
            Ty::Type => "type",
            Ty::List(_) => "list",
            Ty::Map(_) => "map",
            Ty::Object => "object",
            Ty::Lib | Ty::Dyn => return None,
        })
    }

    /// The name of a scalar type whose overloads are checked here.
    fn scalar_name(&self) -> Option<&'static str> {
        match self {
            Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::Str | Ty::Bytes => self.name(),
            _ => None,
        }
    }
}

fn numeric(t: &str) -> bool {
    matches!(t, "int" | "uint" | "double")
}

/// cel-go's words when `name` has no overload for these types, if they are all certain.
pub(super) fn overload_error(name: &str, target: Option<&Ty>, args: &[&Ty]) -> Option<String> {
    let names: Vec<&str> = args
        .iter()
        .map(|t| t.scalar_name())
        .collect::<Option<_>>()?;
    let ok = match (name, names.as_slice()) {
        ("_==_" | "_!=_", [a, b]) => a == b,
        ("_<_" | "_<=_" | "_>_" | "_>=_", [a, b]) => a == b || (numeric(a) && numeric(b)),
        ("_+_", [a, b]) => a == b && *a != "bool",
        ("_-_" | "_*_" | "_/_", [a, b]) => a == b && numeric(a),
        ("_%_", [a, b]) => a == b && matches!(*a, "int" | "uint"),
        ("_&&_" | "_||_", [a, b]) => *a == "bool" && *b == "bool",
        ("!_", [a]) => *a == "bool",
        ("-_", [a]) => matches!(*a, "int" | "double"),
        ("_?_:_", [c, t, f]) => *c == "bool" && t == f,
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
    let list = names.join(", ");
    let applied = match target.and_then(Ty::scalar_name) {
        Some(t) => format!("{t}.({list})"),
        None => format!("({list})"),
    };
    Some(format!(
        "found no matching overload for '{name}' applied to '{applied}'"
    ))
}
