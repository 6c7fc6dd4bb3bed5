//! Smoke test: the kinformer peer (factory-built) and the floors against a small embedded
//! server (200 pods), connecting through a kubeconfig as every peer does, report complete JSON
//! for every workload they run. (The Go peer is not run in tests.)

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use kinformer_bench::peers::{self, PeerArgs};
use kinformer_bench::{Peer, PeerReport, Workload};

const PODS: u64 = 200;

struct Fixture {
    _server: Arc<kinformer_apiserver::RunningServer>,
    control: String,
    kubeconfig: std::path::PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}

async fn server(name: &str) -> Fixture {
    let server = kinformer_apiserver::start(kinformer_apiserver::ServerConfig::default())
        .await
        .expect("server starts");
    server.seed_pods(PODS as usize, 4).expect("seeded");
    let server = Arc::new(server);
    let listener = TcpListener::bind("127.0.0.1:0").expect("control port");
    let addr = listener.local_addr().expect("addr").to_string();
    let s = server.clone();
    std::thread::spawn(move || kinformer_bench::control::serve(listener, s));
    let kubeconfig = std::env::temp_dir().join(format!(
        "kinformer-bench-smoke-{name}-{}",
        std::process::id()
    ));
    kinformer_bench::kubeconfig::write_plain(&kubeconfig, &server.base_url()).expect("kubeconfig");
    Fixture {
        _server: server,
        control: addr,
        kubeconfig,
    }
}

fn args(f: &Fixture, w: Workload) -> PeerArgs {
    PeerArgs {
        kubeconfig: Some(f.kubeconfig.clone()),
        url: None,
        control: Some(f.control.clone()),
        n: PODS,
        workload: w,
        updates: 500,
        timeout: Duration::from_secs(60),
        sample: Duration::from_secs(1),
    }
}

/// Round-trips through JSON as the orchestrator reads it, and checks completeness.
fn check(report: PeerReport, peer: Peer, w: Workload) {
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
    assert_eq!((back.peer, back.workload), (peer, w));
    assert_eq!(back.n, PODS);
    assert_eq!(back.objects, PODS, "{peer} {w:?} cached/decoded every pod");
    assert!(
        back.missing_fields().is_empty(),
        "{peer} {w:?} missing {:?} in {json}",
        back.missing_fields()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinformer_and_floors_report_complete_json() {
    let f = server("k").await;
    for (peer, w) in [
        (Peer::FloorPaged, Workload::W1),
        (Peer::FloorUnpaged, Workload::W1),
    ] {
        let r = peers::run(peer, &args(&f, w))
            .await
            .unwrap_or_else(|e| panic!("{peer:?}: {e}"));
        check(r, peer, w);
    }
    for w in [Workload::W1, Workload::W1t, Workload::W3, Workload::W2] {
        let r = peers::run(Peer::Kinformer, &args(&f, w))
            .await
            .unwrap_or_else(|e| panic!("kinformer {w:?}: {e}"));
        if w == Workload::W2 {
            assert_eq!(
                r.events,
                Some(500),
                "every update reached the first handler"
            );
        }
        check(r, Peer::Kinformer, w);
    }
    let r = peers::run(Peer::FloorWatch, &args(&f, Workload::W2))
        .await
        .expect("the watch floor runs");
    assert_eq!(r.events, Some(500), "the watch floor decoded every update");
    check(r, Peer::FloorWatch, Workload::W2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_relists_after_the_forced_410() {
    let f = server("kr").await;
    let r = peers::run(Peer::KubeRs, &args(&f, Workload::W3))
        .await
        .expect("kube-rs W3 runs");
    check(r, Peer::KubeRs, Workload::W3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_refuse_what_they_do_not_run() {
    let f = server("u").await;
    for (peer, w) in [
        (Peer::ClientGo, Workload::W1),
        (Peer::FloorPaged, Workload::W2),
        (Peer::FloorWatch, Workload::W1),
        (Peer::KubeRs, Workload::W5),
    ] {
        let err = peers::run(peer, &args(&f, w)).await;
        assert!(
            matches!(err, Err(peers::PeerError::Unsupported(p, _)) if p == peer),
            "{peer:?} {w:?}: {err:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_kubeconfig_is_a_client_error() {
    let f = server("m").await;
    let mut a = args(&f, Workload::W1);
    a.kubeconfig = Some("/nonexistent/kubeconfig".into());
    let err = peers::run(Peer::Kinformer, &a).await;
    assert!(matches!(err, Err(peers::PeerError::Client(_))), "{err:?}");
}
