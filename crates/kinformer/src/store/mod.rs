//! Stores: the reflector's sink contract, the known-objects view, and the thread-safe
//! Store/Indexer.

mod key_lister_getter;
mod reflector_store;

pub use key_lister_getter::KeyListerGetter;
pub use reflector_store::ReflectorStore;
