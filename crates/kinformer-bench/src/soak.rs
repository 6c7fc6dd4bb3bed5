//! `kinformer-bench soak` (W5): churn at a constant object count with faults, the server in
//! its own process, the kinformer peer (factory-built) in another, its RSS sampled every few
//! seconds; at the end the slope after warm-up and whether the cache converged.
//!
//! Churn, from this process through the API: every tick one pod created, the oldest deleted
//! (the count stays N) and two pods updated. Faults, every `fault_secs`, in turn: every watch
//! cut (`drop`), a compaction (`compact`; on the embedded server it also cuts the watches, so
//! the re-watch gets 410 and relists) and, on the embedded server, the next list and watch
//! requests failing with 500 and then 429 (`fail`).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::json;

use crate::control::{TS_ANNOTATION, now_nanos};
use crate::error::ReportError;
use crate::process::{parse_peer_output, start_server};
use crate::result::{HeapSample, Peer, PeerReport, Tier, Workload, slope};

/// What to run.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// Which server.
    pub tier: Tier,
    /// Pods kept on the server.
    pub pods: u64,
    /// How long to churn.
    pub duration: Duration,
    /// RSS sampling interval.
    pub sample: Duration,
    /// Churn ticks per second (each: one create, one delete, two updates).
    pub rate: u32,
    /// Seconds between faults.
    pub fault_secs: u64,
    /// Where to write `soak.md` and `soak.json`.
    pub out_dir: PathBuf,
}

/// The verdict written to `soak.json`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SoakResult {
    /// `embedded` or `real`.
    pub tier: Tier,
    /// Pods kept on the server.
    pub pods: u64,
    /// Pods on the server at the end.
    pub pods_at_end: u64,
    /// Minutes of churn.
    pub minutes: f64,
    /// Churn writes done (creates, deletes, updates) and failed.
    pub writes: u64,
    /// Churn writes that failed.
    pub write_errors: u64,
    /// Faults injected.
    pub faults: u64,
    /// Seconds excluded as warm-up.
    pub warmup_secs: f64,
    /// RSS slope after warm-up, KiB per minute.
    pub slope_kib_per_min: Option<f64>,
    /// RSS slope over the last third of the samples, KiB per minute (levelling off or not).
    pub tail_slope_kib_per_min: Option<f64>,
    /// Slope of glibc's in-use bytes over the last third of the samples, KiB per minute: live
    /// memory growing, where the RSS slope may also be the allocator keeping freed memory.
    pub tail_in_use_slope_kib_per_min: Option<f64>,
    /// Median RSS after warm-up, KiB.
    pub median_rss_kib: Option<f64>,
    /// Whether the drift over the window stays under 5 % of the median RSS.
    pub flat: bool,
    /// The peer's own report (samples, convergence).
    pub peer: PeerReport,
}

/// Warm-up: the first fifth of the run, at least one minute unless the run is shorter.
pub(crate) fn warmup(total_secs: f64) -> f64 {
    (total_secs / 5.0).max(60.0_f64.min(total_secs / 2.0))
}

/// Slope (KiB/min), median and flatness of the samples after `warmup_secs`.
pub(crate) fn assess(samples: &[(f64, u64)], warmup_secs: f64) -> (Option<f64>, Option<f64>, bool) {
    let after: Vec<(f64, f64)> = samples
        .iter()
        .filter(|(t, _)| *t >= warmup_secs)
        .map(|(t, kib)| (*t / 60.0, *kib as f64))
        .collect();
    let s = slope(&after);
    let med = crate::report_md::median(after.iter().map(|p| Some(p.1)));
    let span_min = match (after.first(), after.last()) {
        (Some(a), Some(b)) => b.0 - a.0,
        _ => 0.0,
    };
    let flat = match (s, med) {
        (Some(s), Some(m)) => (s * span_min).abs() < 0.05 * m,
        _ => false,
    };
    (s, med, flat)
}

