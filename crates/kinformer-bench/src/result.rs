//! What a peer reports: one JSON object on stdout per run, and the names that identify it
//! (peer, workload, tier). The names are enums end to end; serde and clap spell them as the
//! JSON and the command line always have (`kinformer-delta-fifo`, `w1t`, `embedded`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// A workload (see docs/benchmarks.md for the exact definitions).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
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
    /// Soak: churn at a constant object count with faults; RSS sampled; convergence at the end.
    W5,
}

impl Workload {
    /// The command-line / JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            Workload::W1 => "w1",
            Workload::W1t => "w1t",
            Workload::W2 => "w2",
            Workload::W3 => "w3",
            Workload::W5 => "w5",
        }
    }
}

/// A tier: which server the peers talk to.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// The embedded API server in its own process.
    Embedded,
    /// kube-apiserver v1.36.3 from the e2e harness.
    Real,
}

impl Tier {
    /// The name used in results and the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Embedded => "embedded",
            Tier::Real => "real",
        }
    }
}

/// A peer: one library (or floor) set up the same way on every server.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Peer {
    /// kinformer built as the README builds it: `SharedInformerFactory`, `informer::<Pod>()`.
    Kinformer,
    /// kinformer's metadata-only informer from the same factory:
    /// `metadata_informer::<Pod>()` (W1, W1t).
    KinformerMetadata,
    /// The metadata-only informer with the lean cache (`cache_mode(CacheMode::Lean)`): each
    /// `PartialObjectMeta<Pod>` kept compressed (W1, W1t).
    KinformerMetadataLean,
    /// kinformer on client-go ≤ 1.35's queue: the factory with `QueueMode::DeltaFifo` (W2, W3).
    KinformerDeltaFifo,
    /// The same with the factory's `cache_mode(CacheMode::Lean)`: objects kept compressed.
    KinformerLean,
    /// kinformer listing first (`initial_list(InitialListMode::ListThenWatch)`: client-go
    /// before 1.35) instead of the default streaming list (W1, W1t)
    KinformerList,
    /// kinformer on JSON (`wire_format(WireFormat::Json)`), as before it spoke protobuf (W1,
    /// W1t, W2).
    KinformerJson,
    /// kube-rs: `watcher` + `reflector`.
    KubeRs,
    /// client-go on protobuf (what client-go does for built-in types in the field).
    ClientGo,
    /// client-go forced onto JSON.
    ClientGoJson,
    /// client-go's metadata informer (`k8s.io/client-go/metadata/metadatainformer`; protobuf
    /// where the server has it) (W1, W1t).
    ClientGoMetadata,
    /// W1 floor: pages of 500, each decoded on every core, no cache.
    FloorPaged,
    /// W1 floor: one response, decoded on every core while it downloads, no cache.
    FloorUnpaged,
    /// W1 floor: one streaming list (the informers' first request), every event decoded, no
    /// cache.
    FloorStreaming,
    /// W2 floor: the same watch events decoded, no cache, no handlers.
    FloorWatch,
}

