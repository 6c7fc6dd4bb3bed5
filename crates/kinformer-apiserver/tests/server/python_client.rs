//! The Python `kubernetes` client against the server: `watch.Watch().stream(...)` sees the
//! events, and gets a 410 when it asks for a compacted resourceVersion.
//!
//! The test installs the client itself into a virtualenv under `target/` (`python3 -m venv`,
//! `pip install kubernetes`), reused by later runs. Skipped (with a message) when `python3`
//! is not installed, unless `KINFORMER_REQUIRE_PYTHON=1`.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::*;
use kinformer_apiserver::{ServerConfig, start};
use serde_json::{Value, json};

const SCRIPT: &str = r#"
import json, sys
from kubernetes import client, config, watch
config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
mode, rv = sys.argv[2], sys.argv[3]
if mode == "list":
    pods = v1.list_namespaced_pod("default")
    print(json.dumps({"names": sorted(p.metadata.name for p in pods.items), "rv": pods.metadata.resource_version}))
elif mode == "watch":
    events = []
    w = watch.Watch()
    for ev in w.stream(v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=10):
        events.append([ev["type"], ev["object"].metadata.name])
        if len(events) == 2:
            w.stop()
    print(json.dumps({"events": events}))
elif mode == "gone":
    try:
        for ev in watch.Watch().stream(v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=10):
            print(json.dumps({"unexpected": ev["type"]}))
            sys.exit(0)
        print(json.dumps({"ended": True}))
    except client.exceptions.ApiException as e:
        print(json.dumps({"status": e.status, "reason": e.reason}))
"#;

fn python() -> Option<PathBuf> {
    let ok = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if std::env::var("KINFORMER_REQUIRE_PYTHON").is_ok_and(|v| v == "1") {
            panic!("python3 is required but not installed");
        }
        return None;
    }
    let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("python-kubernetes-venv");
    let py = venv.join("bin").join("python");
    let has_client = |py: &PathBuf| {
        Command::new(py)
            .args(["-c", "import kubernetes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !has_client(&py) {
        let st = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3 -m venv");
        assert!(st.success(), "creating the virtualenv failed");
        let st = Command::new(&py)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "kubernetes",
            ])
            .status()
            .expect("pip install");
        assert!(st.success(), "pip install kubernetes failed");
        assert!(has_client(&py));
    }
    Some(py)
}

fn run(py: &PathBuf, kubeconfig: &PathBuf, mode: &str, rv: &str) -> Value {
    let out = Command::new(py)
        .args(["-c", SCRIPT])
        .arg(kubeconfig)
        .args([mode, rv])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python {mode} failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim().lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_lists_watches_and_gets_410() {
    let Some(py) = tokio::task::spawn_blocking(python).await.unwrap() else {
        eprintln!("python3 not installed: skipping");
        return;
    };
    let s = start(ServerConfig::default()).await.unwrap();
    s.seed_pods(3, 1).unwrap();
    let kc = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("python-kubeconfig-{}", std::process::id()));
    s.write_kubeconfig(&kc).unwrap();

    let (py2, kc2) = (py.clone(), kc.clone());
    let listed = tokio::task::spawn_blocking(move || run(&py2, &kc2, "list", ""))
        .await
        .unwrap();
    assert_eq!(
        listed["names"],
        json!(["pod-000000", "pod-000001", "pod-000002"])
    );
    let rv = listed["rv"].as_str().unwrap().to_string();
    assert_eq!(rv, s.revision().to_string());

    post(
        s.addr(),
        "/api/v1/namespaces/default/pods",
        &pod_json("py-pod", json!({})),
    )
    .await;
    request(
        s.addr(),
        "DELETE",
        "/api/v1/namespaces/default/pods/py-pod",
        None,
        b"",
    )
    .await;
    let (py2, kc2, rv2) = (py.clone(), kc.clone(), rv.clone());
    let watched = tokio::task::spawn_blocking(move || run(&py2, &kc2, "watch", &rv2))
        .await
        .unwrap();
    assert_eq!(
        watched["events"],
        json!([["ADDED", "py-pod"], ["DELETED", "py-pod"]])
    );

    s.faults().compact_now();
    let (py2, kc2) = (py.clone(), kc.clone());
    let gone = tokio::task::spawn_blocking(move || run(&py2, &kc2, "gone", &rv))
        .await
        .unwrap();
    assert_eq!(gone["status"], 410, "{gone}");
    assert!(
        gone["reason"]
            .as_str()
            .unwrap()
            .starts_with("Expired: too old resource version"),
        "{gone}"
    );
    let _ = std::fs::remove_file(&kc);
    s.shutdown().await;
}