/// Slope (KiB/min) over the last third of the samples.
pub(crate) fn tail_slope(samples: &[(f64, u64)]) -> Option<f64> {
    let tail: Vec<(f64, f64)> = samples[samples.len() - samples.len() / 3..]
        .iter()
        .map(|(t, kib)| (*t / 60.0, *kib as f64))
        .collect();
    slope(&tail)
}

/// The `(seconds, in-use KiB)` series of the samples that have one.
fn in_use(samples: &[HeapSample]) -> Vec<(f64, u64)> {
    samples
        .iter()
        .filter_map(|s| Some((s.secs, s.in_use_kib?)))
        .collect()
}

/// Runs the soak and writes `soak.md` and `soak.json`; returns the path of `soak.md`.
///
/// # Errors
/// [`ReportError`] when the server or the peer cannot start.
pub fn run(opts: &SoakOptions) -> Result<PathBuf, ReportError> {
    let exe = std::env::current_exe().map_err(|e| ReportError::Io("current_exe".into(), e))?;
    std::fs::create_dir_all(&opts.out_dir)
        .map_err(|e| ReportError::Io("create out dir".into(), e))?;
    let rt =
        tokio::runtime::Runtime::new().map_err(|e| ReportError::Io("tokio runtime".into(), e))?;
    // Keep the server (and the harness) alive until the end.
    let mut _embedded = None;
    let mut _harness = None;
    // The peer's kubeconfig (through the fault proxy on the real tier) and the churn's (direct,
    // so a cut connection never leaves a write in doubt and the pod count stays exact).
    let (kubeconfig, direct, fault): (PathBuf, PathBuf, Box<dyn Fn(u64) -> String>) =
        match opts.tier {
            Tier::Embedded => {
                let server = start_server(&exe, opts.pods)?;
                let kc = opts.out_dir.join("kubeconfig-soak-embedded");
                crate::kubeconfig::write_plain(&kc, &server.url)?;
                let control = server.control.clone();
                _embedded = Some(server);
                let faults = ["drop", "compact", "fail 500 3", "fail 429 2"];
                (
                    kc.clone(),
                    kc,
                    Box::new(move |i| {
                        let c = faults[i as usize % faults.len()];
                        crate::control::send(&control, c)
                            .map(|r| format!("{c}: {r}"))
                            .unwrap_or_else(|e| format!("{c}: {e}"))
                    }),
                )
            }
            Tier::Real => {
                let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-e2e/soak");
                let harness = crate::real::Harness::start(&dir, true)?;
                let client = rt.block_on(crate::kubeconfig::client(&harness.kubeconfig))?;
                let seeded = rt.block_on(crate::real::seed(&client, opts.pods))?;
                let proxy = rt
                    .block_on(crate::proxy::Proxy::start(harness.server))
                    .map_err(|e| ReportError::Io("proxy".into(), e))?;
                let kc = opts.out_dir.join("kubeconfig-soak-real-proxy");
                crate::kubeconfig::rewrite_server(
                    &harness.kubeconfig,
                    &kc,
                    &format!("https://{}", proxy.addr()),
                )?;
                let control = crate::real::RealControl::new(
                    rt.handle().clone(),
                    client,
                    seeded,
                    harness.compact_url.clone(),
                    Some(Arc::new(proxy)),
                );
                let direct = harness.kubeconfig.clone();
                _harness = Some(harness);
                let faults = ["drop", "compact"];
                (
                    kc,
                    direct,
                    Box::new(move |i| {
                        let c = faults[i as usize % faults.len()];
                        format!("{c}: {}", control.handle(c))
                    }),
                )
            }
        };
    let client = rt.block_on(crate::kubeconfig::client(&direct))?;
    let mut peer = Command::new(&exe)
        .args(["peer", "--peer", Peer::Kinformer.as_str()])
        .args(["--workload", Workload::W5.as_str()])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "--n",
            &opts.pods.to_string(),
            "--sample-secs",
            &opts.sample.as_secs().max(1).to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| ReportError::Io("spawn peer".into(), e))?;
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let churn = rt.spawn(churn(
        client.clone(),
        opts.rate,
        stop.clone(),
        writes.clone(),
        errors.clone(),
    ));
    let t0 = Instant::now();
    let mut faults = 0u64;
    let mut next_fault = t0 + Duration::from_secs(opts.fault_secs);
    while t0.elapsed() < opts.duration {
        std::thread::sleep(Duration::from_millis(200));
        if Instant::now() >= next_fault {
            eprintln!("soak: fault {}", fault(faults));
            faults += 1;
            next_fault += Duration::from_secs(opts.fault_secs);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = rt.block_on(churn);
    let minutes = t0.elapsed().as_secs_f64() / 60.0;
    if let Some(mut stdin) = peer.stdin.take() {
        let _ = stdin.write_all(b"stop\n");
    }
    let stdout = peer
        .stdout
        .take()
        .ok_or_else(|| ReportError::Server("peer has no stdout".into()))?;
    let text: String = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .collect::<Vec<_>>()
        .join("\n");
    let _ = peer.wait();
    let report = parse_peer_output(&text).map_err(ReportError::Server)?;
    // An injected failure may still be pending for the next list: try a few times.
    let pods_at_end = rt
        .block_on(async {
            let mut last = None;
            for _ in 0..10 {
                match count_pods(&client).await {
                    Ok(n) => return Ok(n),
                    Err(e) => last = Some(e),
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(last.map(|e| e.to_string()).unwrap_or_default())
        })
        .map_err(|e| ReportError::Server(format!("counting pods: {e}")))?;
    let total = report.rss_samples.last().map(|s| s.0).unwrap_or(0.0);
    let warm = warmup(total);
    let (s, med, flat) = assess(&report.rss_samples, warm);
    let result = SoakResult {
        tier: opts.tier,
        pods: opts.pods,
        pods_at_end,
        minutes,
        writes: writes.load(Ordering::Relaxed),
        write_errors: errors.load(Ordering::Relaxed),
        faults,
        warmup_secs: warm,
        slope_kib_per_min: s,
        tail_slope_kib_per_min: tail_slope(&report.rss_samples),
        tail_in_use_slope_kib_per_min: tail_slope(&in_use(&report.heap_samples)),
        median_rss_kib: med,
        flat,
        peer: report,
    };
    write(opts, &result)
}

async fn count_pods(client: &kube::Client) -> Result<u64, kube::Error> {
    let api: kube::Api<Pod> = kube::Api::all(client.clone());
    let mut params = ListParams::default().limit(500);
    let mut n = 0u64;
    loop {
        let page = api.list_metadata(&params).await?;
        n += page.items.len() as u64;
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(t) => params = params.continue_token(&t),
            None => return Ok(n),
        }
    }
}

/// Creates, deletes and updates pods at `rate` ticks per second until `stop`.
async fn churn(
    client: kube::Client,
    rate: u32,
    stop: Arc<AtomicBool>,
    writes: Arc<AtomicU64>,
    errors: Arc<AtomicU64>,
) {
    let api: kube::Api<Pod> = kube::Api::all(client.clone());
    let mut live: VecDeque<(String, String)> = VecDeque::new();
    let mut params = ListParams::default().limit(500);
    loop {
        match api.list_metadata(&params).await {
            Ok(page) => {
                live.extend(page.items.iter().filter_map(|p| {
                    Some((p.metadata.namespace.clone()?, p.metadata.name.clone()?))
                }));
                match page.metadata.continue_.filter(|c| !c.is_empty()) {
                    Some(t) => params = params.continue_token(&t),
                    None => break,
                }
            }
            Err(e) => {
                eprintln!("soak: cannot list pods to churn: {e}");
                return;
            }
        }
    }
    if live.is_empty() {
        eprintln!("soak: no pods to churn");
        return;
    }
    let live = Arc::new(Mutex::new(live));
    let in_flight = Arc::new(tokio::sync::Semaphore::new(64));
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate.max(1))));
    let mut i: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            return;
        };
        i += 1;
        let (client, live, writes, errors) =
            (client.clone(), live.clone(), writes.clone(), errors.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let count = |r: bool| {
                writes.fetch_add(1, Ordering::Relaxed);
                if !r {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
            };
            let (oldest, ns, targets) = {
                let mut l = live.lock();
                let oldest = l.pop_front();
                let ns = oldest.as_ref().map(|o| o.0.clone()).unwrap_or_default();
                let len = l.len().max(1) as u64;
                let targets: Vec<(String, String)> = [i * 7919, i * 104_729 + 1]
                    .iter()
                    .filter_map(|k| l.get((k % len) as usize).cloned())
                    .collect();
                (oldest, ns, targets)
            };
            let name = format!("soak-{i:08}");
            let (pod, _) = crate::real::pod_for_create(&ns, &name, i as usize);
            let created = match serde_json::from_value::<Pod>(pod) {
                Ok(pod) => kube::Api::<Pod>::namespaced(client.clone(), &ns)
                    .create(&PostParams::default(), &pod)
                    .await
                    .is_ok(),
                Err(_) => false,
            };
            count(created);
            if created {
                live.lock().push_back((ns.clone(), name));
            }
            if let Some((ons, oname)) = oldest {
                let deleted = kube::Api::<Pod>::namespaced(client.clone(), &ons)
                    .delete(&oname, &DeleteParams::default().grace_period(0))
                    .await
                    .is_ok();
                count(deleted);
                if !deleted {
                    live.lock().push_back((ons, oname));
                }
            }
            for (tns, tname) in targets {
                let patch =
                    json!({"metadata": {"annotations": {TS_ANNOTATION: now_nanos().to_string()}}});
                let ok = kube::Api::<Pod>::namespaced(client.clone(), &tns)
                    .patch(&tname, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .is_ok();
                count(ok);
            }
        });
    }
    // let the last ticks finish
    let _ = in_flight.acquire_many(64).await;
}