impl Peer {
    /// The command-line / JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            Peer::Kinformer => "kinformer",
            Peer::KinformerMetadata => "kinformer-metadata",
            Peer::KinformerMetadataLean => "kinformer-metadata-lean",
            Peer::KinformerDeltaFifo => "kinformer-delta-fifo",
            Peer::KinformerLean => "kinformer-lean",
            Peer::KinformerJson => "kinformer-json",
            Peer::KinformerList => "kinformer-list",
            Peer::KubeRs => "kube-rs",
            Peer::ClientGo => "client-go",
            Peer::ClientGoJson => "client-go-json",
            Peer::ClientGoMetadata => "client-go-metadata",
            Peer::FloorPaged => "floor-paged",
            Peer::FloorUnpaged => "floor-unpaged",
            Peer::FloorStreaming => "floor-streaming",
            Peer::FloorWatch => "floor-watch",
        }
    }

    /// Whether this peer is the Go binary.
    pub fn is_go(self) -> bool {
        matches!(
            self,
            Peer::ClientGo | Peer::ClientGoJson | Peer::ClientGoMetadata
        )
    }

    /// Whether this peer runs `workload`: the metadata-only peers run W1 and W1t (sync time
    /// and memory per cached object), the DeltaFifo variant W2 and W3 (where the queue
    /// matters), the floors their own workloads, every other peer all of them.
    pub fn runs(self, workload: Workload) -> bool {
        match self {
            Peer::KinformerMetadata | Peer::KinformerMetadataLean | Peer::ClientGoMetadata => {
                matches!(workload, Workload::W1 | Workload::W1t)
            }
            Peer::KinformerDeltaFifo => matches!(workload, Workload::W2 | Workload::W3),
            Peer::KinformerLean => matches!(workload, Workload::W1 | Workload::W1t | Workload::W3),
            Peer::KinformerJson => matches!(workload, Workload::W1 | Workload::W1t | Workload::W2),
            Peer::KinformerList => matches!(workload, Workload::W1 | Workload::W1t),
            Peer::FloorPaged | Peer::FloorUnpaged | Peer::FloorStreaming => {
                workload == Workload::W1
            }
            Peer::FloorWatch => workload == Workload::W2,
            Peer::Kinformer | Peer::KubeRs | Peer::ClientGo | Peer::ClientGoJson => true,
        }
    }

    /// Whether this peer is a floor (no cache, no handlers).
    pub fn is_floor(self) -> bool {
        matches!(
            self,
            Peer::FloorPaged | Peer::FloorUnpaged | Peer::FloorStreaming | Peer::FloorWatch
        )
    }
}

/// Each name prints as it reads in JSON and on the command line (`as_str`).
macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
display_as_str!(Workload, Tier, Peer);

/// One run of one peer on one workload. Fields a workload does not measure are `None`.
///
/// Memory figures are KiB of resident set size of the peer process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerReport {
    /// The peer (`"peer": "kinformer-lean"`).
    pub peer: Peer,
    /// The tier (`"tier": "embedded"`), set by the orchestrator; a peer's own line has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    /// The workload (`"workload": "w1t"`).
    pub workload: Workload,
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
    /// W1/W1t: (RSS when synced with every add handled - baseline) / objects, bytes: what a
    /// program reading its memory when the informer has synced sees (nothing released by the
    /// bench, no settling). The Rust peers only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_object_at_sync: Option<f64>,
    /// W1/W1t: CPU time (user and system, every thread) the peer process used from start to
    /// synced, milliseconds: with `sync_ms`, how many cores the sync kept busy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ms_at_sync: Option<f64>,
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
    /// W5: `(seconds since sync, RSS KiB)` sampled every few seconds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rss_samples: Vec<(f64, u64)>,
    /// W5: what the process holds besides its RSS, sampled with it (see `HeapSample`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heap_samples: Vec<HeapSample>,
    /// W5: whether the cache matched a fresh list once the churn stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub converged: Option<bool>,
    /// W5: milliseconds from the end of the churn until the cache matched a fresh list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convergence_ms: Option<f64>,
}

/// One W5 sample of what the peer holds, taken with an RSS sample: enough to tell live memory
/// (the allocator's in-use figure, the tasks, the cached objects) from memory the allocator
/// keeps.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HeapSample {
    /// Seconds since sync.
    pub secs: f64,
    /// glibc's in-use bytes (`mallinfo2`: `uordblks` + `hblkhd`), KiB; absent on other
    /// allocators.
    pub in_use_kib: Option<u64>,
    /// glibc's free bytes inside its heaps (`fordblks`), KiB.
    pub free_kib: Option<u64>,
    /// Tasks alive on the peer's tokio runtime.
    pub tasks: u64,
    /// Objects in the informer's cache.
    pub cached: u64,
    /// Adds the first handler was told so far (a jump: a list added objects).
    pub adds: u64,
    /// Updates the first handler was told so far (a jump: a relist's sync updates).
    pub updates: u64,
}

