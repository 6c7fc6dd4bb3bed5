//! Where objects come from: [`ListerWatcher`](crate::reflector::ListerWatcher) implementations
//! for real API servers.

mod decode;
mod kube;
mod namespaces;
mod status;
mod uncopied;

pub use self::decode::json::{decode_list, decode_watch_line};
pub use self::kube::{
    DEFAULT_MAX_OBJECT_SIZE, KubeListerWatcher, METADATA_LIST_ACCEPT,
    METADATA_LIST_ACCEPT_PROTOBUF, METADATA_WATCH_ACCEPT, METADATA_WATCH_ACCEPT_PROTOBUF,
    PROTOBUF_ACCEPT, WireFormat,
};
pub(crate) use self::namespaces::kube_source;
pub use self::namespaces::{
    NAMESPACE_SET_CHANGED, NamespaceError, NamespaceSet, NamespaceSetListerWatcher,
};
