//! Shared by the leader-election tests: reconcile windows per replica and their overlap
//! check, a lock that can be cut off from the API, and clocks that tick at other rates.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use kinformer::leaderelection::{Clock, LeaderElectionRecord, LockError, ResourceLock};
use parking_lot::Mutex;
use tokio::time::Instant;

/// One reconcile: which replica, when it started, when it ended (`None` while running).
#[derive(Debug, Clone)]
pub struct Window {
    pub replica: String,
    pub key: String,
    pub start: Instant,
    pub end: Option<Instant>,
}

/// Every replica's reconcile windows.
#[derive(Debug, Clone, Default)]
pub struct Windows(Arc<Mutex<Vec<Window>>>);

/// Ends its window when dropped: a reconcile that returns, or whose future is dropped
/// (cancelled by the runner or its task aborted), ends there.
pub struct Open {
    windows: Windows,
    index: usize,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.windows.0.lock()[self.index].end = Some(Instant::now());
    }
}

impl Windows {
    /// Opens a window for `replica` reconciling `key`.
    pub fn open(&self, replica: &str, key: &str) -> Open {
        let mut w = self.0.lock();
        w.push(Window {
            replica: replica.to_owned(),
            key: key.to_owned(),
            start: Instant::now(),
            end: None,
        });
        Open {
            windows: self.clone(),
            index: w.len() - 1,
        }
    }

    pub fn all(&self) -> Vec<Window> {
        self.0.lock().clone()
    }

    /// Pairs of windows of different replicas that overlap (open windows run until now).
    pub fn overlaps(&self) -> Vec<(Window, Window)> {
        let now = Instant::now();
        let w = self.all();
        let mut out = Vec::new();
        for (i, a) in w.iter().enumerate() {
            for b in &w[i + 1..] {
                if a.replica == b.replica {
                    continue;
                }
                let (ae, be) = (a.end.unwrap_or(now), b.end.unwrap_or(now));
                if a.start < be && b.start < ae {
                    out.push((a.clone(), b.clone()));
                }
            }
        }
        out
    }

    /// Panics naming the first overlapping pair.
    pub fn assert_no_overlap(&self) {
        let o = self.overlaps();
        assert!(
            o.is_empty(),
            "{} overlapping reconcile windows, first: {:?}",
            o.len(),
            o.first()
        );
    }

    /// Replicas that reconciled, in the order they first did.
    pub fn replicas(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for w in self.all() {
            if !out.contains(&w.replica) {
                out.push(w.replica);
            }
        }
        out
    }

    /// The first reconcile start of `replica` at or after `after`.
    pub fn first_start(&self, replica: &str, after: Instant) -> Option<Instant> {
        self.all()
            .iter()
            .filter(|w| w.replica == replica && w.start >= after)
            .map(|w| w.start)
            .min()
    }

    /// The last window end of `replica` (now for an open one).
    pub fn last_end(&self, replica: &str) -> Option<Instant> {
        let now = Instant::now();
        self.all()
            .iter()
            .filter(|w| w.replica == replica)
            .map(|w| w.end.unwrap_or(now))
            .max()
    }

    pub fn count(&self, replica: &str) -> usize {
        self.all().iter().filter(|w| w.replica == replica).count()
    }
}

/// A lock that fails (or hangs) every call while cut off: a replica whose API traffic is
/// blackholed, while the others reach the server.
#[derive(Debug)]
pub struct CutOff<L> {
    pub inner: L,
    pub cut: Arc<AtomicBool>,
    /// Hang instead of failing while cut off (a blackhole, not a refused connection).
    pub hang: bool,
}

impl<L> CutOff<L> {
    pub fn new(inner: L) -> (Self, Arc<AtomicBool>) {
        let cut = Arc::new(AtomicBool::new(false));
        (
            Self {
                inner,
                cut: cut.clone(),
                hang: false,
            },
            cut,
        )
    }
}

impl<L: ResourceLock> CutOff<L> {
    async fn check(&self) -> Result<(), LockError> {
        if !self.cut.load(Ordering::SeqCst) {
            return Ok(());
        }
        if self.hang {
            futures::future::pending::<()>().await;
        }
        Err(LockError::Other {
            lock: self.inner.describe(),
            message: "cut off from the API server".into(),
        })
    }
}

impl<L: ResourceLock> ResourceLock for CutOff<L> {
    fn get(&self) -> BoxFuture<'_, Result<(LeaderElectionRecord, String), LockError>> {
        Box::pin(async move {
            self.check().await?;
            self.inner.get().await
        })
    }
    fn create(&self, r: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>> {
        Box::pin(async move {
            self.check().await?;
            self.inner.create(r).await
        })
    }
    fn update(&self, r: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>> {
        Box::pin(async move {
            self.check().await?;
            self.inner.update(r).await
        })
    }
    fn identity(&self) -> &str {
        self.inner.identity()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// A clock running at `rate` times Tokio's (0.95: 5 % slow), from `base`, with its wall
/// clock `offset` ahead of the system's (offsets never matter to the election).
#[derive(Debug, Clone)]
pub struct Skewed {
    pub base: Instant,
    pub rate: f64,
    pub offset: Duration,
}

impl Clock for Skewed {
    fn now(&self) -> Instant {
        self.base + Instant::now().duration_since(self.base).mul_f64(self.rate)
    }
    fn sleep_until(&self, deadline: Instant) -> kinformer::workqueue::ClockSleep {
        let local = deadline.saturating_duration_since(self.now());
        Box::pin(tokio::time::sleep(local.div_f64(self.rate)))
    }
    fn wall(&self) -> std::time::SystemTime {
        std::time::SystemTime::now() + self.offset
    }
}