impl PeerReport {
    /// A report with the identifying fields set and nothing measured.
    pub fn new(peer: Peer, workload: Workload, n: u64) -> Self {
        Self {
            peer,
            tier: None,
            workload,
            n,
            objects: 0,
            baseline_rss_kib: 0,
            sync_ms: None,
            peak_rss_kib: None,
            steady_rss_kib: None,
            bytes_per_object: None,
            bytes_per_object_at_sync: None,
            cpu_ms_at_sync: None,
            events_per_sec: None,
            events: None,
            latency_p50_us: None,
            latency_p99_us: None,
            relist_ms: None,
            relist_peak_rss_kib: None,
            rss_samples: Vec::new(),
            heap_samples: Vec::new(),
            converged: None,
            convergence_ms: None,
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
        match self.workload {
            Workload::W1 | Workload::W1t => {
                need(self.sync_ms.is_some(), "sync_ms");
                need(self.peak_rss_kib.is_some(), "peak_rss_kib");
                if !self.peer.is_floor() {
                    need(self.steady_rss_kib.is_some(), "steady_rss_kib");
                    need(self.bytes_per_object.is_some(), "bytes_per_object");
                }
            }
            Workload::W2 => {
                need(self.events_per_sec.is_some(), "events_per_sec");
                need(self.events.is_some(), "events");
                need(self.latency_p50_us.is_some(), "latency_p50_us");
                need(self.latency_p99_us.is_some(), "latency_p99_us");
            }
            Workload::W3 => {
                need(self.relist_ms.is_some(), "relist_ms");
                need(self.relist_peak_rss_kib.is_some(), "relist_peak_rss_kib");
                need(self.steady_rss_kib.is_some(), "steady_rss_kib");
            }
            Workload::W5 => {
                need(!self.rss_samples.is_empty(), "rss_samples");
                need(self.converged.is_some(), "converged");
            }
        }
        missing
    }
}

/// Percentile (0..=100) of sorted values by nearest rank; `None` when empty.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Least-squares slope of `(x, y)` points, `y` units per `x` unit; `None` with fewer than two
/// distinct `x`.
pub(crate) fn slope(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    Some(sxy / sxx)
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
    fn slope_of_a_line_and_of_too_few_points() {
        let line: Vec<(f64, f64)> = (0..10)
            .map(|x| (f64::from(x), 3.0 * f64::from(x) + 7.0))
            .collect();
        assert!((slope(&line).unwrap() - 3.0).abs() < 1e-9);
        let flat: Vec<(f64, f64)> = (0..10).map(|x| (f64::from(x), 5.0)).collect();
        assert_eq!(slope(&flat), Some(0.0));
        assert_eq!(slope(&[(1.0, 2.0)]), None);
        assert_eq!(slope(&[(1.0, 2.0), (1.0, 3.0)]), None, "no spread in x");
    }

    /// Every variant's JSON name, command-line name and `as_str` are one spelling.
    fn names_agree<T>()
    where
        T: clap::ValueEnum + Serialize + for<'de> Deserialize<'de> + fmt::Display + PartialEq,
        T: fmt::Debug,
    {
        for v in T::value_variants() {
            let name = v.to_string();
            let json = serde_json::to_string(v).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(&serde_json::from_str::<T>(&json).unwrap(), v);
            let cli = v.to_possible_value().unwrap();
            assert_eq!(cli.get_name(), name, "{v:?}");
        }
    }

    #[test]
    fn names_are_the_same_in_json_on_the_command_line_and_in_the_report() {
        names_agree::<Peer>();
        names_agree::<Workload>();
        names_agree::<Tier>();
        assert_eq!(Peer::KinformerDeltaFifo.to_string(), "kinformer-delta-fifo");
        assert_eq!(Workload::W1t.to_string(), "w1t");
        assert_eq!(Tier::Embedded.to_string(), "embedded");
        assert!(Peer::ClientGoJson.is_go() && !Peer::Kinformer.is_go());
        assert!(Peer::FloorWatch.is_floor() && !Peer::KubeRs.is_floor());
    }

    #[test]
    fn w5_needs_samples_and_a_convergence_verdict() {
        let mut r = PeerReport::new(Peer::Kinformer, Workload::W5, 10);
        r.baseline_rss_kib = 1;
        assert_eq!(r.missing_fields(), vec!["rss_samples", "converged"]);
        r.rss_samples.push((0.0, 1));
        r.converged = Some(true);
        assert!(r.missing_fields().is_empty());
    }

    #[test]
    fn missing_fields_names_what_a_workload_lacks() {
        let mut r = PeerReport::new(Peer::Kinformer, Workload::W3, 10);
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

    /// Report lines as the client-go peer prints them (Go's `encoding/json` of its `report`
    /// struct, bench/peers/client-go/main.go: no `tier`, no W5 fields, `null` for what the
    /// workload does not measure). Go writes a whole-number float without a fraction (`10848`)
    /// where serde_json writes `10848.0`: the same value, so these lines avoid one.
    const GO_LINES: [&str; 2] = [
        r#"{"peer":"client-go","workload":"w1","n":2000,"objects":2000,"baseline_rss_kib":28604,"sync_ms":88.691796,"peak_rss_kib":56880,"steady_rss_kib":49792,"bytes_per_object":10848.256,"events_per_sec":null,"events":null,"latency_p50_us":null,"latency_p99_us":null,"relist_ms":null,"relist_peak_rss_kib":null}"#,
        r#"{"peer":"client-go-json","workload":"w2","n":1000,"objects":1000,"baseline_rss_kib":28696,"sync_ms":null,"peak_rss_kib":null,"steady_rss_kib":40484,"bytes_per_object":null,"events_per_sec":35754.83700039276,"events":5000,"latency_p50_us":252077.349,"latency_p99_us":286198.691,"relist_ms":null,"relist_peak_rss_kib":null}"#,
    ];

    #[test]
    fn a_go_peer_line_reads_and_writes_back_unchanged() {
        for line in GO_LINES {
            let r: PeerReport = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&r).unwrap(), line);
        }
        let r: PeerReport = serde_json::from_str(GO_LINES[1]).unwrap();
        assert_eq!(
            (r.peer, r.tier, r.workload, r.n),
            (Peer::ClientGoJson, None, Workload::W2, 1000)
        );
    }

