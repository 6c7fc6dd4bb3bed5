//! Which servers do not finish streaming lists: the attempts they get, and how long they are
//! sent paged lists instead ([`StreamingListMemory`]).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::lister_watcher::WatchStream;
use super::reflector_error::ReflectorError;

/// How many streaming lists in a row may end without their end bookmark before the
/// Reflector falls back to a paged list+watch, unless configured otherwise
/// ([`StreamingListFallback::attempts`]).
pub const DEFAULT_STREAMING_LIST_ATTEMPTS: u32 = 3;

/// How long a server found not to finish streaming lists is sent paged lists before a
/// streaming list is tried again, unless configured otherwise
/// ([`StreamingListFallback::remember_for`]).
pub const DEFAULT_STREAMING_LIST_FALLBACK: Duration = Duration::from_secs(10 * 60);

/// When a Reflector stops asking a server for streaming lists, and for how long
/// ([`InformerConfig::streaming_lists`](crate::InformerConfig::streaming_lists)).
///
/// **Deliberate difference from client-go:** client-go reopens a streaming list that ends
/// without its end bookmark for ever (kubernetes #140890; its fix, PR #140902, is open and
/// bounds the retries within one cycle), and tries a streaming list again on every relist
/// even after its server refused one; kinformer bounds the attempts and remembers the server
/// for a while, shared by every informer of a factory.
///
/// ```
/// use std::num::NonZeroU32;
/// use std::time::Duration;
/// use kinformer::reflector::StreamingListFallback;
/// let fallback = StreamingListFallback {
///     attempts: NonZeroU32::new(5).unwrap(),
///     remember_for: Duration::from_secs(3600),
///     ..Default::default()
/// };
/// assert!(fallback.memory.is_none());
/// ```
#[derive(Debug, Clone)]
pub struct StreamingListFallback {
    /// How many streaming lists in a row may end without their end bookmark (the server
    /// closes them, they break, or the bookmark does not come within
    /// [`end_bookmark_wait`](crate::InformerConfig::end_bookmark_wait)) before the Reflector
    /// falls back to a paged list+watch. Default [`DEFAULT_STREAMING_LIST_ATTEMPTS`] (3):
    /// enough to ride out a cut connection or an API server restarting mid-stream, few enough
    /// that a server that never finishes one costs seconds (with the default backoff), not a
    /// stalled informer. A server that refuses streaming lists as unsupported (`422`, as
    /// kube-apiserver with the `WatchList` gate off) spends them all at once. Counted per
    /// server, across the Reflectors sharing the [`memory`](Self::memory).
    pub attempts: NonZeroU32,
    /// How long a server found not to finish streaming lists (its attempts spent) is sent
    /// paged lists before a streaming list is tried again, by every Reflector sharing the
    /// [`memory`](Self::memory). Default [`DEFAULT_STREAMING_LIST_FALLBACK`] (10 minutes):
    /// relists are rare (a watch lasts 5 to 10 minutes and is resumed without one), so
    /// retrying costs a few requests an hour, and a server upgraded to stream is used again
    /// within minutes. Zero: remembered for no time (each cycle still falls back after the
    /// attempts).
    pub remember_for: Duration,
    /// Where Reflectors share what they learn (see [`StreamingListMemory`]). `None` (the
    /// default): a factory gives its informers its own memory (one per factory, so per client
    /// and cluster); an informer or Reflector made without a factory gets one of its own. Set
    /// one to share it among informers built without a factory, of one cluster only.
    pub memory: Option<StreamingListMemory>,
}

impl Default for StreamingListFallback {
    fn default() -> Self {
        Self {
            attempts: NonZeroU32::new(DEFAULT_STREAMING_LIST_ATTEMPTS).unwrap_or(NonZeroU32::MIN),
            remember_for: DEFAULT_STREAMING_LIST_FALLBACK,
            memory: None,
        }
    }
}

