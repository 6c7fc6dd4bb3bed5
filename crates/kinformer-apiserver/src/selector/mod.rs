//! Label and field selectors, parsed from untrusted query strings.
//!
//! Label selectors use the shared grammar of the `kinformer-selector` crate (the one kinformer's
//! listers use); field selectors are parsed here. Parsing never panics: a malformed selector is
//! an error, which the HTTP layer turns into a 400 BadRequest `Status`, as the real server does.

mod cel;
mod field;
mod shard;

pub(crate) use field::FieldSelector;
pub(crate) use kinformer_selector::LabelSelector;
pub(crate) use shard::ShardSelector;

/// A field selector that could not be parsed or cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SelectorError {
    /// The field selector is malformed.
    #[error("invalid field selector: {0}")]
    Field(String),
    /// The field selector names a field this resource cannot be selected by.
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
}
