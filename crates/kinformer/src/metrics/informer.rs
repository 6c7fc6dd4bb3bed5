//! Informer figures, read at scrape time from the informers' public accessors.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

/// A gauge of seconds (a float).
type Seconds = Gauge<f64, AtomicU64>;

/// What the collector reads from one informer (implemented for `SharedIndexInformer`).
pub trait InformerProbe: Send + Sync + 'static {
    /// The informer's name.
    fn probe_name(&self) -> String;
    /// What tells the informer apart from others of its name in the `name` label (its API
    /// version, and `dynamic`), used only when names collide. Default: nothing (colliding
    /// names are numbered).
    fn probe_qualifier(&self) -> String {
        String::new()
    }
    /// The informer's process-unique id: an informer watched twice is reported once.
    /// Default: none (every probe is reported).
    fn probe_id(&self) -> Option<u64> {
        None
    }
    /// Objects in its cache.
    fn objects_cached(&self) -> usize;
    /// Deltas queued between the reflector and the cache.
    fn queued_items(&self) -> usize;
    /// Each handler's name and backlog.
    fn handler_backlogs(&self) -> Vec<(String, usize)>;
    /// The last resource version synced, as client-go's store metric: its last 15 digits.
    fn last_resource_version(&self) -> i64;
    /// Lists (streaming lists included) and watches started.
    fn list_watch_counts(&self) -> (u64, u64);
    /// Each handler's name and the age of its oldest notification not yet handled (`None`:
    /// nothing to do). Default: none known.
    fn handler_oldest_pending(&self) -> Vec<(String, Option<Duration>)> {
        Vec::new()
    }
    /// Time since the last watch event or bookmark (or the last list, if later). Default:
    /// unknown.
    fn since_last_watch_activity(&self) -> Option<Duration> {
        None
    }
    /// Time since the last successful list. Default: unknown.
    fn since_last_list(&self) -> Option<Duration> {
        None
    }
    /// Whether the informer was removed from its factory, so it leaves the scrape (and the
    /// collector lets go of it). Default: never.
    fn is_removed(&self) -> bool {
        false
    }
    /// The consistency checks run. Default: none.
    fn consistency_stats(&self) -> crate::informer::ConsistencyStats {
        crate::informer::ConsistencyStats::default()
    }
}

impl<K: crate::Object> InformerProbe for crate::SharedIndexInformer<K> {
    fn probe_name(&self) -> String {
        self.name().to_owned()
    }
    fn probe_qualifier(&self) -> String {
        self.qualifier()
    }
    fn probe_id(&self) -> Option<u64> {
        Some(self.id())
    }
    fn objects_cached(&self) -> usize {
        self.indexer().len()
    }
    fn queued_items(&self) -> usize {
        self.queued_deltas()
    }
    fn handler_backlogs(&self) -> Vec<(String, usize)> {
        self.handler_backlogs()
    }
    fn list_watch_counts(&self) -> (u64, u64) {
        crate::SharedIndexInformer::list_watch_counts(self)
    }
    fn handler_oldest_pending(&self) -> Vec<(String, Option<Duration>)> {
        self.handler_stats()
            .into_iter()
            .map(|s| (s.name, s.oldest_pending_age))
            .collect()
    }
    fn since_last_watch_activity(&self) -> Option<Duration> {
        crate::SharedIndexInformer::since_last_watch_activity(self)
    }
    fn since_last_list(&self) -> Option<Duration> {
        crate::SharedIndexInformer::since_last_list(self)
    }
    fn consistency_stats(&self) -> crate::informer::ConsistencyStats {
        crate::SharedIndexInformer::consistency_stats(self)
    }
    fn is_removed(&self) -> bool {
        crate::SharedIndexInformer::is_removed(self)
    }
    fn last_resource_version(&self) -> i64 {
        let rv = self.last_sync_resource_version();
        let digits = &rv[rv.len().saturating_sub(15)..];
        digits.parse().unwrap_or(0)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InformerLabels {
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HandlerLabels {
    name: String,
    handler: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CheckLabels {
    name: String,
    result: String,
}

#[derive(Default)]
pub(crate) struct InformerCollector {
    probes: Mutex<Vec<Box<dyn InformerProbe>>>,
}

impl fmt::Debug for InformerCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerCollector")
            .field("informers", &self.probes.lock().len())
            .finish()
    }
}

impl InformerCollector {
    /// Adds a probe (and lets go of those of removed informers); one for an informer already
    /// watched is dropped, so its counters are not added twice into one series.
    pub(crate) fn add(&self, probe: Box<dyn InformerProbe>) {
        let mut probes = self.probes.lock();
        probes.retain(|p| !p.is_removed());
        let id = probe.probe_id();
        if id.is_some() && probes.iter().any(|p| p.probe_id() == id) {
            tracing::debug!(informer = %probe.probe_name(), "informer already watched by these metrics");
            return;
        }
        probes.push(probe);
    }
}

fn emit<S, M>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    family: Family<S, M>,
) -> Result<(), fmt::Error>
where
    S: EncodeLabelSet + Clone + std::hash::Hash + Eq + fmt::Debug + Send + Sync + 'static,
    M: EncodeMetric
        + prometheus_client::metrics::TypedMetric
        + Default
        + fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let metric = encoder.encode_descriptor(name, help, None, family.metric_type())?;
    family.encode(metric)
}

