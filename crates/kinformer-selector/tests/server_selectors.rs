//! Label selectors: `=`, `==`, `!=`, `in`, `notin`, exists (`key`), does-not-exist (`!key`),
//! and `>` / `<` on integer values, with the semantics of `k8s.io/apimachinery/pkg/labels`.

use std::collections::BTreeMap;

use super::SelectorError;

/// A label requirement's operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operator {
    /// `key=value` or `key==value`.
    Equals,
    /// `key!=value`: also matches objects without the key.
    NotEquals,
    /// `key in (a,b)`.
    In,
    /// `key notin (a,b)`: also matches objects without the key.
    NotIn,
    /// `key`.
    Exists,
    /// `!key`.
    DoesNotExist,
    /// `key>n` (integer comparison).
    GreaterThan,
    /// `key<n` (integer comparison).
    LessThan,
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelRequirement {
    /// Label key.
    pub key: String,
    /// Operator.
    pub op: Operator,
    /// Values (one for `=`/`!=`/`>`/`<`, any number for `in`/`notin`, none for exists).
    pub values: Vec<String>,
}

impl LabelRequirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let v = labels.get(&self.key);
        match self.op {
            Operator::Equals | Operator::In => v.is_some_and(|v| self.values.contains(v)),
            Operator::NotEquals | Operator::NotIn => v.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => v.is_some(),
            Operator::DoesNotExist => v.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(have) = v.and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let Some(want) = self.values.first().and_then(|w| w.parse::<i64>().ok()) else {
                    return false;
                };
                if self.op == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

/// A parsed label selector: all requirements must hold (an empty selector matches everything).
///
/// ```
/// use std::collections::BTreeMap;
/// use kinformer_apiserver::selector::LabelSelector;
/// let s = LabelSelector::parse("app in (web,api),tier!=db,!canary").unwrap();
/// let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
/// assert!(s.matches(&labels));
/// assert!(LabelSelector::parse("app in (web").is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// The requirements, all of which must match.
    pub requirements: Vec<LabelRequirement>,
}

struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'/')
}

impl<'a> Lexer<'a> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }
    fn ident(&mut self) -> String {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.s.len() && is_ident_char(self.s[self.pos]) {
            self.pos += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.pos]).into_owned()
    }
    fn eat(&mut self, tok: &str) -> bool {
        self.skip_ws();
        if self.s[self.pos..].starts_with(tok.as_bytes()) {
            self.pos += tok.len();
            true
        } else {
            false
        }
    }
}

