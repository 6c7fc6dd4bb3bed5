//! Kubernetes' semver library for CEL (`k8s.io/apiserver/pkg/cel/library/semverlib.go`,
//! version 1, which Kubernetes 1.33+ has), as CRD rules call it: `isSemver(s)`,
//! `isSemver(s, normalize)`, `semver(s)`, `semver(s, normalize)`, and on a version `major()`,
//! `minor()`, `patch()`, `compareTo(v)`, `isGreaterThan(v)`, `isLessThan(v)`.
//!
//! Versions are parsed as `github.com/blang/semver/v4`'s `Parse` parses them (Semantic
//! Versioning 2.0.0: no leading zeroes, prerelease and build identifiers of `[0-9A-Za-z-]`),
//! its errors in its words; `normalize` first drops a leading `v`, leading zeroes and fills a
//! missing minor or patch with 0, as the library does. Build metadata is kept but not compared.

use std::cmp::Ordering;

use cel::common::types::{CelBool, CelInt, CelString, Type};

use cel::{DeclarationError, Env, ExecutionError};

use crate::go_text::go_quote;

static SEMVER: Type = Type::new_unspecified_type("kubernetes.Semver");

/// A prerelease identifier: a number, or alphanumerics.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pre {
    Num(u64),
    Text(String),
}

/// A version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Pre>,
    build: Vec<String>,
}

// equal by precedence, build metadata aside, as the library's `Equal` compares
opaque!(Semver, SEMVER, |a: &Semver, b: &Semver| a.compare(b)
    == Ordering::Equal);

fn numbers(s: &str) -> bool {
    s.bytes().all(|c| c.is_ascii_digit())
}

fn alphanumerics(s: &str) -> bool {
    s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
}

/// Go's `strconv.ParseUint(s, 10, 64)` and its errors.
fn parse_uint(s: &str) -> Result<u64, String> {
    if s.is_empty() || !numbers(s) {
        return Err(format!(
            "strconv.ParseUint: parsing {}: invalid syntax",
            go_quote(s)
        ));
    }
    s.parse().map_err(|_| {
        format!(
            "strconv.ParseUint: parsing {}: value out of range",
            go_quote(s)
        )
    })
}

/// A number part: digits only, no leading zero, in range.
fn number(s: &str, what: &str) -> Result<u64, String> {
    if !numbers(s) {
        return Err(format!(
            "Invalid character(s) found in {what} number {}",
            go_quote(s)
        ));
    }
    if s.len() > 1 && s.starts_with('0') {
        let upper = format!("{}{}", what[..1].to_uppercase(), &what[1..]);
        return Err(format!(
            "{upper} number must not contain leading zeroes {}",
            go_quote(s)
        ));
    }
    parse_uint(s)
}

/// blang/semver's `Parse`.
fn parse(s: &str) -> Result<Semver, String> {
    if s.is_empty() {
        return Err("Version string empty".into());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    if parts.len() != 3 {
        return Err("No Major.Minor.Patch elements found".into());
    }
    let major = number(parts[0], "major")?;
    let minor = number(parts[1], "minor")?;
    let mut patch = parts[2];
    let mut build = Vec::new();
    if let Some(i) = patch.find('+') {
        build = patch[i + 1..].split('.').map(String::from).collect();
        patch = &patch[..i];
    }
    let mut pre_text = None;
    if let Some(i) = patch.find('-') {
        pre_text = Some(&patch[i + 1..]);
        patch = &patch[..i];
    }
    let patch = number(patch, "patch")?;
    let mut pre = Vec::new();
    for p in pre_text.map(|t| t.split('.')).into_iter().flatten() {
        if p.is_empty() {
            return Err("Prerelease is empty".into());
        }
        if numbers(p) {
            if p.len() > 1 && p.starts_with('0') {
                return Err(format!(
                    "Numeric PreRelease version must not contain leading zeroes {}",
                    go_quote(p)
                ));
            }
            pre.push(Pre::Num(parse_uint(p)?));
        } else if alphanumerics(p) {
            pre.push(Pre::Text(p.to_string()));
        } else {
            return Err(format!(
                "Invalid character(s) found in prerelease {}",
                go_quote(p)
            ));
        }
    }
    for b in &build {
        if b.is_empty() {
            return Err("Build meta data is empty".into());
        }
        if !alphanumerics(b) {
            return Err(format!(
                "Invalid character(s) found in build meta data {}",
                go_quote(b)
            ));
        }
    }
    Ok(Semver {
        major,
        minor,
        patch,
        pre,
        build,
    })
}

/// The library's `normalizeAndParse`.
fn normalize_and_parse(s: &str) -> Result<Semver, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s.splitn(3, '.').map(String::from).collect();
    for p in &mut parts {
        if p.len() > 1 {
            let trimmed = p.trim_start_matches('0');
            *p = if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                format!("0{trimmed}")
            } else {
                trimmed.to_string()
            };
        }
    }
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".into());
        }
        while parts.len() < 3 {
            parts.push("0".into());
        }
    }
    parse(&parts.join("."))
}

