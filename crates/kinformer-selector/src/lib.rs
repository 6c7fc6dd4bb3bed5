//! Label selectors: the `app=web,tier in (front,back),!canary` language of `kubectl -l` and
//! apimachinery's `labels.Selector`, parsed into a typed [`LabelSelector`] that listers filter
//! with (`kinformer`, which re-exports this crate as `kinformer::store::label_selector`) and
//! that the embedded API server filters lists and watches with (`kinformer-apiserver`). One
//! grammar for both, so a selector means the same to the cache and to the server.
//!
//! A selector is a list of [`Requirement`]s that must all hold (comma means AND):
//!
//! | written | operator | matches labels where |
//! |---|---|---|
//! | `k=v`, `k==v` | [`Operator::Equals`], [`Operator::DoubleEquals`] | `k` is present with value `v` |
//! | `k!=v` | [`Operator::NotEquals`] | `k` is absent or has another value |
//! | `k in (a,b)` | [`Operator::In`] | `k` is present with one of the values |
//! | `k notin (a,b)` | [`Operator::NotIn`] | `k` is absent or has none of the values |
//! | `k` | [`Operator::Exists`] | `k` is present |
//! | `!k` | [`Operator::DoesNotExist`] | `k` is absent |
//! | `k>1`, `k<1` | [`Operator::GreaterThan`], [`Operator::LessThan`] | `k`'s value is an integer above/below |
//!
//! Keys and values are checked like Kubernetes does (a key is an optional DNS-subdomain prefix
//! and `/` plus a name of at most 63 characters; a value is empty or at most 63 characters of
//! alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric). Requirements are kept sorted
//! by key, so equal selectors print equal.
//!
//! ```
//! use std::collections::BTreeMap;
//! use kinformer_selector::LabelSelector;
//!
//! let selector: LabelSelector = "app=web, tier in (front,back), !canary".parse().unwrap();
//! assert_eq!(selector.to_string(), "app=web,!canary,tier in (back,front)");
//! let labels = BTreeMap::from([("app".to_string(), "web".to_string()), ("tier".to_string(), "front".to_string())]);
//! assert!(selector.matches(&labels));
//! assert!("app in (web".parse::<LabelSelector>().is_err());
//! ```
//!
//! The `k8s` feature adds [`LabelSelector::matches_object`] (any kube `Resource`) and the
//! conversion from a Kubernetes `metav1::LabelSelector`; without it the crate depends on
//! nothing but `thiserror`.

mod parser;
mod validation;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

#[cfg(feature = "k8s")]
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
#[cfg(feature = "k8s")]
use kube_core::Resource;

