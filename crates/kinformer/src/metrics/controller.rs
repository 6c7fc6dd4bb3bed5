//! controller-runtime's reconcile metrics (`controller_runtime_*`, label `controller`).

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::Metrics;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ControllerLabels {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ResultLabels {
    controller: String,
    result: String,
}

/// controller-runtime's `reconcile_time_seconds` range (5 ms … 60 s), in fewer buckets.
fn reconcile_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0,
        5.0, 7.5, 10.0, 15.0, 30.0, 45.0, 60.0,
    ])
}

#[derive(Debug)]
pub(crate) struct ControllerFamilies {
    total: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    panics: Family<ControllerLabels, Counter>,
    time: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    active: Family<ControllerLabels, Gauge>,
    max_concurrent: Family<ControllerLabels, Gauge>,
    cache_waits: Family<ControllerLabels, Counter>,
    cache_wait_timeouts: Family<ControllerLabels, Counter>,
}

impl ControllerFamilies {
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let f = Self {
            total: Family::default(),
            errors: Family::default(),
            panics: Family::default(),
            time: Family::new_with_constructor(reconcile_histogram),
            active: Family::default(),
            max_concurrent: Family::default(),
            cache_waits: Family::default(),
            cache_wait_timeouts: Family::default(),
        };
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            f.total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            f.errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller",
            f.panics.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            f.time.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            f.active.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            f.max_concurrent.clone(),
        );
        registry.register(
            "kinformer_controller_cache_waits",
            "Reconciles that first waited for the caches to show their key's recorded writes",
            f.cache_waits.clone(),
        );
        registry.register(
            "kinformer_controller_cache_wait_timeouts",
            "Waits for recorded writes that timed out (reconcile skipped, key retried rate-limited)",
            f.cache_wait_timeouts.clone(),
        );
        f
    }
}

fn controller(name: &str) -> ControllerLabels {
    ControllerLabels {
        controller: name.to_owned(),
    }
}

impl Metrics {
    /// As controller-runtime at start: every `result` series (`results`, the label values) at
    /// 0, the worker gauges set.
    pub(crate) fn controller_started(&self, name: &str, workers: usize, results: &[&str]) {
        let c = &self.controller;
        for result in results {
            let _ = c.total.get_or_create(&ResultLabels {
                controller: name.to_owned(),
                result: (*result).to_owned(),
            });
        }
        let _ = c.errors.get_or_create(&controller(name));
        let _ = c.cache_waits.get_or_create(&controller(name));
        let _ = c.cache_wait_timeouts.get_or_create(&controller(name));
        let _ = c.panics.get_or_create(&controller(name));
        c.active.get_or_create(&controller(name)).set(0);
        c.max_concurrent
            .get_or_create(&controller(name))
            .set(i64::try_from(workers).unwrap_or(i64::MAX));
    }

    /// A reconcile waited for its key's recorded writes (and whether the wait timed out).
    pub(crate) fn cache_waited(&self, name: &str, timed_out: bool) {
        let c = &self.controller;
        c.cache_waits.get_or_create(&controller(name)).inc();
        if timed_out {
            c.cache_wait_timeouts.get_or_create(&controller(name)).inc();
        }
    }

    pub(crate) fn worker_active(&self, name: &str, delta: i64) {
        self.controller
            .active
            .get_or_create(&controller(name))
            .inc_by(delta);
    }

    /// One reconcile ended with `result` (its label value; `error` when it failed).
    pub(crate) fn reconciled(
        &self,
        name: &str,
        (result, error): (&str, bool),
        panicked: bool,
        took: Duration,
    ) {
        let c = &self.controller;
        c.total
            .get_or_create(&ResultLabels {
                controller: name.to_owned(),
                result: result.to_owned(),
            })
            .inc();
        if error {
            c.errors.get_or_create(&controller(name)).inc();
        }
        if panicked {
            c.panics.get_or_create(&controller(name)).inc();
        }
        c.time
            .get_or_create(&controller(name))
            .observe(took.as_secs_f64());
    }
}