impl Semver {
    /// blang/semver's `Compare`: numbers, then prerelease precedence (none is greater).
    fn compare(&self, o: &Semver) -> Ordering {
        let by_numbers = (self.major, self.minor, self.patch).cmp(&(o.major, o.minor, o.patch));
        if by_numbers != Ordering::Equal {
            return by_numbers;
        }
        match (self.pre.is_empty(), o.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&o.pre) {
            let c = match (a, b) {
                (Pre::Num(_), Pre::Text(_)) => Ordering::Less,
                (Pre::Text(_), Pre::Num(_)) => Ordering::Greater,
                (Pre::Num(x), Pre::Num(y)) => x.cmp(y),
                (Pre::Text(x), Pre::Text(y)) => x.cmp(y),
            };
            if c != Ordering::Equal {
                return c;
            }
        }
        self.pre.len().cmp(&o.pre.len())
    }
}

fn of(s: &str, normalize: bool) -> Result<Semver, String> {
    if normalize {
        normalize_and_parse(s)
    } else {
        parse(s)
    }
}

fn semver(s: &CelString<'_>) -> Result<Semver, ExecutionError> {
    of(s.inner(), false).map_err(|e| ExecutionError::function_error("semver", e))
}

fn semver_normalized(s: &CelString<'_>, normalize: &CelBool) -> Result<Semver, ExecutionError> {
    of(s.inner(), *normalize.inner()).map_err(|e| ExecutionError::function_error("semver", e))
}

fn is_semver(s: &CelString<'_>) -> CelBool {
    CelBool::from(of(s.inner(), false).is_ok())
}

fn is_semver_normalized(s: &CelString<'_>, normalize: &CelBool) -> CelBool {
    CelBool::from(of(s.inner(), *normalize.inner()).is_ok())
}

fn int(n: u64) -> CelInt {
    CelInt::from(i64::try_from(n).unwrap_or(i64::MAX))
}

fn major(v: &Semver) -> CelInt {
    int(v.major)
}

fn minor(v: &Semver) -> CelInt {
    int(v.minor)
}

fn patch(v: &Semver) -> CelInt {
    int(v.patch)
}

fn compare_to(v: &Semver, o: &Semver) -> CelInt {
    CelInt::from(v.compare(o) as i64)
}

fn is_greater_than(v: &Semver, o: &Semver) -> CelBool {
    CelBool::from(v.compare(o) == Ordering::Greater)
}

fn is_less_than(v: &Semver, o: &Semver) -> CelBool {
    CelBool::from(v.compare(o) == Ordering::Less)
}

/// Registers the library on `env`.
pub(super) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(SEMVER.to_owned())?;
    cel::add_overload!(env, fn semver: (CelString) -> Result<Semver>)?;
    cel::add_overload!(env, fn semver_normalized: (CelString, CelBool) -> Result<Semver>, name = "semver")?;
    cel::add_overload!(env, fn is_semver: (CelString) -> CelBool, name = "isSemver")?;
    cel::add_overload!(env, fn is_semver_normalized: (CelString, CelBool) -> CelBool, name = "isSemver")?;
    cel::add_member_overload!(env, fn major: (Semver) -> CelInt)?;
    cel::add_member_overload!(env, fn minor: (Semver) -> CelInt)?;
    cel::add_member_overload!(env, fn patch: (Semver) -> CelInt)?;
    cel::add_member_overload!(env, fn compare_to: (Semver, Semver) -> CelInt, name = "compareTo")?;
    cel::add_member_overload!(env, fn is_greater_than: (Semver, Semver) -> CelBool, name = "isGreaterThan")?;
    cel::add_member_overload!(env, fn is_less_than: (Semver, Semver) -> CelBool, name = "isLessThan")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use super::{normalize_and_parse, parse};

    #[test]
    fn versions_are_parsed_and_ordered_as_blang_semver_does() {
        let v = parse("1.2.3-alpha.1+build.5").unwrap();
        assert_eq!((v.major, v.minor, v.patch), (1, 2, 3));
        let order = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
        ];
        for w in order.windows(2) {
            assert_eq!(
                parse(w[0]).unwrap().compare(&parse(w[1]).unwrap()),
                Ordering::Less,
                "{w:?}"
            );
        }
        assert_eq!(
            parse("1.2").unwrap_err(),
            "No Major.Minor.Patch elements found"
        );
        assert_eq!(parse("").unwrap_err(), "Version string empty");
        assert_eq!(
            parse("01.2.3").unwrap_err(),
            "Major number must not contain leading zeroes \"01\""
        );
        assert_eq!(
            parse("1.x.3").unwrap_err(),
            "Invalid character(s) found in minor number \"x\""
        );
        assert_eq!(
            parse("1..3").unwrap_err(),
            "strconv.ParseUint: parsing \"\": invalid syntax"
        );
        assert_eq!(parse("1.2.3-").unwrap_err(), "Prerelease is empty");
        assert_eq!(
            parse("1.2.3-01").unwrap_err(),
            "Numeric PreRelease version must not contain leading zeroes \"01\""
        );
        assert_eq!(parse("1.2.3+").unwrap_err(), "Build meta data is empty");
        assert_eq!(
            normalize_and_parse("v1.02").unwrap(),
            parse("1.2.0").unwrap()
        );
        assert_eq!(
            normalize_and_parse("v1-rc").unwrap_err(),
            "short version cannot contain PreRelease/Build meta data"
        );
    }
}