    /// Three entries of the `results.json` that `report --quick` wrote before the report's
    /// peer, tier and workload were typed.
    const RESULTS_JSON: &str = r#"[
  {
    "peer": "client-go-metadata",
    "tier": "embedded",
    "workload": "w1",
    "n": 2000,
    "objects": 2000,
    "baseline_rss_kib": 28480,
    "sync_ms": 72.656253,
    "peak_rss_kib": 40388,
    "steady_rss_kib": 38144,
    "bytes_per_object": 4947.968,
    "events_per_sec": null,
    "events": null,
    "latency_p50_us": null,
    "latency_p99_us": null,
    "relist_ms": null,
    "relist_peak_rss_kib": null
  },
  {
    "peer": "kinformer-lean",
    "tier": "embedded",
    "workload": "w3",
    "n": 2000,
    "objects": 2000,
    "baseline_rss_kib": 10564,
    "sync_ms": null,
    "peak_rss_kib": null,
    "steady_rss_kib": 30760,
    "bytes_per_object": null,
    "events_per_sec": null,
    "events": null,
    "latency_p50_us": null,
    "latency_p99_us": null,
    "relist_ms": 1276.104046,
    "relist_peak_rss_kib": 78920
  },
  {
    "peer": "kinformer",
    "tier": "embedded",
    "workload": "w2",
    "n": 1000,
    "objects": 1000,
    "baseline_rss_kib": 10704,
    "sync_ms": null,
    "peak_rss_kib": null,
    "steady_rss_kib": 46684,
    "bytes_per_object": null,
    "events_per_sec": 40332.721473819445,
    "events": 5000,
    "latency_p50_us": 253356.247,
    "latency_p99_us": 290279.482,
    "relist_ms": null,
    "relist_peak_rss_kib": null
  }
]"#;

    #[test]
    fn an_earlier_results_json_loads_and_writes_back_unchanged() {
        let results: Vec<PeerReport> = serde_json::from_str(RESULTS_JSON).unwrap();
        let names: Vec<_> = results
            .iter()
            .map(|r| (r.peer, r.tier, r.workload))
            .collect();
        assert_eq!(
            names,
            [
                (Peer::ClientGoMetadata, Some(Tier::Embedded), Workload::W1),
                (Peer::KinformerLean, Some(Tier::Embedded), Workload::W3),
                (Peer::Kinformer, Some(Tier::Embedded), Workload::W2),
            ]
        );
        assert_eq!(
            serde_json::to_string_pretty(&results).unwrap(),
            RESULTS_JSON
        );
    }
}
