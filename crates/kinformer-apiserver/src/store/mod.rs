//! In-memory MVCC storage: one monotonically increasing revision (the resourceVersion, like
//! etcd's), the live objects per resource, and a bounded event history from which watches are
//! served and past states are reconstructed.

mod mvcc;
mod object;

pub use mvcc::{EventType, HistoryConfig, Mutation, ReadError, Store, StoredEvent};
pub use object::{COMMON_FIELDS, StoredObject, encode_typed, extra_fields};
