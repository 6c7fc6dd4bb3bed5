//! Field selectors: `field=value`, `field==value`, `field!=value`, joined by commas, with the
//! semantics of `k8s.io/apimachinery/pkg/fields`. Which fields a resource supports is decided
//! by the caller (`metadata.name` and `metadata.namespace` everywhere, plus a few per resource).

use super::SelectorError;

/// One field requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldRequirement {
    /// Field path, e.g. `metadata.name`.
    pub field: String,
    /// `true` for `!=`.
    pub negate: bool,
    /// Value to compare with.
    pub value: String,
}

/// A parsed field selector (an empty one matches everything).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector {
    /// The requirements, all of which must hold.
    pub requirements: Vec<FieldRequirement>,
}

fn unescape(v: &str) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(n @ ('\\' | ',' | '=' | '!')) => out.push(n),
                Some(n) => {
                    return Err(SelectorError::Field(format!(
                        "invalid escape sequence: \\{n}"
                    )));
                }
                None => return Err(SelectorError::Field("trailing backslash".into())),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

fn split_unescaped(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(&s[start..i]);
            start = i + c.len_utf8();
        }
    }
    parts.push(&s[start..]);
    parts
}

impl FieldSelector {
    /// Parses a selector; the empty string matches everything.
    pub(crate) fn parse(input: &str) -> Result<Self, SelectorError> {
        let mut requirements = Vec::new();
        if input.trim().is_empty() {
            return Ok(FieldSelector { requirements });
        }
        for part in split_unescaped(input, ',') {
            let (field, negate, value) = if let Some(i) = part.find("!=") {
                (&part[..i], true, &part[i + 2..])
            } else if let Some(i) = part.find("==") {
                (&part[..i], false, &part[i + 2..])
            } else if let Some(i) = part.find('=') {
                (&part[..i], false, &part[i + 1..])
            } else {
                return Err(SelectorError::Field(format!(
                    "invalid selector: '{part}'; can't understand '{part}'"
                )));
            };
            let field = field.trim();
            if field.is_empty() {
                return Err(SelectorError::Field(format!("invalid selector: '{input}'")));
            }
            requirements.push(FieldRequirement {
                field: field.to_string(),
                negate,
                value: unescape(value)?,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// Checks every field is in `supported`; the first unsupported one is an error.
    pub(crate) fn check_supported(&self, supported: &[&str]) -> Result<(), SelectorError> {
        for r in &self.requirements {
            if !supported.contains(&r.field.as_str()) {
                return Err(SelectorError::UnsupportedField(r.field.clone()));
            }
        }
        Ok(())
    }

    /// Whether the object's fields (looked up by `get`, `None` = absent = empty) satisfy every
    /// requirement.
    pub(crate) fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| {
            let have = get(&r.field).unwrap_or("");
            (have == r.value) != r.negate
        })
    }

    /// Whether the selector has no requirements.
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_on_several_fields_all_hold() {
        let s =
            FieldSelector::parse("metadata.name=web-1,metadata.namespace!=kube-system").unwrap();
        assert!(s.matches(|f| match f {
            "metadata.name" => Some("web-1"),
            _ => Some("default"),
        }));
    }

    #[test]
    fn equals_and_not_equals() {
        let s = FieldSelector::parse("metadata.name=a").unwrap();
        assert!(s.matches(|_| Some("a")));
        assert!(!s.matches(|_| Some("b")));
        let s = FieldSelector::parse("metadata.name==a").unwrap();
        assert!(s.matches(|_| Some("a")));
        let s = FieldSelector::parse("metadata.name!=a").unwrap();
        assert!(!s.matches(|_| Some("a")));
        assert!(s.matches(|_| Some("b")));
    }

    #[test]
    fn escapes_and_errors() {
        let s = FieldSelector::parse(r"metadata.name=a\,b").unwrap();
        assert_eq!(s.requirements[0].value, "a,b");
        assert!(FieldSelector::parse("metadata.name").is_err());
        assert!(FieldSelector::parse("=x").is_err());
        assert!(FieldSelector::parse(r"metadata.name=a\q").is_err());
        let s = FieldSelector::parse("spec.foo=x").unwrap();
        assert_eq!(
            s.check_supported(&["metadata.name"]),
            Err(SelectorError::UnsupportedField("spec.foo".into()))
        );
    }
}
