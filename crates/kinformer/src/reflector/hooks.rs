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

/// What a resuming Reflector tells the informer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ResumeEvent {
    /// The watch from the snapshot's resourceVersion is established (its response received).
    Established,
    /// The resumed watch delivered its first event or bookmark: the server had the version.
    Confirmed,
    /// The server no longer has the version (410 Gone, too old): a consistent list follows.
    Expired(String),
    /// The version is ahead of the server's: a consistent list follows.
    TooLarge(String),
    /// The resume failed otherwise before it was confirmed: a consistent list follows.
    Failed(String),
}

/// Called with each [`ResumeEvent`].
pub(crate) type ResumeHook = Arc<dyn Fn(ResumeEvent) + Send + Sync>;

/// Where a resume stands.
#[derive(Debug, Default)]
pub(crate) enum ResumeState {
    /// Not resuming (or done).
    #[default]
    Off,
    /// The first cycle resumes from this resourceVersion.
    Planned {
        resource_version: String,
        verify: bool,
    },
    /// Watching from the snapshot's version, not yet confirmed.
    Watching { established: bool },
}
