//! Smoke test: the kinformer peer and the floor against a small embedded server (200 pods)
//! report complete JSON for every workload they run. (The Go peer is not run in tests.)

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use kinformer_bench::peers::{self, PeerArgs};
use kinformer_bench::{PeerReport, Workload};

const PODS: u64 = 200;

async fn server() -> (Arc<kinformer_apiserver::RunningServer>, String) {
    let server = kinformer_apiserver::start(kinformer_apiserver::ServerConfig::default())
        .await
        .expect("server starts");
    server.seed_pods(PODS as usize, 4).expect("seeded");
    let server = Arc::new(server);
    let listener = TcpListener::bind("127.0.0.1:0").expect("control port");
    let addr = listener.local_addr().expect("addr").to_string();
    let s = server.clone();
    std::thread::spawn(move || kinformer_bench::control::serve(listener, s));
    (server, addr)
}

fn args(server: &kinformer_apiserver::RunningServer, control: &str, w: Workload) -> PeerArgs {
    PeerArgs {
        url: server.base_url(),
        control: Some(control.to_string()),
        n: PODS,
        workload: w,
        updates: 500,
        timeout: Duration::from_secs(60),
    }
}

/// Round-trips through JSON as the orchestrator reads it, and checks completeness.
fn check(report: PeerReport, peer: &str, w: Workload) {
    let json = serde_json::to_string(&report).expect("serializes");
    let back: PeerReport = serde_json::from_str(&json).expect("parses");
    // serde_json's default float parsing may land one ulp away from the printed value, so the
    // floats are compared with a tolerance and everything else exactly.
    let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(1.0),
        (None, None) => true,
        _ => false,
    };
    for (name, a, b) in [
        ("sync_ms", back.sync_ms, report.sync_ms),
        (
            "bytes_per_object",
            back.bytes_per_object,
            report.bytes_per_object,
        ),
        ("events_per_sec", back.events_per_sec, report.events_per_sec),
        ("latency_p50_us", back.latency_p50_us, report.latency_p50_us),
        ("latency_p99_us", back.latency_p99_us, report.latency_p99_us),
        ("relist_ms", back.relist_ms, report.relist_ms),
    ] {
        assert!(
            close(a, b),
            "{peer} {w:?} {name}: {a:?} != {b:?} after JSON"
        );
    }
    let exact = |r: &PeerReport| {
        (
            r.baseline_rss_kib,
            r.peak_rss_kib,
            r.steady_rss_kib,
            r.events,
            r.relist_peak_rss_kib,
        )
    };
    assert_eq!(exact(&back), exact(&report));
    assert_eq!(back.peer, peer);
    assert_eq!(back.workload, w.as_str());
    assert_eq!(back.n, PODS);
    assert_eq!(back.objects, PODS, "{peer} {w:?} cached/decoded every pod");
    assert!(
        back.missing_fields().is_empty(),
        "{peer} {w:?} missing {:?} in {json}",
        back.missing_fields()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinformer_and_floor_report_complete_json() {
    let (server, control) = server().await;
    let floor = peers::run("floor", &args(&server, &control, Workload::W1))
        .await
        .expect("floor runs");
    check(floor, "floor", Workload::W1);
    for w in [Workload::W1, Workload::W1t, Workload::W3, Workload::W2] {
        let r = peers::run("kinformer", &args(&server, &control, w))
            .await
            .unwrap_or_else(|e| panic!("kinformer {w:?}: {e}"));
        if w == Workload::W2 {
            assert_eq!(
                r.events,
                Some(500),
                "every update reached the first handler"
            );
        }
        check(r, "kinformer", w);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_peer_is_an_error() {
    let (server, control) = server().await;
    let err = peers::run("nope", &args(&server, &control, Workload::W1)).await;
    assert!(matches!(err, Err(peers::PeerError::UnknownPeer(p)) if p == "nope"));
}