/// What the Reflectors sharing it have learnt about which servers finish streaming lists
/// (`sendInitialEvents=true` ended by the `k8s.io/initial-events-end` bookmark), so that a
/// server that does not (an aggregated API server that closes the stream early or ignores the
/// option, kubernetes #140890; one with the `WatchList` gate off, which refuses it) costs a
/// bounded number of attempts once, not on every relist of every informer.
///
/// # The key
///
/// Entries are kept per API group/version, as its request path starts: `/api/v1`,
/// `/apis/apps/v1`, `/apis/metrics.k8s.io/v1beta1`. The kube-aggregator routes by
/// group/version (an `APIService` is one group/version, served by kube-apiserver itself or
/// by another server), so every resource of one group/version is served by one server, and
/// two group/versions may be served by two. The cluster is the memory itself: a
/// [`SharedInformerFactory`](crate::SharedInformerFactory) makes one for its client (one
/// cluster), and `kube::Client` does not tell its base URL, so it cannot be part of the key.
/// Share one memory only among informers of one cluster.
///
/// # The rule
///
/// A streaming list that ends without the end bookmark (the server closes it, it breaks, the
/// bookmark does not come within
/// [`end_bookmark_wait`](crate::InformerConfig::end_bookmark_wait)) counts against its
/// group/version; one the server refuses as unsupported (`422 Invalid`, `400`, `405`) counts
/// as all the attempts at once (retrying it cannot succeed until the server is reconfigured);
/// one that finishes clears the count. Once the count reaches the attempts allowed, every
/// Reflector sharing the memory lists instead of streaming for that group/version, for the
/// fallback period of the Reflector that reached it; then streaming lists are tried again.
/// While a count is running, attempts under way count too, so informers of one server
/// starting together spend the attempts between them; before any attempt has failed each
/// informer's first one is made (one per informer when more start together than the attempts
/// allowed).
///
/// Cheap to clone (clones share the memory); no process-wide state.
#[derive(Clone, Default)]
pub struct StreamingListMemory {
    servers: Arc<Mutex<HashMap<String, ServerEntry>>>,
}

impl std::fmt::Debug for StreamingListMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let servers = self.servers.lock();
        f.debug_struct("StreamingListMemory")
            .field("servers", &servers.len())
            .finish()
    }
}

#[derive(Debug, Default)]
struct ServerEntry {
    /// Streaming lists that ended without their end bookmark since the last one that did.
    incomplete: u32,
    /// Streaming lists under way.
    in_flight: u32,
    /// Lists instead of streaming lists until then.
    fallback_until: Option<Instant>,
}

/// What a Reflector about to list should do.
pub(crate) enum StreamingDecision {
    /// Stream; the permit records the outcome.
    Stream(StreamingPermit),
    /// List: this server is remembered as not finishing streaming lists.
    Remembered,
    /// List this time: the attempts are spent (by attempts still under way).
    Spent,
}

/// How a streaming list ended.
pub(crate) enum WatchListEnd<K> {
    /// The initial events arrived whole; the stream carries on as the watch.
    Streamed(WatchStream<K>),
    /// Cancelled.
    Cancelled,
    /// List instead: the error that ended the streaming list, or `None` when its attempts
    /// were spent (streams that ended without their end bookmark).
    FallBack(Option<ReflectorError>),
}

/// How a streaming list ended, as the memory counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamingOutcome {
    /// The end bookmark came.
    Finished,
    /// Closed, broken or timed out before the end bookmark.
    Incomplete,
    /// Refused as unsupported.
    Refused,
}