fn write(opts: &SoakOptions, r: &SoakResult) -> Result<PathBuf, ReportError> {
    let json = serde_json::to_string_pretty(r).unwrap_or_default();
    std::fs::write(opts.out_dir.join("soak.json"), json)
        .map_err(|e| ReportError::Io("soak.json".into(), e))?;
    let mib = |k: Option<f64>| {
        k.map(|k| format!("{:.1} MiB", k / 1024.0))
            .unwrap_or_else(|| "–".into())
    };
    let first_last = |f: fn(&HeapSample) -> Option<f64>| {
        let h = &r.peer.heap_samples;
        format!(
            "{} / {}",
            mib(h.first().and_then(f)),
            mib(h.last().and_then(f))
        )
    };
    let first = r.peer.rss_samples.first().map(|s| s.1 as f64);
    let last = r.peer.rss_samples.last().map(|s| s.1 as f64);
    let md = format!(
        "## W5: soak ({tier} server, {pods} pods, {minutes:.1} minutes)\n\n\
         | measure | value |\n|---|---|\n\
         | pods at start / end | {pods} / {end} |\n\
         | churn writes (failed) | {writes} ({errors}) |\n\
         | faults injected | {faults} (every {fault_secs} s) |\n\
         | RSS samples | {samples} (every {sample:?}) |\n\
         | RSS first / last sample | {first} / {last} |\n\
         | warm-up excluded | {warm:.0} s |\n\
         | RSS median after warm-up | {med} |\n\
         | RSS slope after warm-up | {slope} |\n\
         | RSS slope over the last third | {tail} |\n\
         | glibc in use, first / last sample | {in_use} |\n\
         | glibc in use, slope over the last third | {in_use_tail} |\n\
         | glibc free in its heaps, first / last sample | {free} |\n\
         | tasks alive, first / last sample | {tasks} |\n\
         | flat (drift < 5 % of median) | {flat} |\n\
         | converged with a fresh list at the end | {conv} |\n\
         | convergence time after churn stopped | {conv_ms} |\n",
        tier = r.tier,
        pods = r.pods,
        minutes = r.minutes,
        end = r.pods_at_end,
        writes = r.writes,
        errors = r.write_errors,
        faults = r.faults,
        fault_secs = opts.fault_secs,
        samples = r.peer.rss_samples.len(),
        sample = opts.sample,
        first = mib(first),
        last = mib(last),
        warm = r.warmup_secs,
        med = mib(r.median_rss_kib),
        slope = r
            .slope_kib_per_min
            .map(|s| format!("{s:+.1} KiB/min"))
            .unwrap_or_else(|| "–".into()),
        tail = r
            .tail_slope_kib_per_min
            .map(|s| format!("{s:+.1} KiB/min"))
            .unwrap_or_else(|| "–".into()),
        in_use = first_last(|h| h.in_use_kib.map(|k| k as f64)),
        in_use_tail = r
            .tail_in_use_slope_kib_per_min
            .map(|s| format!("{s:+.1} KiB/min"))
            .unwrap_or_else(|| "–".into()),
        free = first_last(|h| h.free_kib.map(|k| k as f64)),
        tasks = {
            let h = &r.peer.heap_samples;
            match (h.first(), h.last()) {
                (Some(a), Some(b)) => format!("{} / {}", a.tasks, b.tasks),
                _ => "–".into(),
            }
        },
        flat = if r.flat { "yes" } else { "**no**" },
        conv = match r.peer.converged {
            Some(true) => "yes",
            _ => "**no**",
        },
        conv_ms = r
            .peer
            .convergence_ms
            .map(|m| format!("{m:.0} ms"))
            .unwrap_or_else(|| "–".into()),
    );
    let path = opts.out_dir.join("soak.md");
    std::fs::write(&path, md).map_err(|e| ReportError::Io("soak.md".into(), e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_is_a_fifth_but_at_least_a_minute_of_long_runs() {
        assert_eq!(warmup(600.0), 120.0);
        assert_eq!(warmup(200.0), 60.0);
        assert_eq!(warmup(60.0), 30.0);
    }

    #[test]
    fn a_flat_series_is_flat_and_a_leak_is_not() {
        let flat: Vec<(f64, u64)> = (0..120)
            .map(|i| (f64::from(i) * 5.0, 100_000 + (i % 3) as u64 * 100))
            .collect();
        let (s, med, ok) = assess(&flat, 120.0);
        assert!(ok, "slope {s:?} median {med:?}");
        assert!(s.unwrap().abs() < 50.0);
        let leak: Vec<(f64, u64)> = (0..120)
            .map(|i| (f64::from(i) * 5.0, 100_000 + i as u64 * 200))
            .collect();
        let (s, _, ok) = assess(&leak, 120.0);
        assert!(!ok);
        assert!(
            (s.unwrap() - 2400.0).abs() < 1.0,
            "200 KiB per 5 s = 2400 KiB/min"
        );
        assert_eq!(assess(&[], 0.0), (None, None, false));
        let levelling: Vec<(f64, u64)> = (0..90)
            .map(|i| {
                (
                    f64::from(i) * 5.0,
                    if i < 60 {
                        100_000 + i as u64 * 100
                    } else {
                        106_000
                    },
                )
            })
            .collect();
        assert_eq!(
            tail_slope(&levelling),
            Some(0.0),
            "flat over the last third"
        );
        assert_eq!(tail_slope(&[]), None);
    }
}