impl Collector for InformerCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let objects = Family::<InformerLabels, Gauge>::default();
        let queued = Family::<InformerLabels, Gauge>::default();
        let rv = Family::<InformerLabels, Gauge>::default();
        let backlog = Family::<HandlerLabels, Gauge>::default();
        let lists = Family::<InformerLabels, Counter>::default();
        let relists = Family::<InformerLabels, Counter>::default();
        let watches = Family::<InformerLabels, Counter>::default();
        let restarts = Family::<InformerLabels, Counter>::default();
        let oldest = Family::<HandlerLabels, Seconds>::default();
        let since_watch = Family::<InformerLabels, Seconds>::default();
        let since_list = Family::<InformerLabels, Seconds>::default();
        let checks = Family::<CheckLabels, Counter>::default();
        let divergent = Family::<InformerLabels, Gauge>::default();
        let mut probes = self.probes.lock();
        probes.retain(|p| !p.is_removed());
        // Informers that share a name (a typed and a dynamic one of a kind, one kind in two
        // groups) get distinct labels, as in the factory's `wait_for_cache_sync`: otherwise
        // their series would merge (gauges overwritten, counters summed).
        let names: Vec<(String, String)> = probes
            .iter()
            .map(|p| (p.probe_name(), p.probe_qualifier()))
            .collect();
        let names = crate::informer::naming::distinct_names(&names);
        for (p, name) in probes.iter().zip(names) {
            let l = InformerLabels { name };
            let n = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
            objects.get_or_create(&l).set(n(p.objects_cached()));
            queued.get_or_create(&l).set(n(p.queued_items()));
            rv.get_or_create(&l).set(p.last_resource_version());
            let (l_n, w_n) = p.list_watch_counts();
            lists.get_or_create(&l).inc_by(l_n);
            relists.get_or_create(&l).inc_by(l_n.saturating_sub(1));
            watches.get_or_create(&l).inc_by(w_n);
            restarts.get_or_create(&l).inc_by(w_n.saturating_sub(1));
            for (handler, b) in p.handler_backlogs() {
                backlog
                    .get_or_create(&HandlerLabels {
                        name: l.name.clone(),
                        handler,
                    })
                    .set(n(b));
            }
            for (handler, age) in p.handler_oldest_pending() {
                oldest
                    .get_or_create(&HandlerLabels {
                        name: l.name.clone(),
                        handler,
                    })
                    .set(age.unwrap_or_default().as_secs_f64());
            }
            if let Some(d) = p.since_last_watch_activity() {
                since_watch.get_or_create(&l).set(d.as_secs_f64());
            }
            if let Some(d) = p.since_last_list() {
                since_list.get_or_create(&l).set(d.as_secs_f64());
            }
            let stats = p.consistency_stats();
            for (result, count) in [
                ("consistent", stats.consistent),
                ("divergent", stats.divergent),
                ("skipped", stats.skipped),
                ("failed", stats.failed),
            ] {
                checks
                    .get_or_create(&CheckLabels {
                        name: l.name.clone(),
                        result: result.to_owned(),
                    })
                    .inc_by(count);
            }
            if let Some(last) = &stats.last {
                divergent.get_or_create(&l).set(n(last.divergent()));
            }
        }
        emit(
            &mut encoder,
            "informer_objects_cached",
            "Objects in the informer's cache",
            objects,
        )?;
        emit(
            &mut encoder,
            "informer_queued_items",
            "Deltas queued between the reflector and the cache",
            queued,
        )?;
        emit(
            &mut encoder,
            "informer_store_resource_version",
            "The last resource version synced (its last 15 digits)",
            rv,
        )?;
        emit(
            &mut encoder,
            "informer_handler_backlog",
            "Notifications queued for a handler and not yet handled",
            backlog,
        )?;
        emit(
            &mut encoder,
            "informer_lists",
            "Lists started by the informer's reflector (streaming lists included)",
            lists,
        )?;
        emit(
            &mut encoder,
            "informer_relists",
            "Lists after the first (after an expired or failed watch)",
            relists,
        )?;
        emit(
            &mut encoder,
            "informer_watches",
            "Watches started by the informer's reflector (a streaming list counts once it carries on as the watch)",
            watches,
        )?;
        emit(
            &mut encoder,
            "informer_watch_restarts",
            "Watches started after the first",
            restarts,
        )?;
        emit(
            &mut encoder,
            "informer_handler_oldest_pending_seconds",
            "Age of the oldest notification a handler has not yet handled (0: none)",
            oldest,
        )?;
        emit(
            &mut encoder,
            "informer_seconds_since_watch_activity",
            "Seconds since the last watch event or bookmark (or the last list, if later)",
            since_watch,
        )?;
        emit(
            &mut encoder,
            "informer_seconds_since_list",
            "Seconds since the last successful list",
            since_list,
        )?;
        emit(
            &mut encoder,
            "informer_consistency_checks",
            "Consistency checks of the cache against the server, by result",
            checks,
        )?;
        emit(
            &mut encoder,
            "informer_consistency_divergent_objects",
            "Objects that differed from the server in the last consistency check that compared",
            divergent,
        )
    }
}
