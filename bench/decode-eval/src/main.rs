//! Decodes the same Kubernetes bodies with serde_json, sonic-rs and simd-json into the same
//! k8s-openapi types, single-threaded, and prints the best of several runs.
//!
//! Usage: `cargo run --release -- LIST.json WATCH.jsonl [runs]`, where LIST.json is a PodList
//! body and WATCH.jsonl one watch event per line (what `?watch=1` streams).

use std::time::{Duration, Instant};

use k8s_openapi::List;
use k8s_openapi::api::core::v1::Pod;
use serde::Deserialize;

#[derive(Deserialize)]
struct WatchEvent {
    #[serde(rename = "type")]
    _kind: String,
    object: Pod,
}

fn best<F: FnMut() -> usize>(runs: usize, mut f: F) -> (Duration, usize) {
    let mut best = Duration::MAX;
    let mut n = 0;
    for _ in 0..runs {
        let t = Instant::now();
        n = f();
        best = best.min(t.elapsed());
    }
    (best, n)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let list = std::fs::read(&args[1]).expect("list body");
    let watch = std::fs::read(&args[2]).expect("watch body");
    let runs: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(5);
    let lines: Vec<&[u8]> = watch
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    println!(
        "list body {:.1} MB, watch {} events ({:.1} MB); best of {runs}, one thread",
        list.len() as f64 / 1e6,
        lines.len(),
        watch.len() as f64 / 1e6
    );
    let report = |name: &str, what: &str, (d, n): (Duration, usize), bytes: usize| {
        println!(
            "{name:<11} {what:<6} {:>8.1} ms  {:>7.0} MB/s  {n} objects",
            d.as_secs_f64() * 1e3,
            bytes as f64 / 1e6 / d.as_secs_f64()
        );
    };
    report(
        "serde_json",
        "list",
        best(runs, || {
            serde_json::from_slice::<List<Pod>>(&list)
                .unwrap()
                .items
                .len()
        }),
        list.len(),
    );
    report(
        "sonic-rs",
        "list",
        best(runs, || {
            sonic_rs::from_slice::<List<Pod>>(&list)
                .unwrap()
                .items
                .len()
        }),
        list.len(),
    );
    report(
        "simd-json",
        "list",
        best(runs, || {
            let mut buf = list.clone(); // simd-json decodes in place
            simd_json::serde::from_slice::<List<Pod>>(&mut buf)
                .unwrap()
                .items
                .len()
        }),
        list.len(),
    );
    report(
        "serde_json",
        "watch",
        best(runs, || {
            lines
                .iter()
                .map(|l| {
                    serde_json::from_slice::<WatchEvent>(l)
                        .map(|e| e.object)
                        .unwrap()
                })
                .count()
        }),
        watch.len(),
    );
    report(
        "sonic-rs",
        "watch",
        best(runs, || {
            lines
                .iter()
                .map(|l| {
                    sonic_rs::from_slice::<WatchEvent>(l)
                        .map(|e| e.object)
                        .unwrap()
                })
                .count()
        }),
        watch.len(),
    );
    report(
        "simd-json",
        "watch",
        best(runs, || {
            lines
                .iter()
                .map(|l| {
                    let mut buf = l.to_vec();
                    simd_json::serde::from_slice::<WatchEvent>(&mut buf)
                        .map(|e| e.object)
                        .unwrap()
                })
                .count()
        }),
        watch.len(),
    );
}
