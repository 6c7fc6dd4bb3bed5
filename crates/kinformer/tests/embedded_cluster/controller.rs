//! The example controller (`examples/controller.rs`) against the embedded API server: it
//! converges under churn and injected faults (failed creates and updates, dropped watches,
//! compaction with 410 Gone on rewatch).

use crate::controller_example as example;

use std::time::Duration;

#[tokio::test]
async fn example_controller_converges_under_churn_and_faults() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    let mut options = example::Options::default();
    (
        options.initial,
        options.rounds,
        options.faults,
        options.workers,
    ) = (25, 8, true, 3);
    options.limit = Duration::from_secs(60);
    let (summaries, stats) = example::run(&server, options).await.unwrap();
    // 25 initial + 3 per round, minus the 8 deleted.
    assert_eq!(summaries, 25 + 3 * 8 - 8);
    assert!(
        stats.errors() > 0,
        "the injected write failures were never hit"
    );
    assert!(
        stats.cache_waits() > 0,
        "the next reconcile of a Deployment waited for its summary's write"
    );
    assert_eq!(stats.panics(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn example_controller_converges_without_faults_with_one_worker_without_read_your_writes() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    let mut options = example::Options::default();
    (
        options.initial,
        options.rounds,
        options.faults,
        options.workers,
    ) = (10, 3, false, 1);
    options.limit = Duration::from_secs(60);
    options.read_your_writes = false; // `--no-read-your-writes`
    let (summaries, stats) = example::run(&server, options).await.unwrap();
    assert_eq!(summaries, 10 + 3 * 3 - 3);
    assert_eq!(stats.cache_waits(), 0, "read-your-writes is off");
    assert_eq!(stats.panics(), 0);
    server.shutdown().await;
}

/// The example leaves a deleted Deployment's summary to the server's garbage collector, as a
/// controller on a real cluster does: with the collector switched off, the summaries of the
/// deleted Deployments stay behind and the run never converges.
#[tokio::test]
async fn example_controller_relies_on_the_servers_garbage_collector() {
    let server = kinformer_apiserver::start(
        kinformer_apiserver::ServerConfig::default().garbage_collector(false),
    )
    .await
    .unwrap();
    let mut options = example::Options::default();
    (
        options.initial,
        options.rounds,
        options.faults,
        options.workers,
    ) = (6, 2, false, 2);
    options.limit = Duration::from_secs(3);
    let err = example::run(&server, options).await.unwrap_err();
    // The summaries of Deployments deleted after the controller made them stay behind (one
    // deleted early may never have had one).
    assert!(
        err.contains("orphans") && !err.contains(", 0 orphans"),
        "{err}"
    );
    server.shutdown().await;
}

/// Short leases for the leader-election runs: 3 s / 2 s / 0.5 s.
fn fast_election(identity: &str) -> example::ElectionOptions {
    example::ElectionOptions {
        identity: identity.to_owned(),
        durations: (
            Duration::from_secs(3),
            Duration::from_secs(2),
            Duration::from_millis(500),
        ),
        workers: 2,
        read_your_writes: true,
    }
}

/// A client of its own, from the server's kubeconfig, as another process would build it.
async fn own_client(server: &kinformer_apiserver::RunningServer) -> kube::Client {
    let kc = kube::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

fn lease_holder(server: &kinformer_apiserver::RunningServer) -> Option<String> {
    server
        .get::<k8s_openapi::api::coordination::v1::Lease>(Some("default"), example::LEASE_NAME)
        .ok()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty())
}

/// Polls every 50 ms until `done` holds, for at most `limit`.
async fn eventually(what: &str, limit: Duration, done: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "gave up waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Two instances of the example with leader election (each its own client, caches and
/// queue): one leads and converges the summaries; killed (its task aborted, no release), the
/// other takes over and handles a Deployment created after the kill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn example_controller_instances_hand_over_the_lease() {
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    for i in 0..5 {
        server
            .create(&example::deployment(
                "default",
                &format!("web-{i}"),
                1,
                "nginx:1.0",
            ))
            .unwrap();
    }
    let a = tokio::spawn(example::run_elected(
        own_client(&server).await,
        fast_election("a"),
        tokio_util::sync::CancellationToken::new(),
    ));
    eventually("a leads", Duration::from_secs(10), || {
        lease_holder(&server).as_deref() == Some("a")
    })
    .await;
    let cancel_b = tokio_util::sync::CancellationToken::new();
    let b = tokio::spawn(example::run_elected(
        own_client(&server).await,
        fast_election("b"),
        cancel_b.clone(),
    ));
    eventually("a converges", Duration::from_secs(20), || {
        example::converged(&server) == Ok(5)
    })
    .await;
    a.abort();
    server
        .create(&example::deployment("default", "late", 2, "nginx:2.0"))
        .unwrap();
    eventually("b takes over", Duration::from_secs(10), || {
        lease_holder(&server).as_deref() == Some("b")
    })
    .await;
    eventually("b converges", Duration::from_secs(20), || {
        example::converged(&server) == Ok(6)
    })
    .await;
    cancel_b.cancel();
    let stats = b.await.unwrap().unwrap();
    assert!(stats.reconciles() > 0);
    // b released the lease on the way out.
    assert_eq!(lease_holder(&server), None);
    server.shutdown().await;
}

/// Whether the binary at `path` is this example (a shared target directory may hold another
/// build of it): `--leader-elect` alone must fail at once asking for `--kubeconfig`.
fn knows_leader_election(path: &std::path::Path) -> bool {
    let Ok(mut child) = std::process::Command::new(path)
        .arg("--leader-elect")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        return false;
    };
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if let Ok(Some(_)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            return err.contains("--leader-elect needs --kubeconfig");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    false
}

/// The example as two processes (`--leader-elect`) against one embedded server: the first
/// leads and converges; SIGKILLed, the second takes over. Skips (saying so) when the example
/// binary was not built with this test (`cargo test -p kinformer` builds it; a single
/// `--test controller_embedded` does not).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn example_controller_processes_hand_over_the_lease() {
    let exe = std::env::current_exe().unwrap();
    let binary = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|debug| debug.join("examples").join("controller"))
        .filter(|p| p.exists());
    // A binary older than the example's source is not this example (a stale build).
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/controller.rs");
    let modified = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let binary = binary
        .filter(|b| modified(b) >= modified(&source))
        .filter(|b| knows_leader_election(b));
    let Some(binary) = binary else {
        eprintln!(
            "SKIPPED example_controller_processes_hand_over_the_lease: examples/controller not built, older than its source, or another build (run `cargo build -p kinformer --example controller` first)"
        );
        return;
    };
    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    let dir = std::env::temp_dir().join(format!("kinformer-le-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    for i in 0..4 {
        server
            .create(&example::deployment(
                "default",
                &format!("web-{i}"),
                1,
                "nginx:1.0",
            ))
            .unwrap();
    }
    let spawn = |identity: &str| {
        std::process::Command::new(&binary)
            .args(["--leader-elect", "--kubeconfig"])
            .arg(&kubeconfig)
            .args(["--identity", identity])
            .args([
                "--lease-duration",
                "3",
                "--renew-deadline",
                "2",
                "--retry-period",
                "0.5",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut a = spawn("a");
    eventually("process a leads", Duration::from_secs(20), || {
        lease_holder(&server).as_deref() == Some("a")
    })
    .await;
    let mut b = spawn("b");
    eventually("a converges", Duration::from_secs(20), || {
        example::converged(&server) == Ok(4)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        lease_holder(&server).as_deref(),
        Some("a"),
        "b must not take a held lease"
    );
    a.kill().unwrap();
    let a_out = a.wait_with_output().unwrap();
    server
        .create(&example::deployment("default", "late", 1, "nginx:1.0"))
        .unwrap();
    eventually("process b takes over", Duration::from_secs(15), || {
        lease_holder(&server).as_deref() == Some("b")
    })
    .await;
    eventually("b converges", Duration::from_secs(20), || {
        example::converged(&server) == Ok(5)
    })
    .await;
    b.kill().unwrap();
    let b_out = b.wait_with_output().unwrap();
    let a_out = String::from_utf8_lossy(&a_out.stdout).into_owned();
    let b_out = String::from_utf8_lossy(&b_out.stdout).into_owned();
    assert!(a_out.lines().any(|l| l == "a leading"), "{a_out}");
    assert!(
        b_out.lines().any(|l| l == "b standing by (leader a)"),
        "{b_out}"
    );
    assert!(b_out.lines().any(|l| l == "b leading"), "{b_out}");
    let _ = std::fs::remove_dir_all(&dir);
    server.shutdown().await;
}

/// What one run of the counter controller (below) saw.
#[derive(Debug, Default)]
struct CounterRun {
    /// Reconciles that read the ConfigMap older than their own last write.
    stale_reads: usize,
    /// Writes the server accepted.
    writes: usize,
    /// Writes refused with 409 Conflict (made from a stale read).
    conflicts: usize,
    /// The counter on the server at the end.
    final_count: u32,
    /// The controller's counts of cache waits and timed-out waits.
    cache_waits: u64,
    cache_wait_timeouts: u64,
}

const COUNT: &str = "example.kinformer.io/count";

/// A controller that counts to `target` in an annotation of one ConfigMap, one increment per
/// reconcile, reading the count from its informer's cache and writing with the cached
/// resourceVersion, then requeueing at once; the server delays every watch event by 300 ms
/// (so the cache shows each write 300 ms after it was made).
/// With read-your-own-writes the next reconcile waits for the write to reach the cache;
/// without it, it reads its own stale object.
async fn count_to(target: u32, read_your_writes: bool) -> CounterRun {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kinformer::controller::{Action, Controller};
    use kube::api::{Api, ObjectMeta, PostParams};
    use parking_lot::Mutex;
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use tokio_util::sync::CancellationToken;

    let server = kinformer_apiserver::start(Default::default())
        .await
        .unwrap();
    server
        .create(&ConfigMap {
            metadata: ObjectMeta {
                name: Some("counter".into()),
                namespace: Some("default".into()),
                annotations: Some(BTreeMap::from([(COUNT.into(), "0".into())])),
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap();
    let factory = kinformer::SharedInformerFactory::new(server.client());
    let configmaps = factory.informer::<ConfigMap>();
    let controller =
        Controller::new("counter", configmaps.clone()).read_your_writes(read_your_writes);
    let (writes, stats, queue) = (
        controller.writes(),
        controller.stats(),
        controller.queue().clone(),
    );
    let seen = Arc::new(Mutex::new(CounterRun::default()));
    // The resourceVersion of the controller's last accepted write.
    let last_written = Arc::new(Mutex::new(None::<u64>));
    // Every watch event reaches the informer 300 ms late (the initial list too).
    server.faults().set_watch_delay(Duration::from_millis(300));
    factory.start();
    let cancel = CancellationToken::new();
    let cache = configmaps.indexer();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let running = tokio::spawn({
        let (cancel, seen, last_written) = (cancel.clone(), seen.clone(), last_written.clone());
        controller.run(cancel, move |key: String| {
            let (cache, api, writes) = (cache.clone(), api.clone(), writes.clone());
            let (seen, last_written) = (seen.clone(), last_written.clone());
            async move {
                let Some(cm) = cache.get_by_key(&key) else {
                    return Ok(Action::await_change());
                };
                let rv: u64 = cm
                    .metadata
                    .resource_version
                    .as_deref()
                    .unwrap()
                    .parse()
                    .unwrap();
                if last_written.lock().is_some_and(|w| rv < w) {
                    seen.lock().stale_reads += 1;
                }
                let count: u32 = cm.metadata.annotations.as_ref().unwrap()[COUNT]
                    .parse()
                    .unwrap();
                if count >= target {
                    return Ok(Action::await_change());
                }
                let mut next = (*cm).clone();
                next.metadata
                    .annotations
                    .as_mut()
                    .unwrap()
                    .insert(COUNT.into(), (count + 1).to_string());
                match api.replace("counter", &PostParams::default(), &next).await {
                    Ok(written) => {
                        seen.lock().writes += 1;
                        *last_written.lock() = written
                            .metadata
                            .resource_version
                            .as_deref()
                            .map(|v| v.parse().unwrap());
                        writes.record(&key, &written).map_err(|e| e.to_string())?;
                        // Requeue at once: the next reconcile reads the cache right away.
                        Ok(Action::requeue_after(Duration::ZERO))
                    }
                    Err(kube::Error::Api(s)) if s.code == 409 => {
                        seen.lock().conflicts += 1;
                        Err("conflict".to_owned())
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
        })
    });
    // Poll, with a bound, until the server holds the target and the controller is idle.
    let limit = std::time::Instant::now() + Duration::from_secs(30);
    let count = || -> u32 {
        let cm: ConfigMap = server.get(Some("default"), "counter").unwrap();
        cm.metadata.annotations.unwrap()[COUNT].parse().unwrap()
    };
    while count() < target || stats.active_workers() > 0 {
        assert!(
            std::time::Instant::now() < limit,
            "never counted to {target}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Until the cache shows the last write and the controller is idle (every retry has run).
    let cached = || {
        let cm = configmaps.indexer().get_by_key("default/counter").unwrap();
        cm.metadata.annotations.as_ref().unwrap()[COUNT] == target.to_string()
    };
    while !(cached() && queue.is_empty() && queue.waiting_len() == 0 && stats.active_workers() == 0)
    {
        assert!(std::time::Instant::now() < limit, "never settled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cancel.cancel();
    running.await.unwrap().unwrap();
    factory.shutdown().await;
    let conflicts_logged = server
        .requests()
        .iter()
        .filter(|r| r.verb.as_deref() == Some("update") && r.code == 409)
        .count();
    let mut run = std::mem::take(&mut *seen.lock());
    assert_eq!(
        run.conflicts, conflicts_logged,
        "the server saw the same 409s"
    );
    run.final_count = count();
    run.cache_waits = stats.cache_waits();
    run.cache_wait_timeouts = stats.cache_wait_timeouts();
    server.shutdown().await;
    run
}

/// The fault test: with watch delivery delayed, a controller that updates then
/// re-reads its cache never acts on its own stale object with read-your-own-writes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_your_own_writes_never_acts_on_its_own_stale_object() {
    let run = count_to(3, true).await;
    assert_eq!(run.stale_reads, 0, "{run:?}");
    assert_eq!(run.conflicts, 0, "{run:?}");
    assert_eq!(run.writes, 3, "one write per increment: {run:?}");
    assert_eq!(run.final_count, 3, "{run:?}");
    assert!(run.cache_waits >= 3, "every write was waited for: {run:?}");
    assert_eq!(run.cache_wait_timeouts, 0, "{run:?}");
}

/// The same without read-your-own-writes: the next reconcile reads the stale object and its
/// write from it is refused with 409 Conflict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_read_your_own_writes_the_controller_acts_on_stale_state() {
    let run = count_to(3, false).await;
    assert!(run.stale_reads > 0, "{run:?}");
    assert!(run.conflicts > 0, "{run:?}");
    assert_eq!(
        run.writes, 3,
        "the compare-and-swap kept the count right: {run:?}"
    );
    assert_eq!(run.final_count, 3, "{run:?}");
    assert_eq!(run.cache_waits, 0, "{run:?}");
}
