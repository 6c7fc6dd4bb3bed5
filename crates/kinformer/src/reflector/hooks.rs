//! The callbacks a Reflector is configured with, shared by its builder and its run loop.

use std::sync::Arc;

use super::reflector_error::ReflectorError;

/// Decides, each time the resync timer fires, whether to call `store.resync()`.
pub type ShouldResyncFn = Arc<dyn Fn() -> bool + Send + Sync>;

/// Receives every error that ends a `list_and_watch` cycle (client-go's `WatchErrorHandler`).
pub type WatchErrorHandler = Arc<dyn Fn(&ReflectorError) + Send + Sync>;

/// Adjusts the options of every list and watch request before it is sent (client-go's
/// `tweakListOptions`); see [`InformerConfig::tweak_list_options`](crate::InformerConfig).
pub type TweakFn = Arc<dyn Fn(&mut super::ListOptions) + Send + Sync>;
