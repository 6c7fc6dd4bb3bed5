//! Sync signals and waiting for caches to sync.
//!
//! client-go polls `HasSynced` every 100 ms in `WaitForCacheSync`. Here every informer and every
//! handler registration exposes a [`SyncSignal`] that *notifies* when it syncs, so
//! [`wait_for_cache_sync`] wakes the moment the last cache syncs, without polling.

use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// A named, cloneable view of a "has synced" flag that can be awaited.
///
/// Obtained from `SharedIndexInformer::synced_signal` or a handler registration. Once it reports
/// synced it stays synced.
#[derive(Debug, Clone)]
pub struct SyncSignal {
    name: Arc<str>,
    rx: watch::Receiver<bool>,
}

impl SyncSignal {
    /// A signal and the [`SyncFlag`] that sets it.
    pub fn new(name: impl Into<Arc<str>>) -> (SyncFlag, SyncSignal) {
        let (tx, rx) = watch::channel(false);
        (
            SyncFlag { tx: Arc::new(tx) },
            SyncSignal {
                name: name.into(),
                rx,
            },
        )
    }

    /// What this signal stands for (used in logs by [`wait_for_named_cache_sync`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it has synced.
    pub fn has_synced(&self) -> bool {
        *self.rx.borrow()
    }

    /// Resolves once synced. If the flag is dropped without ever being set (its informer was
    /// shut down before syncing) this never resolves; combine it with a cancellation token, as
    /// [`wait_for_cache_sync`] does.
    pub async fn wait(&self) {
        let mut rx = self.rx.clone();
        if rx.wait_for(|synced| *synced).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The writing side of a [`SyncSignal`]. Cloning shares the flag.
#[derive(Debug, Clone)]
pub struct SyncFlag {
    tx: Arc<watch::Sender<bool>>,
}

impl SyncFlag {
    /// Marks synced (idempotent); wakes every waiter.
    pub fn mark_synced(&self) {
        self.tx
            .send_if_modified(|synced| !std::mem::replace(synced, true));
    }

    /// Whether it has been marked.
    pub fn is_synced(&self) -> bool {
        *self.tx.borrow()
    }
}

/// client-go's `WaitForCacheSync`: waits until every signal has synced (→ `true`) or `cancel`
/// is cancelled first (→ `false`). Notified, not polled.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use kinformer::wait::{SyncSignal, wait_for_cache_sync};
/// use tokio_util::sync::CancellationToken;
/// let (flag, signal) = SyncSignal::new("pods");
/// flag.mark_synced();
/// assert!(wait_for_cache_sync(&CancellationToken::new(), [signal]).await);
/// # }
/// ```
pub async fn wait_for_cache_sync(
    cancel: &CancellationToken,
    signals: impl IntoIterator<Item = SyncSignal>,
) -> bool {
    let signals: Vec<SyncSignal> = signals.into_iter().collect();
    let all = futures::future::join_all(signals.iter().map(SyncSignal::wait));
    tokio::select! {
        biased;
        _ = all => true,
        _ = cancel.cancelled() => signals.iter().all(SyncSignal::has_synced),
    }
}

/// client-go's `WaitForNamedCacheSync`: [`wait_for_cache_sync`] that logs, under
/// `controller`, when it starts and ends waiting and, if cancelled, which caches never synced.
pub async fn wait_for_named_cache_sync(
    controller: &str,
    cancel: &CancellationToken,
    signals: impl IntoIterator<Item = SyncSignal>,
) -> bool {
    let signals: Vec<SyncSignal> = signals.into_iter().collect();
    tracing::info!(controller, "Waiting for caches to sync");
    if wait_for_cache_sync(cancel, signals.iter().cloned()).await {
        tracing::info!(controller, "Caches are synced");
        true
    } else {
        let mut pending: Vec<&str> = signals
            .iter()
            .filter(|s| !s.has_synced())
            .map(SyncSignal::name)
            .collect();
        pending.sort_unstable();
        tracing::error!(controller, ?pending, "Unable to sync caches");
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn wakes_when_the_last_signal_syncs() {
        let (a, sa) = SyncSignal::new("a");
        let (b, sb) = SyncSignal::new("b");
        let cancel = CancellationToken::new();
        let waiter = tokio::spawn({
            let cancel = cancel.clone();
            async move { wait_for_cache_sync(&cancel, [sa, sb]).await }
        });
        a.mark_synced();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiter.is_finished());
        b.mark_synced();
        assert!(waiter.await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn cancellation_returns_false_unless_synced() {
        let (_a, sa) = SyncSignal::new("a");
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert!(!wait_for_named_cache_sync("test", &cancel, [sa.clone()]).await);
        // a flag dropped without syncing does not count as synced
        let (a2, sa2) = SyncSignal::new("dropped");
        drop(a2);
        assert!(!wait_for_cache_sync(&cancel, [sa2]).await);
    }

    #[tokio::test]
    async fn empty_set_is_synced_and_marking_is_idempotent() {
        assert!(wait_for_cache_sync(&CancellationToken::new(), []).await);
        let (f, s) = SyncSignal::new("x");
        f.mark_synced();
        f.mark_synced();
        assert!(s.has_synced() && f.is_synced());
    }
}
