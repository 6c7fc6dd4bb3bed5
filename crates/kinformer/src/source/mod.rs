//! Where objects come from: [`ListerWatcher`](crate::reflector::ListerWatcher) implementations
//! for real API servers.

mod kube;

pub use self::kube::{KubeListerWatcher, decode_list, decode_watch_line};