fn validate_key(key: &str) -> Result<(), SelectorError> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && (p.is_empty()
            || p.len() > 253
            || !p
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.'))
    {
        return Err(SelectorError::Label(format!(
            "invalid label key prefix {p:?}"
        )));
    }
    if name.is_empty() || name.len() > 63 {
        return Err(SelectorError::Label(format!(
            "invalid label key {key:?}: name part must be non-empty and at most 63 characters"
        )));
    }
    let b = name.as_bytes();
    if !b[0].is_ascii_alphanumeric()
        || !b[b.len() - 1].is_ascii_alphanumeric()
        || !b
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        return Err(SelectorError::Label(format!(
            "invalid label key {key:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        )));
    }
    Ok(())
}

fn validate_value(v: &str) -> Result<(), SelectorError> {
    if v.is_empty() {
        return Ok(());
    }
    let b = v.as_bytes();
    if v.len() > 63
        || !b[0].is_ascii_alphanumeric()
        || !b[b.len() - 1].is_ascii_alphanumeric()
        || !b
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        return Err(SelectorError::Label(format!(
            "invalid label value: {v:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        )));
    }
    Ok(())
}

impl LabelSelector {
    /// Parses a selector string; the empty string is the selector matching everything.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let mut lx = Lexer {
            s: input.as_bytes(),
            pos: 0,
        };
        let mut requirements = Vec::new();
        if lx.peek().is_none() {
            return Ok(LabelSelector { requirements });
        }
        loop {
            requirements.push(Self::requirement(&mut lx)?);
            match lx.peek() {
                None => break,
                Some(b',') => {
                    lx.pos += 1;
                }
                Some(c) => {
                    return Err(SelectorError::Label(format!(
                        "found '{}', expected: ',' or 'end of string'",
                        c as char
                    )));
                }
            }
        }
        Ok(LabelSelector { requirements })
    }

    fn requirement(lx: &mut Lexer<'_>) -> Result<LabelRequirement, SelectorError> {
        if lx.eat("!") {
            let key = lx.ident();
            if key.is_empty() {
                return Err(SelectorError::Label(
                    "found '', expected: identifier after '!'".into(),
                ));
            }
            validate_key(&key)?;
            return Ok(LabelRequirement {
                key,
                op: Operator::DoesNotExist,
                values: vec![],
            });
        }
        let key = lx.ident();
        if key.is_empty() {
            return Err(SelectorError::Label(
                "found '', expected: identifier".into(),
            ));
        }
        validate_key(&key)?;
        let op = match lx.peek() {
            None | Some(b',') => {
                return Ok(LabelRequirement {
                    key,
                    op: Operator::Exists,
                    values: vec![],
                });
            }
            Some(_) => {
                if lx.eat("==") || lx.eat("=") {
                    Operator::Equals
                } else if lx.eat("!=") {
                    Operator::NotEquals
                } else if lx.eat(">") {
                    Operator::GreaterThan
                } else if lx.eat("<") {
                    Operator::LessThan
                } else {
                    let word = lx.ident();
                    match word.as_str() {
                        "in" => Operator::In,
                        "notin" => Operator::NotIn,
                        other => {
                            return Err(SelectorError::Label(format!(
                                "found '{other}', expected: in, notin, =, ==, !=, gt, lt"
                            )));
                        }
                    }
                }
            }
        };
        let values = match op {
            Operator::In | Operator::NotIn => {
                if !lx.eat("(") {
                    return Err(SelectorError::Label("found '', expected: '('".into()));
                }
                // As apimachinery's parseValues: right after '(' only an identifier, ',' or
                // ')' may follow.
                if lx.peek().is_none() {
                    return Err(SelectorError::Label(
                        "found '', expected: ',', ')' or identifier".into(),
                    ));
                }
                let mut vals = Vec::new();
                loop {
                    let v = lx.ident();
                    validate_value(&v)?;
                    vals.push(v);
                    if lx.eat(",") {
                        continue;
                    }
                    if lx.eat(")") {
                        break;
                    }
                    return Err(SelectorError::Label(
                        "found '', expected: ',' or ')'".into(),
                    ));
                }
                vals
            }
            Operator::GreaterThan | Operator::LessThan => {
                let v = lx.ident();
                if v.parse::<i64>().is_err() {
                    return Err(SelectorError::Label(format!(
                        "for 'Gt', 'Lt' operators, the value must be an integer: {v:?}"
                    )));
                }
                vec![v]
            }
            _ => {
                let v = lx.ident();
                validate_value(&v)?;
                vec![v]
            }
        };
        Ok(LabelRequirement { key, op, values })
    }

    /// Whether the labels satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the selector has no requirements.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn equality_operators() {
        let l = labels(&[("app", "web"), ("tier", "front")]);
        assert!(LabelSelector::parse("app=web").unwrap().matches(&l));
        assert!(LabelSelector::parse("app==web").unwrap().matches(&l));
        assert!(!LabelSelector::parse("app=api").unwrap().matches(&l));
        assert!(LabelSelector::parse("app!=api").unwrap().matches(&l));
        assert!(!LabelSelector::parse("app!=web").unwrap().matches(&l));
        // != matches objects without the key, as in Kubernetes.
        assert!(LabelSelector::parse("missing!=x").unwrap().matches(&l));
        assert!(
            LabelSelector::parse("app=web, tier = front")
                .unwrap()
                .matches(&l)
        );
        assert!(
            !LabelSelector::parse("app=web,tier=back")
                .unwrap()
                .matches(&l)
        );
    }

    #[test]
    fn set_operators() {
        let l = labels(&[("env", "prod")]);
        assert!(
            LabelSelector::parse("env in (prod, staging)")
                .unwrap()
                .matches(&l)
        );
        assert!(!LabelSelector::parse("env in (dev)").unwrap().matches(&l));
        assert!(LabelSelector::parse("env notin (dev)").unwrap().matches(&l));
        assert!(
            !LabelSelector::parse("env notin (prod)")
                .unwrap()
                .matches(&l)
        );
        assert!(
            LabelSelector::parse("other notin (prod)")
                .unwrap()
                .matches(&l)
        );
        assert!(!LabelSelector::parse("other in (prod)").unwrap().matches(&l));
    }

    #[test]
    fn existence_operators() {
        let l = labels(&[("env", "prod")]);
        assert!(LabelSelector::parse("env").unwrap().matches(&l));
        assert!(!LabelSelector::parse("!env").unwrap().matches(&l));
        assert!(LabelSelector::parse("!other").unwrap().matches(&l));
        assert!(!LabelSelector::parse("other").unwrap().matches(&l));
    }

    #[test]
    fn numeric_operators() {
        let l = labels(&[("n", "5")]);
        assert!(LabelSelector::parse("n>3").unwrap().matches(&l));
        assert!(!LabelSelector::parse("n<3").unwrap().matches(&l));
        assert!(LabelSelector::parse("n>x").is_err());
    }

    #[test]
    fn empty_matches_everything() {
        let s = LabelSelector::parse("  ").unwrap();
        assert!(s.is_empty());
        assert!(s.matches(&labels(&[])));
    }

    #[test]
    fn open_parenthesis_at_the_end_names_every_expected_token() {
        // kube-apiserver v1.35 (e2e/diff "bad-request / list-bad-label-selector").
        assert_eq!(
            LabelSelector::parse("a in (").unwrap_err().to_string(),
            "unable to parse requirement: found '', expected: ',', ')' or identifier"
        );
    }

    #[test]
    fn malformed_selectors_are_errors() {
        for bad in [
            "app in (web",
            "app in web",
            "=web",
            "app=we b",
            "app=%%",
            "a,,b",
            "!",
            "app ~ x",
            "-bad=x",
            "app=(",
            "env in (a,",
        ] {
            assert!(
                LabelSelector::parse(bad).is_err(),
                "{bad:?} should not parse"
            );
        }
    }

    #[test]
    fn prefixed_keys() {
        let l = labels(&[("app.kubernetes.io/name", "web")]);
        assert!(
            LabelSelector::parse("app.kubernetes.io/name=web")
                .unwrap()
                .matches(&l)
        );
    }
}
