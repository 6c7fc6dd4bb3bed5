//! Kubernetes' format library for CEL (`k8s.io/apiserver/pkg/cel/library/format.go`, which
//! Kubernetes' environment has since 1.31): `format.named(name)`, an optional format by its
//! name; `format.dns1123Label()`, `format.dns1123Subdomain()`, `format.dns1035Label()`,
//! `format.qualifiedName()`, `format.dns1123LabelPrefix()`, `format.dns1123SubdomainPrefix()`,
//! `format.dns1035LabelPrefix()`, `format.labelValue()`, `format.uri()`, `format.uuid()`,
//! `format.byte()`, `format.date()`, `format.datetime()`; and on a format, `validate(s)`:
//! `optional.none()` when `s` is of the format, else the list of what is wrong with it, in the
//! words of the Go validator the library calls.
//!
//! The names are apimachinery's validators (the `...Prefix` ones for a name a suffix will be
//! appended to, `generateName`'s: a trailing dash is allowed), Go's `url.ParseRequestURI` for
//! `uri`, and strfmt's checks, as a CRD's `format:` uses them, for the others. A format is
//! opaque (`kubernetes.NamedFormat`) and equal to another of the same name.

use cel::common::types::{CelList, CelOptional, CelString, STRING_TYPE, Type};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::library::take;
use crate::names::{
    dns1035_label_errors, dns1123_label_errors, dns1123_subdomain_errors, label_value_errors,
    qualified_name_errors,
};

static FORMAT: Type = Type::new_unspecified_type("kubernetes.NamedFormat");

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Answer<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// What is wrong with a string of a format (nothing when it is of it).
type Check = fn(&str) -> Vec<String>;

/// Each format: its name in CEL and its check.
const FORMATS: [(&str, Check); 13] = [
    ("dns1123Label", dns1123_label_errors),
    ("dns1123Subdomain", dns1123_subdomain_errors),
    ("dns1035Label", dns1035_label_errors),
    ("qualifiedName", qualified_name_errors),
    ("dns1123LabelPrefix", |s| {
        dns1123_label_errors(&mask_trailing_dash(s))
    }),
    ("dns1123SubdomainPrefix", |s| {
        dns1123_subdomain_errors(&mask_trailing_dash(s))
    }),
    ("dns1035LabelPrefix", |s| {
        dns1035_label_errors(&mask_trailing_dash(s))
    }),
    ("labelValue", label_value_errors),
    ("uri", |s| {
        super::urls::request_uri_error(s).into_iter().collect()
    }),
    ("uuid", |s| {
        strfmt(s, "uuid", "does not match the UUID format")
    }),
    ("byte", |s| {
        if is_base64(s) {
            Vec::new()
        } else {
            vec!["invalid base64".to_string()]
        }
    }),
    ("date", |s| strfmt(s, "date", "invalid date")),
    ("datetime", |s| strfmt(s, "datetime", "invalid datetime")),
];

/// A format: its place in [`FORMATS`] (one per name, so equal formats have equal names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Format(usize);

opaque!(Format, FORMAT);

/// strfmt's check of `format`, with the library's words when `s` fails it.
fn strfmt(s: &str, format: &str, why: &str) -> Vec<String> {
    if super::super::formats::format_ok(format, s) {
        Vec::new()
    } else {
        vec![why.to_string()]
    }
}

/// apimachinery's `maskTrailingDash`: a name longer than one byte that ends in a dash has its
/// last two bytes replaced by `a` (the dash and the byte before it: Go slices `name[:len-2]`).
/// A character cut in two leaves bytes no format allows: each becomes a `!`, which none
/// allows either, so the length the checks see is Go's.
fn mask_trailing_dash(name: &str) -> String {
    if name.len() <= 1 || !name.ends_with('-') {
        return name.to_string();
    }
    let kept = &name.as_bytes()[..name.len() - 2];
    let valid = match std::str::from_utf8(kept) {
        Ok(s) => s,
        Err(e) => &name[..e.valid_up_to()],
    };
    let cut = kept.len() - valid.len();
    format!("{valid}{}a", "!".repeat(cut))
}

