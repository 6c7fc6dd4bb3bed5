//! Stores: the reflector's sink contract, the known-objects view, the thread-safe indexed cache
//! ([`Indexer`]) with its index functions, label selectors and listers.
//!
//! This is client-go's `store.go`, `index.go`, `thread_safe_store.go` and `listers.go`. The
//! [`Indexer`] is the informer's cache: the process loop writes it before any handler hears of a
//! change, and everything else (listers, `by_index`, your code) only reads it.

mod cache_state;
mod error;
mod filed;
mod index_func;
mod indexer;
mod key_lister_getter;
mod lean;
mod lean_indexer;
mod lister;
mod observed;
mod reflector_store;
mod same_content;
mod snapshot;
mod staged;
mod transaction;
mod waiters;

pub use error::StoreError;
pub use index_func::{
    IndexFunc, IndexFuncError, Indexers, NAMESPACE_INDEX, namespace_index_func, namespace_indexers,
};
pub use indexer::Indexer;
pub use key_lister_getter::KeyListerGetter;
/// Label selectors (the `kinformer-selector` crate, shared with `kinformer-apiserver`).
pub use kinformer_selector as label_selector;
pub use label_selector::{LabelSelector, LabelSelectorError, Operator, Requirement};
pub(crate) use lean::Stored;
pub use lean::{CacheMode, DEFAULT_HOT_OBJECTS};
pub use lister::{Lister, NamespaceLister};
pub use observed::CacheWaitError;
pub use reflector_store::{ReflectorStore, ReplaceOnce, ReplaceStore};
pub(crate) use staged::{StagedOutcome, StagedReplace};
pub use transaction::{ReplaceOutcome, Transaction, TransactionError, TransactionOutcome};
