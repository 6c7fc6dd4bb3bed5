//! In-memory MVCC storage: one monotonically increasing revision (the resourceVersion, like
//! etcd's), the live objects per resource, and a bounded event history from which watches are
//! served and past states are reconstructed.

mod mvcc;
mod object;

pub use mvcc::HistoryConfig;
pub(crate) use mvcc::{EventType, Mutation, Preview, ReadError, Store, StoredEvent};
pub(crate) use object::StoredObject;
pub(crate) use object::{COMMON_FIELDS, extra_fields};