/// govalidator's `IsBase64` (strfmt's `byte`): groups of four of `[A-Za-z0-9+/]`, the last
/// possibly ending in `=` or `==`; at least one group.
fn is_base64(s: &str) -> bool {
    let b = s.as_bytes();
    let alphabet = |c: &u8| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/';
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let (body, last) = b.split_at(b.len() - 4);
    let pad = last.iter().rev().take_while(|c| **c == b'=').count();
    body.iter().all(alphabet) && pad <= 2 && last[..4 - pad].iter().all(alphabet)
}

fn no_overload(v: &dyn Val) -> ExecutionError {
    ExecutionError::function_error("", format!("no such overload: {}", v.get_type().name()))
}

/// `format.<name>()`: the `I`th format.
fn constant<'b, 'v, const I: usize>(_: Args<'b, 'v>) -> Answer<'b, 'v> {
    Ok(CowVal::owned(Format(I)))
}

/// `format.named(name)`: the format of that name, `optional.none()` when there is none.
fn named<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let [name] = take(args)?;
    let name = <&str>::try_from(name.as_ref()).map_err(|_| no_overload(name.as_ref()))?;
    let found = FORMATS.iter().position(|(n, _)| *n == name);
    Ok(CowVal::owned(match found {
        Some(i) => CelOptional::of(Box::new(Format(i))),
        None => CelOptional::none(),
    }))
}

/// `<format>.validate(s)`: `optional.none()` when `s` is of the format, else what is wrong.
fn validate<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let [format, s] = take(args)?;
    let Some(Format(i)) = format.as_ref().downcast_ref::<Format>() else {
        return Err(no_overload(format.as_ref()));
    };
    let s = <&str>::try_from(s.as_ref()).map_err(|_| no_overload(s.as_ref()))?;
    let errors = FORMATS.get(*i).map_or_else(Vec::new, |(_, check)| check(s));
    if errors.is_empty() {
        return Ok(CowVal::owned(CelOptional::none()));
    }
    let list: Vec<Box<dyn Val + 'v>> = errors
        .into_iter()
        .map(|e| Box::new(CelString::from(e)) as Box<dyn Val + 'v>)
        .collect();
    Ok(CowVal::owned(CelOptional::of(Box::new(CelList::from(
        list,
    )))))
}

/// `format.<name>()` of each format, in [`FORMATS`]' order.
const CONSTANTS: [cel::common::functions::Function; 13] = [
    constant::<0>,
    constant::<1>,
    constant::<2>,
    constant::<3>,
    constant::<4>,
    constant::<5>,
    constant::<6>,
    constant::<7>,
    constant::<8>,
    constant::<9>,
    constant::<10>,
    constant::<11>,
    constant::<12>,
];

/// Registers the library on `env`.
pub(super) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(FORMAT.to_owned())?;
    for ((name, _), f) in FORMATS.iter().zip(CONSTANTS) {
        let name = format!("format.{name}");
        env.add_overload(&name, &name, vec![], f)?;
    }
    env.add_overload("format.named", "format-named", vec![STRING_TYPE], named)?;
    env.add_member_overload(
        "validate",
        "format-validate",
        FORMAT.to_owned(),
        vec![STRING_TYPE],
        validate,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{is_base64, mask_trailing_dash};

    #[test]
    fn trailing_dashes_are_masked_as_apimachinery_masks_them() {
        assert_eq!(mask_trailing_dash("ab-"), "aa");
        assert_eq!(mask_trailing_dash("a-"), "a");
        assert_eq!(mask_trailing_dash("-"), "-");
        assert_eq!(mask_trailing_dash("ab"), "ab");
        assert_eq!(
            mask_trailing_dash("mysubdomain.prefix.-"),
            "mysubdomain.prefixa"
        );
        // `é` is two bytes: its first is left, as a byte no format allows
        assert_eq!(mask_trailing_dash("xé-"), "x!a");
    }

    #[test]
    fn base64_is_govalidators() {
        for ok in ["aGVsbG8=", "aGVsbA==", "aGVs", "a+/b"] {
            assert!(is_base64(ok), "{ok}");
        }
        for bad in [
            "",
            "aGVsbG8",
            "aGVsbG8==",
            "a===",
            "====",
            "aG=s",
            "aGV-",
            "aGVsbG8=\n",
        ] {
            assert!(!is_base64(bad), "{bad}");
        }
    }
}