impl StreamingListMemory {
    /// An empty memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// The key of an API group (`""` for the core group) and version: the start of its
    /// request paths (`/api/v1`, `/apis/apps/v1`; see the type's docs).
    ///
    /// ```
    /// use kinformer::reflector::StreamingListMemory;
    /// assert_eq!(StreamingListMemory::key("", "v1"), "/api/v1");
    /// assert_eq!(StreamingListMemory::key("metrics.k8s.io", "v1beta1"), "/apis/metrics.k8s.io/v1beta1");
    /// ```
    pub fn key(group: &str, version: &str) -> String {
        if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        }
    }

    /// How much longer `server` (a group/version path, see the type's docs) is sent lists
    /// instead of streaming lists; `None` when it is not.
    pub fn fallback_remaining(&self, server: &str) -> Option<Duration> {
        let now = Instant::now();
        let servers = self.servers.lock();
        let until = servers.get(server)?.fallback_until?;
        (until > now).then(|| until - now)
    }

    /// Forgets everything about `server`: its next list is streamed.
    pub fn forget(&self, server: &str) {
        self.servers.lock().remove(server);
    }

    /// Whether `reflector` may stream a list from `server`, `attempts` being allowed in a row.
    pub(crate) fn decide(&self, reflector: &str, server: &str, attempts: u32) -> StreamingDecision {
        let now = Instant::now();
        let mut servers = self.servers.lock();
        let entry = servers.entry(server.to_owned()).or_default();
        if let Some(until) = entry.fallback_until {
            if until > now {
                return StreamingDecision::Remembered;
            }
            tracing::info!(
                reflector,
                server,
                "the streaming-list fallback for this server expired; trying a streaming list again"
            );
            entry.fallback_until = None;
            entry.incomplete = 0;
        }
        if entry.incomplete > 0 && entry.incomplete + entry.in_flight >= attempts {
            return StreamingDecision::Spent;
        }
        entry.in_flight += 1;
        StreamingDecision::Stream(StreamingPermit {
            memory: self.clone(),
            server: server.to_owned(),
            done: false,
        })
    }

    fn record(
        &self,
        server: &str,
        outcome: Option<StreamingOutcome>,
        limits: Option<(&str, u32, Duration)>,
    ) -> bool {
        let now = Instant::now();
        let mut servers = self.servers.lock();
        let entry = servers.entry(server.to_owned()).or_default();
        entry.in_flight = entry.in_flight.saturating_sub(1);
        let (Some(outcome), Some((reflector, attempts, fallback))) = (outcome, limits) else {
            return false;
        };
        match outcome {
            StreamingOutcome::Finished => {
                entry.incomplete = 0;
                entry.fallback_until = None;
                false
            }
            StreamingOutcome::Incomplete | StreamingOutcome::Refused => {
                entry.incomplete = if outcome == StreamingOutcome::Refused {
                    attempts
                } else {
                    entry.incomplete.saturating_add(1)
                };
                if entry.incomplete < attempts {
                    return false;
                }
                if fallback.is_zero() {
                    // remembered for no time: this cycle lists, the next one streams again
                    entry.incomplete = 0;
                    tracing::warn!(
                        reflector,
                        server,
                        attempts,
                        refused = outcome == StreamingOutcome::Refused,
                        "the server did not finish streaming lists; falling back to a paged list this time"
                    );
                    return true;
                }
                if entry.fallback_until.is_none_or(|u| u <= now) {
                    entry.fallback_until = Some(now + fallback);
                    tracing::warn!(
                        reflector,
                        server,
                        attempts = entry.incomplete,
                        ?fallback,
                        refused = outcome == StreamingOutcome::Refused,
                        "the server did not finish streaming lists; falling back to paged lists for this server"
                    );
                }
                true
            }
        }
    }
}

/// One streaming list under way; records its outcome (a permit dropped without one, e.g.
/// when the Reflector is cancelled or the list fails for another reason, counts nothing).
pub(crate) struct StreamingPermit {
    memory: StreamingListMemory,
    server: String,
    done: bool,
}

impl StreamingPermit {
    /// Records how the streaming list ended; returns whether the server is now remembered as
    /// not finishing streaming lists (the attempts are spent).
    pub(crate) fn finish(
        mut self,
        reflector: &str,
        outcome: StreamingOutcome,
        attempts: u32,
        fallback: Duration,
    ) -> bool {
        self.done = true;
        self.memory.record(
            &self.server,
            Some(outcome),
            Some((reflector, attempts, fallback)),
        )
    }
}

