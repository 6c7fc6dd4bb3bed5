//! Where objects come from: [`ListerWatcher`](crate::reflector::ListerWatcher) implementations
//! for real API servers.

mod kube;
mod list_stream;

pub use self::kube::{KubeListerWatcher, decode_list, decode_watch_line};
