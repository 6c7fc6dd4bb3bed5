//! Where objects come from: [`ListerWatcher`](crate::reflector::ListerWatcher) implementations
//! for real API servers.

mod frames;
mod kube;
mod list_stream;
mod proto_list;
mod status;
mod uncopied;
mod wire;

pub use self::kube::{
    DEFAULT_MAX_OBJECT_SIZE, KubeListerWatcher, METADATA_LIST_ACCEPT,
    METADATA_LIST_ACCEPT_PROTOBUF, METADATA_WATCH_ACCEPT, METADATA_WATCH_ACCEPT_PROTOBUF,
    PROTOBUF_ACCEPT, WireFormat,
};
pub use self::wire::{decode_list, decode_watch_line};