impl Drop for StreamingPermit {
    fn drop(&mut self) {
        if !self.done {
            self.memory.record(&self.server, None, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    fn stream(m: &StreamingListMemory, server: &str, attempts: u32) -> StreamingPermit {
        match m.decide("r", server, attempts) {
            StreamingDecision::Stream(p) => p,
            StreamingDecision::Remembered => panic!("remembered"),
            StreamingDecision::Spent => panic!("spent"),
        }
    }

    fn lists(m: &StreamingListMemory, server: &str, attempts: u32) -> bool {
        !matches!(
            m.decide("r", server, attempts),
            StreamingDecision::Stream(_)
        )
    }

    #[tokio::test(start_paused = true)]
    async fn three_incomplete_attempts_in_a_row_are_remembered_for_the_fallback_period() {
        let m = StreamingListMemory::new();
        for i in 0..3 {
            let p = stream(&m, "/api/v1", 3);
            let remembered = p.finish("r", StreamingOutcome::Incomplete, 3, 10 * MIN);
            assert_eq!(remembered, i == 2);
        }
        assert!(lists(&m, "/api/v1", 3));
        assert_eq!(m.fallback_remaining("/api/v1"), Some(10 * MIN));
        // another group/version is another server
        drop(stream(&m, "/apis/apps/v1", 3));
        tokio::time::advance(10 * MIN - Duration::from_secs(1)).await;
        assert!(lists(&m, "/api/v1", 3));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(m.fallback_remaining("/api/v1"), None);
        // expired: streaming is tried again, with the full count of attempts
        for _ in 0..2 {
            stream(&m, "/api/v1", 3).finish("r", StreamingOutcome::Incomplete, 3, 10 * MIN);
        }
        stream(&m, "/api/v1", 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_finished_streaming_list_clears_the_count_and_a_refusal_spends_it_all() {
        let m = StreamingListMemory::new();
        stream(&m, "/api/v1", 3).finish("r", StreamingOutcome::Incomplete, 3, MIN);
        stream(&m, "/api/v1", 3).finish("r", StreamingOutcome::Incomplete, 3, MIN);
        stream(&m, "/api/v1", 3).finish("r", StreamingOutcome::Finished, 3, MIN);
        stream(&m, "/api/v1", 3).finish("r", StreamingOutcome::Incomplete, 3, MIN);
        stream(&m, "/api/v1", 3).finish("r", StreamingOutcome::Incomplete, 3, MIN);
        assert!(!lists(&m, "/api/v1", 3), "two in a row, not three");
        let refused = stream(&m, "/apis/metrics.k8s.io/v1beta1", 3).finish(
            "r",
            StreamingOutcome::Refused,
            3,
            MIN,
        );
        assert!(refused);
        assert!(lists(&m, "/apis/metrics.k8s.io/v1beta1", 3));
        m.forget("/apis/metrics.k8s.io/v1beta1");
        assert!(!lists(&m, "/apis/metrics.k8s.io/v1beta1", 3));
    }

    #[tokio::test(start_paused = true)]
    async fn attempts_under_way_count_once_one_has_failed() {
        let m = StreamingListMemory::new();
        // five informers start together: each streams (nothing has failed yet)
        let permits: Vec<_> = (0..5).map(|_| stream(&m, "/api/v1", 3)).collect();
        let mut permits = permits.into_iter();
        permits
            .next()
            .unwrap()
            .finish("r", StreamingOutcome::Incomplete, 3, MIN);
        // one failed, four under way: no new attempt
        assert!(lists(&m, "/api/v1", 3));
        // a cancelled attempt counts nothing
        drop(permits.next());
        drop(permits.next());
        drop(permits.next());
        let retry = stream(&m, "/api/v1", 3);
        assert!(lists(&m, "/api/v1", 3), "1 failed + 2 under way");
        drop(retry);
        drop(permits);
        assert_eq!(m.fallback_remaining("/api/v1"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_fallback_period_remembers_nothing() {
        let m = StreamingListMemory::new();
        stream(&m, "/api/v1", 1).finish("r", StreamingOutcome::Refused, 1, Duration::ZERO);
        assert!(!lists(&m, "/api/v1", 1));
    }
}
