//! Label and field selectors, parsed from untrusted query strings.
//!
//! Parsing never panics: a malformed selector is a [`SelectorError`], which the HTTP layer turns
//! into a 400 BadRequest `Status`, as the real server does.

mod field;
mod label;

pub use field::{FieldRequirement, FieldSelector};
pub use label::{LabelRequirement, LabelSelector, Operator};

/// A selector that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The label selector is malformed.
    #[error("unable to parse requirement: {0}")]
    Label(String),
    /// The field selector is malformed.
    #[error("invalid field selector: {0}")]
    Field(String),
    /// The field selector names a field this resource cannot be selected by.
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
}
