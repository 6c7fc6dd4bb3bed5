//! Server-side speed: a LIST of 100,000 realistic pods (~3.5 KB each) and 100,000 watch
//! events, read by a minimal raw-TCP client so the figures measure the server; and in-process
//! seeding of 10,000 pods.
//!
//! Run: `cargo bench -p kinformer-apiserver --bench serve -- --warm-up-time 1 --measurement-time 3`

use std::net::SocketAddr;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kinformer_apiserver::{HistoryConfig, RunningServer, ServerConfig, seed, start};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const N: usize = 100_000;

/// Sends a GET and reads the response until `done(bytes_so_far, newlines_so_far)`; returns
/// (bytes, newlines).
async fn read_get(addr: SocketAddr, path: &str, stop_at_newlines: Option<usize>) -> (usize, usize) {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.set_nodelay(true).ok();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut buf = vec![0u8; 1 << 20];
    let (mut bytes, mut lines) = (0, 0);
    loop {
        let n = s.read(&mut buf).await.expect("read");
        if n == 0 {
            break;
        }
        bytes += n;
        lines += buf[..n].iter().filter(|b| **b == b'\n').count();
        if stop_at_newlines.is_some_and(|want| lines >= want) {
            break;
        }
    }
    (bytes, lines)
}

fn server(rt: &tokio::runtime::Runtime) -> RunningServer {
    rt.block_on(async {
        let history = HistoryConfig {
            max_events: 4 * N,
            max_age: None,
        };
        start(
            ServerConfig::default()
                .history(history)
                .record_requests(false),
        )
        .await
        .expect("start")
    })
}

fn list_100k_pods(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let s = server(&rt);
    let _ = rt.block_on(async { s.seed_pods(N, 10) }).expect("seed");
    let addr = s.addr();
    let (bytes, _) = rt.block_on(read_get(addr, "/api/v1/pods", None));
    eprintln!("LIST of {N} pods: {:.1} MB", bytes as f64 / 1e6);
    let mut g = c.benchmark_group("list");
    g.sample_size(10);
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("100k_pods", |b| {
        b.iter(|| rt.block_on(read_get(addr, "/api/v1/pods", None)))
    });
    g.bench_function("100k_pods_paged_500", |b| {
        b.iter(|| {
            rt.block_on(async {
                // Pages of 500 through the continue tokens, as client-go's reflector lists.
                let mut token: Option<String> = None;
                let mut total = 0;
                loop {
                    let path = match &token {
                        Some(t) => format!("/api/v1/pods?limit=500&continue={t}"),
                        None => "/api/v1/pods?limit=500".to_string(),
                    };
                    let page = get_json(addr, &path).await;
                    total += page.items;
                    match page.continue_token {
                        Some(t) => token = Some(t),
                        None => break,
                    }
                }
                assert_eq!(total, N);
            })
        })
    });
    g.finish();
    rt.block_on(s.shutdown());
}

struct Page {
    items: usize,
    continue_token: Option<String>,
}

/// Reads a list page, counting items and extracting `metadata.continue` without parsing the
/// whole body (the benchmark measures the server, not a JSON parser).
async fn get_json(addr: SocketAddr, path: &str) -> Page {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.expect("read");
    let text = String::from_utf8_lossy(&raw);
    let continue_token = text.find("\"continue\":\"").map(|i| {
        let rest = &text[i + 12..];
        rest[..rest.find('"').unwrap_or(0)].to_string()
    });
    // List items carry no kind (as kube-apiserver's); each has one resourceVersion, and so has
    // the list's metadata.
    let items = text
        .matches("\"resourceVersion\":")
        .count()
        .saturating_sub(1);
    Page {
        items,
        continue_token,
    }
}

fn watch_100k_events(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut g = c.benchmark_group("watch");
    g.sample_size(10);
    g.throughput(Throughput::Elements(N as u64));
    for (label, resource) in [
        ("100k_pod_events", "pods"),
        ("100k_configmap_events", "configmaps"),
    ] {
        let s = server(&rt);
        let from = s.revision();
        if resource == "pods" {
            let _ = s.seed_pods(N, 10).expect("seed");
        } else {
            s.seed(
                "configmaps",
                (0..N).map(|i| seed::configmap("default", &format!("cm-{i:06}"), 4)),
            )
            .expect("seed");
        }
        let addr = s.addr();
        let path = format!("/api/v1/{resource}?watch=true&resourceVersion={from}");
        g.bench_function(label, |b| {
            b.iter(|| {
                let (_, lines) = rt.block_on(read_get(addr, &path, Some(N)));
                assert!(lines >= N);
            })
        });
        rt.block_on(s.shutdown());
    }
    // Live: events written while the client watches (includes the write path).
    g.throughput(Throughput::Elements(10_000));
    let s = server(&rt);
    let addr = s.addr();
    g.bench_function("10k_live_configmap_events", |b| {
        b.iter(|| {
            rt.block_on(async {
                let from = s.revision();
                let path = format!("/api/v1/configmaps?watch=true&resourceVersion={from}");
                let reader = tokio::spawn(async move { read_get(addr, &path, Some(10_000)).await });
                let names: Vec<String> = (0..10_000).map(|i| format!("live-{from}-{i}")).collect();
                s.seed(
                    "configmaps",
                    names.iter().map(|n| seed::configmap("default", n, 4)),
                )
                .expect("seed");
                let (_, lines) = reader.await.expect("reader");
                assert!(lines >= 10_000);
            })
        })
    });
    g.finish();
    rt.block_on(s.shutdown());
}

/// In-process seeding (no HTTP): validation, server metadata and serialization per object.
fn seed_10k_pods(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut g = c.benchmark_group("seed");
    g.sample_size(10);
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("10k_pods", |b| {
        b.iter_batched(
            || server(&rt),
            |s| {
                s.seed_pods(10_000, 10).expect("seed");
                rt.block_on(s.shutdown());
            },
            criterion::BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = list_100k_pods, watch_100k_events, seed_10k_pods
}
criterion_main!(benches);
