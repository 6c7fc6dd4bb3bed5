//! The machine's kubectl (real client-go) against the server, through the kubeconfig the server
//! writes ([`ServerConfig::kubeconfig`], as `kinformer serve --plain-http` starts it; plain HTTP:
//! the test also reads the admin endpoints directly). `kinformer-cli/tests/serve_clients.rs`
//! runs kubectl and other clients against the `kinformer serve` process with TLS.
//!
//! Skipped (with a message) when `kubectl` is not installed, unless
//! `KINFORMER_REQUIRE_KUBECTL=1`, which makes a missing kubectl a failure.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::*;
use kinformer_apiserver::{RunningServer, ServerConfig, start};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

fn kubectl_available() -> bool {
    let ok = std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok && std::env::var("KINFORMER_REQUIRE_KUBECTL").is_ok_and(|v| v == "1") {
        panic!("kubectl is required but not installed");
    }
    ok
}

/// A server started the way `kinformer serve --plain-http` starts one (seeded pods in
/// `default`, a kubeconfig written for other clients), in this process.
struct Standalone {
    server: RunningServer,
    addr: std::net::SocketAddr,
    dir: PathBuf,
}

impl Standalone {
    async fn start(seed: usize) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "kinformer-kubectl-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let server = start(
            ServerConfig::default()
                .seed_pods(seed, 1)
                .kubeconfig(dir.join("kubeconfig")),
        )
        .await
        .expect("server started");
        let addr = server.addr();
        Standalone { server, addr, dir }
    }

    fn kubectl(&self) -> Command {
        let mut c = Command::new("kubectl");
        c.env("KUBECONFIG", self.dir.join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.dir.join("cache"))
            .stdin(Stdio::null());
        c
    }

    async fn run(&self, args: &[&str]) -> String {
        let out = self.kubectl().args(args).output().await.unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    async fn stop(self) {
        self.server.shutdown().await;
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(|s| s.as_str()).collect()
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[tokio::test]
async fn kubectl_get_create_delete_and_paginate() {
    if !kubectl_available() {
        eprintln!("kubectl not installed: skipping");
        return;
    }
    let s = Standalone::start(5).await;
    let out = s.run(&["get", "pods", "-A"]).await;
    assert!(out.starts_with("NAMESPACE"), "{out}");
    for i in 0..5 {
        assert!(out.contains(&format!("pod-{i:06}")), "{out}");
    }

    // The server's Table columns, as on a real cluster.
    let out = s.run(&["get", "pods"]).await;
    let header: Vec<&str> = out
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "{out}"
    );
    assert!(
        out.lines().nth(1).unwrap_or("").contains("1/1     Running"),
        "{out}"
    );

    let manifest = s.dir.join("pod.yaml");
    write(
        &manifest,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: from-yaml\n  labels:\n    app: demo\nspec:\n  containers:\n  - name: c\n    image: nginx\n",
    );
    let out = s.run(&["create", "-f", manifest.to_str().unwrap()]).await;
    assert_eq!(out.trim(), "pod/from-yaml created");
    let got = get(s.addr, "/api/v1/namespaces/default/pods/from-yaml").await;
    assert_eq!(got.code, 200);
    assert_eq!(got.json()["metadata"]["labels"]["app"], "demo");
    // A second create is refused with the server's AlreadyExists.
    let out = s
        .kubectl()
        .args(["create", "-f", manifest.to_str().unwrap()])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("AlreadyExists"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = s.run(&["get", "pod", "from-yaml", "-o", "json"]).await;
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["metadata"]["name"], "from-yaml");

    let out = s.run(&["delete", "pod", "from-yaml"]).await;
    assert_eq!(out.trim(), "pod \"from-yaml\" deleted");
    assert_eq!(
        get(s.addr, "/api/v1/namespaces/default/pods/from-yaml")
            .await
            .code,
        404
    );

    // Pagination: 5 pods in chunks of 2 is three requests, the last two with continue.
    request(s.addr, "DELETE", "/__kinformer/requests", None, b"").await;
    let out = s.run(&["get", "pods", "--chunk-size=2"]).await;
    for i in 0..5 {
        assert!(out.contains(&format!("pod-{i:06}")), "{out}");
    }
    let log = get(s.addr, "/__kinformer/requests").await.json();
    let lists: Vec<String> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["verb"] == "list" && r["path"] == "/api/v1/namespaces/default/pods")
        .map(|r| r["query"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(lists.len(), 3, "{lists:?}");
    assert!(lists.iter().all(|q| q.contains("limit=2")), "{lists:?}");
    assert_eq!(
        lists.iter().filter(|q| q.contains("continue=")).count(),
        2,
        "{lists:?}"
    );
    s.stop().await;
}

#[tokio::test]
async fn kubectl_get_watch_sees_create_and_delete() {
    if !kubectl_available() {
        eprintln!("kubectl not installed: skipping");
        return;
    }
    let s = Standalone::start(2).await;
    let mut child = s
        .kubectl()
        .args(["get", "pods", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("kubectl printed a line")
            .unwrap()
            .expect("kubectl still running")
    };
    // Header and the two existing pods (as ADDED events).
    let header = next().await;
    assert!(header.starts_with("EVENT"), "{header}");
    assert!(next().await.contains("pod-000000"));
    assert!(next().await.contains("pod-000001"));
    assert_eq!(
        post(
            s.addr,
            "/api/v1/namespaces/default/pods",
            &pod_json("watched", json!({}))
        )
        .await
        .code,
        201
    );
    let l = next().await;
    assert!(l.starts_with("ADDED") && l.contains("watched"), "{l}");
    assert_eq!(
        request(
            s.addr,
            "DELETE",
            "/api/v1/namespaces/default/pods/watched",
            None,
            b""
        )
        .await
        .code,
        200
    );
    let l = next().await;
    assert!(l.starts_with("DELETED") && l.contains("watched"), "{l}");
    let _ = child.kill().await;
    s.stop().await;
}

#[tokio::test]
async fn kubectl_apply_creates_updates_and_is_idempotent() {
    if !kubectl_available() {
        eprintln!("kubectl not installed: skipping");
        return;
    }
    let s = Standalone::start(0).await;
    let manifest = s.dir.join("deploy.yaml");
    let deploy = |image: &str, replicas: u32| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: c\n        image: {image}\n        env:\n        - {{name: A, value: \"1\"}}\n"
        )
    };
    write(&manifest, &deploy("nginx:1", 1));
    let m = manifest.to_str().unwrap();
    assert_eq!(
        s.run(&["apply", "-f", m]).await.trim(),
        "deployment.apps/web created"
    );
    write(&manifest, &deploy("nginx:2", 3));
    assert_eq!(
        s.run(&["apply", "-f", m]).await.trim(),
        "deployment.apps/web configured"
    );
    let d = get(s.addr, "/apis/apps/v1/namespaces/default/deployments/web")
        .await
        .json();
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["metadata"]["generation"], 2);
    // The strategic merge patch merged the container by name: env kept, no directives leaked,
    // the pod template's defaults kept (kube-apiserver's).
    assert_eq!(
        d["spec"]["template"]["spec"],
        json!({"containers": [{"name": "c", "image": "nginx:2", "env": [{"name": "A", "value": "1"}],
                               "imagePullPolicy": "IfNotPresent", "resources": {},
                               "terminationMessagePath": "/dev/termination-log",
                               "terminationMessagePolicy": "File"}],
               "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
               "schedulerName": "default-scheduler", "securityContext": {},
               "terminationGracePeriodSeconds": 30})
    );
    assert_eq!(
        s.run(&["apply", "-f", m]).await.trim(),
        "deployment.apps/web unchanged"
    );
    s.stop().await;
}

#[tokio::test]
async fn kubectl_server_side_apply_from_two_managers() {
    if !kubectl_available() {
        eprintln!("kubectl not installed: skipping");
        return;
    }
    let s = Standalone::start(0).await;
    let manifest = s.dir.join("cm.yaml");
    let cm = |v: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  k: \"{v}\"\n")
    };
    write(&manifest, &cm("1"));
    let m = manifest.to_str().unwrap();
    let ssa = |manager: &'static str| {
        vec![
            "apply".to_string(),
            "--server-side".into(),
            format!("--field-manager={manager}"),
            "-f".into(),
            m.to_string(),
        ]
    };
    assert_eq!(
        s.run(&args(&ssa("alice"))).await.trim(),
        "configmap/shared serverside-applied"
    );
    // The same value from a second manager: shared, no conflict.
    assert_eq!(
        s.run(&args(&ssa("bob"))).await.trim(),
        "configmap/shared serverside-applied"
    );
    write(&manifest, &cm("2"));
    let out = s.kubectl().args(args(&ssa("bob"))).output().await.unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Apply failed with 1 conflict: conflict with \"alice\": .data.k"),
        "{stderr}"
    );
    let mut forced = ssa("bob");
    forced.push("--force-conflicts".into());
    assert_eq!(
        s.run(&args(&forced)).await.trim(),
        "configmap/shared serverside-applied"
    );
    let o = get(s.addr, "/api/v1/namespaces/default/configmaps/shared")
        .await
        .json();
    assert_eq!(o["data"]["k"], "2");
    let managers: Vec<&str> = o["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(managers, vec!["bob"]);
    s.stop().await;
}