/// Why a selector or requirement is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelSelectorError {
    /// The text does not follow the selector grammar (apimachinery's wording, e.g.
    /// `found ')', expected: identifier`).
    #[error("unable to parse requirement: {0}")]
    Syntax(String),
    /// A key is not a valid label key.
    #[error("invalid label key {key:?}: {reason}")]
    InvalidKey {
        /// The offending key.
        key: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A value is not a valid label value.
    #[error("invalid value {value:?} for label key {key:?}: {reason}")]
    InvalidValue {
        /// The key the value belongs to.
        key: String,
        /// The offending value.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The number or kind of values does not fit the operator (e.g. `in` with none, `=` with
    /// two, `>` with a non-integer).
    #[error("invalid values for {operator} on key {key:?}: {reason}")]
    InvalidValues {
        /// The requirement's key.
        key: String,
        /// The requirement's operator.
        operator: Operator,
        /// What is wrong with the values.
        reason: &'static str,
    },
    /// An operator of a Kubernetes `LabelSelector` expression that is not one of `In`, `NotIn`,
    /// `Exists`, `DoesNotExist`.
    #[error("unsupported label selector operator {0:?}")]
    UnsupportedOperator(String),
}

fn validate_key(key: &str) -> Result<(), LabelSelectorError> {
    match validation::label_key_problem(key) {
        Some(reason) => Err(LabelSelectorError::InvalidKey {
            key: key.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// How a [`Requirement`] relates a label's value to its values (apimachinery's
/// `selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `k=v`.
    Equals,
    /// `k==v`, the same as `=`.
    DoubleEquals,
    /// `k!=v`.
    NotEquals,
    /// `k in (v1,v2)`.
    In,
    /// `k notin (v1,v2)`.
    NotIn,
    /// `k`.
    Exists,
    /// `!k`.
    DoesNotExist,
    /// `k>n`, integers only.
    GreaterThan,
    /// `k<n`, integers only.
    LessThan,
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Equals => "=",
            Self::DoubleEquals => "==",
            Self::NotEquals => "!=",
            Self::In => "in",
            Self::NotIn => "notin",
            Self::Exists => "exists",
            Self::DoesNotExist => "!",
            Self::GreaterThan => "gt",
            Self::LessThan => "lt",
        })
    }
}

/// One condition on one label key (apimachinery's `labels.Requirement`). Its values are kept
/// sorted and without duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// A validated requirement (apimachinery's `NewRequirement`): `in`/`notin` need at least one
    /// value, `=`/`==`/`!=` exactly one, `exists`/`!` none, `>`/`<` exactly one integer; the key
    /// and every value must be valid.
    ///
    /// ```
    /// use kinformer_selector::{Operator, Requirement};
    /// let r = Requirement::new("tier", Operator::In, ["front", "back"]).unwrap();
    /// assert_eq!(r.to_string(), "tier in (back,front)");
    /// assert!(Requirement::new("tier", Operator::Equals, ["a", "b"]).is_err());
    /// ```
    ///
    /// # Errors
    /// [`LabelSelectorError::InvalidKey`], [`LabelSelectorError::InvalidValues`] or
    /// [`LabelSelectorError::InvalidValue`].
    pub fn new<I, S>(key: &str, operator: Operator, values: I) -> Result<Self, LabelSelectorError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        validate_key(key)?;
        let mut values: Vec<String> = values.into_iter().map(Into::into).collect();
        let invalid = |reason| LabelSelectorError::InvalidValues {
            key: key.to_owned(),
            operator,
            reason,
        };
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err(invalid(
                    "for 'in', 'notin' operators, values set can't be empty",
                ));
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                return Err(invalid(
                    "exact-match compatibility requires one single value",
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                return Err(invalid(
                    "values set must be empty for exists and does not exist",
                ));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    return Err(invalid(
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                if values.iter().any(|v| v.parse::<i64>().is_err()) {
                    return Err(invalid(
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
            _ => {}
        }
        for value in &values {
            if let Some(reason) = validation::label_value_problem(value) {
                return Err(LabelSelectorError::InvalidValue {
                    key: key.to_owned(),
                    value: value.clone(),
                    reason,
                });
            }
        }
        values.sort_unstable();
        values.dedup();
        Ok(Self {
            key: key.to_owned(),
            operator,
            values,
        })
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether `labels` satisfy this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        let listed = |v: &String| self.values.binary_search(v).is_ok();
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => value.is_some_and(listed),
            Operator::NotEquals | Operator::NotIn => !value.is_some_and(listed),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(Ok(actual)), [bound]) =
                    (value.map(|v| v.parse::<i64>()), &self.values[..])
                else {
                    return false;
                };
                let Ok(bound) = bound.parse::<i64>() else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > bound
                } else {
                    actual < bound
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values = self.values.join(",");
        match self.operator {
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::In => write!(f, "{} in ({values})", self.key),
            Operator::NotIn => write!(f, "{} notin ({values})", self.key),
            Operator::Equals => write!(f, "{}={values}", self.key),
            Operator::DoubleEquals => write!(f, "{}=={values}", self.key),
            Operator::NotEquals => write!(f, "{}!={values}", self.key),
            Operator::GreaterThan => write!(f, "{}>{values}", self.key),
            Operator::LessThan => write!(f, "{}<{values}", self.key),
        }
    }
}

/// A set of [`Requirement`]s that must all hold (apimachinery's `labels.Selector`).
///
/// Build one by parsing (`"a=b,c".parse()`), from exact labels ([`from_labels`](Self::from_labels)),
/// from a Kubernetes `LabelSelector` (`TryFrom`), or requirement by requirement
/// ([`with`](Self::with)). [`LabelSelector::everything`] matches every object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct LabelSelector {
    /// Sorted by key (stable, so requirements on one key keep their written order).
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// The selector that matches everything (apimachinery's `Everything`).
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses the selector language (apimachinery's `labels.Parse`). The empty string is
    /// [`everything`](Self::everything).
    ///
    /// # Errors
    /// [`LabelSelectorError`] describing the first problem found.
    pub fn parse(selector: &str) -> Result<Self, LabelSelectorError> {
        let mut requirements = parser::parse(selector)?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements })
    }

    /// Matches objects carrying every one of `labels` (apimachinery's `SelectorFromSet`; as
    /// there, the labels are not validated).
    pub fn from_labels<I, A, B>(labels: I) -> Self
    where
        I: IntoIterator<Item = (A, B)>,
        A: Into<String>,
        B: Into<String>,
    {
        let mut requirements: Vec<Requirement> = labels
            .into_iter()
            .map(|(k, v)| Requirement {
                key: k.into(),
                operator: Operator::Equals,
                values: vec![v.into()],
            })
            .collect();
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self { requirements }
    }

    /// This selector with one more requirement.
    #[must_use]
    pub fn with(mut self, requirement: Requirement) -> Self {
        let at = self
            .requirements
            .partition_point(|r| r.key <= requirement.key);
        self.requirements.insert(at, requirement);
        self
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether this selector has no requirements and so matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the object's labels satisfy every requirement (no labels at all is the empty
    /// set of labels).
    #[cfg(feature = "k8s")]
    pub fn matches_object<K: Resource>(&self, obj: &K) -> bool {
        if self.is_empty() {
            return true;
        }
        match &obj.meta().labels {
            Some(labels) => self.matches(labels),
            None => self.matches(&BTreeMap::new()),
        }
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

impl FromStr for LabelSelector {
    type Err = LabelSelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(feature = "k8s")]
impl TryFrom<&metav1::LabelSelector> for LabelSelector {
    type Error = LabelSelectorError;

    /// apimachinery's `LabelSelectorAsSelector`: `matchLabels` become equalities and
    /// `matchExpressions` become `in`/`notin`/exists/`!` requirements. An empty Kubernetes
    /// selector matches everything.
    fn try_from(selector: &metav1::LabelSelector) -> Result<Self, Self::Error> {
        let mut out = Self::everything();
        for (key, value) in selector.match_labels.iter().flatten() {
            out = out.with(Requirement::new(key, Operator::Equals, [value.as_str()])?);
        }
        for expr in selector.match_expressions.iter().flatten() {
            let operator = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => return Err(LabelSelectorError::UnsupportedOperator(other.to_owned())),
            };
            let values: Vec<String> = expr.values.clone().unwrap_or_default();
            out = out.with(Requirement::new(&expr.key, operator, values)?);
        }
        Ok(out)
    }
}
