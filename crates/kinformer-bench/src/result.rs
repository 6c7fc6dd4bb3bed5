//! What a peer reports: one JSON object on stdout per run.

use serde::{Deserialize, Serialize};

/// A workload (see docs/benchmarks.md for the exact definitions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// Initial sync of N pods; also gives memory per cached object without a transform (W4).
    W1,
    /// W1 with a transform dropping `managedFields` (W4 with transform).
    W1t,
    /// Watch throughput and write-to-handler latency.
    W2,
    /// Relist after a forced 410 with N objects cached.
    W3,
}

impl Workload {
    /// The command-line / JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            Workload::W1 => "w1",
            Workload::W1t => "w1t",
            Workload::W2 => "w2",
            Workload::W3 => "w3",
        }
    }
}

impl std::str::FromStr for Workload {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "w1" => Ok(Workload::W1),
            "w1t" => Ok(Workload::W1t),
            "w2" => Ok(Workload::W2),
            "w3" => Ok(Workload::W3),
            other => Err(format!("unknown workload {other:?} (w1, w1t, w2, w3)")),
        }
    }
}

/// One run of one peer on one workload. Fields a workload does not measure are `None`.
///
/// Memory figures are KiB of resident set size of the peer process.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PeerReport {
    /// `kinformer`, `kube-rs`, `client-go` or `floor`.
    pub peer: String,
    /// The workload's name (`w1`, `w1t`, `w2`, `w3`).
    pub workload: String,
    /// Objects on the server when the run started.
    pub n: u64,
    /// Objects the peer's cache held at the end (the floor: objects decoded).
    pub objects: u64,
    /// RSS before the informer started (after the runtime and client were set up).
    pub baseline_rss_kib: u64,
    /// W1/W1t: milliseconds from start to synced with every add handled.
    pub sync_ms: Option<f64>,
    /// W1/W1t: peak RSS of the whole run.
    pub peak_rss_kib: Option<u64>,
    /// W1/W1t/W3: RSS after sync once settled.
    pub steady_rss_kib: Option<u64>,
    /// W1/W1t: (steady - baseline) / objects, bytes.
    pub bytes_per_object: Option<f64>,
    /// W2: events delivered to each handler per second.
    pub events_per_sec: Option<f64>,
    /// W2: events each handler received.
    pub events: Option<u64>,
    /// W2: median write-to-handler latency, microseconds.
    pub latency_p50_us: Option<f64>,
    /// W2: 99th percentile write-to-handler latency, microseconds.
    pub latency_p99_us: Option<f64>,
    /// W3: milliseconds from the forced 410 to synced again.
    pub relist_ms: Option<f64>,
    /// W3: peak RSS from the forced 410 until synced again.
    pub relist_peak_rss_kib: Option<u64>,
}

impl PeerReport {
    /// A report with the identifying fields set.
    pub fn new(peer: &str, workload: Workload, n: u64) -> Self {
        Self {
            peer: peer.to_string(),
            workload: workload.as_str().to_string(),
            n,
            ..Default::default()
        }
    }

    /// The fields this workload must fill, by name, that are missing (empty when complete).
    pub fn missing_fields(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        let mut need = |ok: bool, name: &'static str| {
            if !ok {
                missing.push(name);
            }
        };
        need(self.baseline_rss_kib > 0, "baseline_rss_kib");
        match self.workload.as_str() {
            "w1" | "w1t" => {
                need(self.sync_ms.is_some(), "sync_ms");
                need(self.peak_rss_kib.is_some(), "peak_rss_kib");
                if self.peer != "floor" {
                    need(self.steady_rss_kib.is_some(), "steady_rss_kib");
                    need(self.bytes_per_object.is_some(), "bytes_per_object");
                }
            }
            "w2" => {
                need(self.events_per_sec.is_some(), "events_per_sec");
                need(self.events.is_some(), "events");
                need(self.latency_p50_us.is_some(), "latency_p50_us");
                need(self.latency_p99_us.is_some(), "latency_p99_us");
            }
            "w3" => {
                need(self.relist_ms.is_some(), "relist_ms");
                need(self.relist_peak_rss_kib.is_some(), "relist_peak_rss_kib");
                need(self.steady_rss_kib.is_some(), "steady_rss_kib");
            }
            _ => need(false, "workload"),
        }
        missing
    }
}

/// Percentile (0..=100) of sorted values by nearest rank; `None` when empty.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), Some(50.0));
        assert_eq!(percentile(&v, 99.0), Some(99.0));
        assert_eq!(percentile(&v, 100.0), Some(100.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn missing_fields_names_what_a_workload_lacks() {
        let mut r = PeerReport::new("kinformer", Workload::W3, 10);
        r.baseline_rss_kib = 1;
        assert_eq!(
            r.missing_fields(),
            vec!["relist_ms", "relist_peak_rss_kib", "steady_rss_kib"]
        );
        r.relist_ms = Some(1.0);
        r.relist_peak_rss_kib = Some(1);
        r.steady_rss_kib = Some(1);
        assert!(r.missing_fields().is_empty());
    }
}