#[tokio::test]
async fn kubectl_explains_built_ins_and_crds_and_creates_tokens() {
    if !kubectl_available() {
        eprintln!("kubectl not installed: skipping");
        return;
    }
    let s = Standalone::start(0).await;
    // built-in kinds: the schemas of the selected Kubernetes version, enums included
    let containers = s.run(&["explain", "pods.spec.containers"]).await;
    assert!(
        containers.contains("FIELD: containers <[]Container>"),
        "{containers}"
    );
    assert!(containers.contains("List of containers belonging to the pod."));
    assert!(
        containers.contains("enum: Always, IfNotPresent, Never"),
        "{containers}"
    );
    let deploy = s.run(&["explain", "deployments", "--recursive"]).await;
    assert!(deploy.contains("GROUP:      apps"), "{deploy}");
    assert!(
        deploy.contains("      enum: Recreate, RollingUpdate"),
        "{deploy}"
    );
    // a CRD: its openAPIV3Schema under its group-version
    let crd = s.dir.join("crd.yaml");
    write(
        &crd,
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            description: What the widget should be.\n            required: [size]\n            properties:\n              size: {type: integer, description: How big the widget is.}\n",
    );
    s.run(&["apply", "-f", crd.to_str().unwrap()]).await;
    let spec = s.run(&["explain", "widgets.spec"]).await;
    assert!(spec.contains("What the widget should be."), "{spec}");
    assert!(spec.contains("size\t<integer> -required-"), "{spec}");
    // kubectl create token: `default` exists, as on a real cluster (the service account
    // controller made it)
    let token = s.run(&["create", "token", "default"]).await;
    assert_eq!(token.trim().split('.').count(), 3, "{token}");
    let out = s
        .kubectl()
        .args(["create", "token", "default", "--duration=5m"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("may not specify a duration less than 10 minutes")
    );
    s.stop().await;
}
