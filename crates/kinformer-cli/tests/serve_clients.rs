//! Real clients against `kinformer serve` through the kubeconfig it writes, unmodified (TLS
//! with the generated CA, bearer token): kubectl, kube-rs and kinformer's informers, client-go
//! (a small Go program, `tests/clients/client-go`), the Python `kubernetes` client and
//! `@kubernetes/client-node`'s informer.
//!
//! Each client is installed into the build directory (`target/tmp`) on first use and reused.
//! A test whose toolchain (kubectl, go, python3, npm) is missing prints why and passes;
//! `KINFORMER_REQUIRE_CLIENTS=1` makes a missing toolchain a failure.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kinformer::SharedInformerFactory;
use kube::api::{Api, ListParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_kinformer");

/// `kinformer serve` on a free port, killed when dropped.
struct Serve {
    child: Child,
    dir: PathBuf,
    url: String,
}

impl Serve {
    fn start(name: &str, seed_pods: usize) -> Serve {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("serve-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = Command::new(BIN)
            .args([
                "serve",
                "--port",
                "0",
                "--seed-namespaces",
                "1",
                "--seed-pods",
            ])
            .arg(seed_pods.to_string())
            .arg("--kubeconfig")
            .arg(dir.join("kubeconfig"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kinformer serve");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("a line").expect("stdout");
        let url = first
            .strip_prefix("kinformer API server listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_string();
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Serve { child, dir, url }
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    async fn client(&self) -> kube::Client {
        let kc = kube::config::Kubeconfig::read_from(self.kubeconfig()).unwrap();
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .unwrap();
        kube::Client::try_from(config).unwrap()
    }

    fn kubectl(&self, args: &[&str]) -> std::process::Output {
        Command::new("kubectl")
            .env("KUBECONFIG", self.kubeconfig())
            .arg("--cache-dir")
            .arg(self.dir.join("kubectl-cache"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run kubectl")
    }

    fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether `tool` runs; otherwise prints why the test is skipped (or fails when clients are
/// required).
fn available(tool: &str, version_args: &[&str]) -> bool {
    let ok = Command::new(tool)
        .args(version_args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("KINFORMER_REQUIRE_CLIENTS").as_deref() != Ok("1"),
            "{tool} is required (KINFORMER_REQUIRE_CLIENTS=1) but not installed"
        );
        eprintln!("SKIPPED: {tool} is not installed");
    }
    ok
}

fn last_json_line(out: &std::process::Output, what: &str) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{what} failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout.trim().lines().last().unwrap_or("");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{what}: {e}: {stdout}"))
}

const CRD_YAML: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer}
              color: {type: string, default: blue}
"#;

const OBJECTS_YAML: &str = r#"apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: 3, dropped: true}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: leader}
spec: {holderIdentity: me, leaseDurationSeconds: 15}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: robot}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
"#;

#[test]
fn kubectl_through_the_written_kubeconfig() {
    if !available("kubectl", &["version", "--client"]) {
        return;
    }
    let s = Serve::start("kubectl", 3);
    assert!(s.url.starts_with("https://127.0.0.1:"), "{}", s.url);
    let kc = std::fs::read_to_string(s.kubeconfig()).unwrap();
    assert!(kc.contains("certificate-authority-data:") && kc.contains("token:"));

    let pods = s.kubectl_ok(&["get", "pods"]);
    assert_eq!(pods.lines().count(), 4, "{pods}");
    assert_eq!(
        s.kubectl_ok(&["auth", "can-i", "list", "pods"]).trim(),
        "yes"
    );
    assert!(
        s.kubectl_ok(&["auth", "whoami"])
            .contains("kinformer-admin")
    );
    // A wrong token is refused.
    let out = s.kubectl(&["--token", "wrong", "get", "pods"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Unauthorized"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // An operator's CRD manifest, then its custom resource and kinds not served before.
    std::fs::write(s.dir.join("crd.yaml"), CRD_YAML).unwrap();
    std::fs::write(s.dir.join("objects.yaml"), OBJECTS_YAML).unwrap();
    let crd = s.dir.join("crd.yaml");
    s.kubectl_ok(&["apply", "-f", crd.to_str().unwrap()]);
    s.kubectl_ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/widgets.example.com",
        "--timeout=10s",
    ]);
    let objects = s.dir.join("objects.yaml");
    // kubectl validates strictly by default: the widget's undeclared `spec.dropped` is refused
    // as kube-apiserver refuses it; without that validation it is pruned
    let out = s.kubectl(&["apply", "-f", objects.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.dropped\""),
        "{err}"
    );
    let applied = s.kubectl_ok(&["apply", "--validate=false", "-f", objects.to_str().unwrap()]);
    assert!(
        applied.contains("widget.example.com/w1 created"),
        "{applied}"
    );
    let w: Value = serde_json::from_str(&s.kubectl_ok(&["get", "wd", "w1", "-o", "json"])).unwrap();
    assert_eq!(w["spec"], json!({"size": 3, "color": "blue"}));
    let got = s.kubectl_ok(&["get", "leases,serviceaccounts,jobs", "-o", "name"]);
    for name in [
        "lease.coordination.k8s.io/leader",
        "serviceaccount/robot",
        "job.batch/once",
    ] {
        assert!(got.contains(name), "{got}");
    }
    s.kubectl_ok(&["scale", "deployment", "web", "--replicas=3"]);
    assert_eq!(
        s.kubectl_ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]),
        "3"
    );

    // kubectl's imperative generators send protobuf for built-in kinds.
    s.kubectl_ok(&["create", "namespace", "team-a"]);
    s.kubectl_ok(&[
        "create",
        "configmap",
        "cfg",
        "-n",
        "team-a",
        "--from-literal=a=1",
    ]);
    s.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "pw",
        "-n",
        "team-a",
        "--from-literal=p=x",
    ]);
    s.kubectl_ok(&[
        "create",
        "deployment",
        "api",
        "-n",
        "team-a",
        "--image=nginx",
        "--replicas=2",
    ]);
    s.kubectl_ok(&["create", "serviceaccount", "bot", "-n", "team-a"]);
    s.kubectl_ok(&[
        "create",
        "role",
        "reader",
        "-n",
        "team-a",
        "--verb=get",
        "--resource=pods",
    ]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "bot-reads",
        "-n",
        "team-a",
        "--role=reader",
        "--serviceaccount=team-a:bot",
    ]);
    s.kubectl_ok(&[
        "create",
        "job",
        "once-more",
        "-n",
        "team-a",
        "--image=busybox",
    ]);
    assert_eq!(
        s.kubectl_ok(&[
            "get",
            "configmap",
            "cfg",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.data.a}"
        ]),
        "1"
    );
    assert_eq!(
        s.kubectl_ok(&[
            "get",
            "secret",
            "pw",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.data.p}"
        ]),
        "eA=="
    );
    assert_eq!(
        s.kubectl_ok(&[
            "get",
            "deploy",
            "api",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}"
        ]),
        "2 nginx"
    );
    assert_eq!(
        s.kubectl_ok(&[
            "get",
            "rolebinding",
            "bot-reads",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.subjects[0].name}"
        ]),
        "bot"
    );
    s.kubectl_ok(&["scale", "deployment", "api", "-n", "team-a", "--replicas=0"]);
    assert_eq!(
        s.kubectl_ok(&[
            "get",
            "deploy",
            "api",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        "0"
    );
    assert!(
        s.kubectl_ok(&["get", "namespaces", "-o", "name"])
            .contains("namespace/team-a")
    );

    // Watching a lease with kubectl.
    let mut watch = Command::new("kubectl")
        .env("KUBECONFIG", s.kubeconfig())
        .arg("--cache-dir")
        .arg(s.dir.join("kubectl-cache"))
        .args(["get", "leases", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next = || {
        rx.recv_timeout(Duration::from_secs(20))
            .expect("a watch line")
    };
    let header = next();
    assert!(header.starts_with("EVENT"), "{header}");
    let added = next();
    assert!(
        added.starts_with("ADDED") && added.contains("leader"),
        "{added}"
    );
    s.kubectl_ok(&["delete", "lease", "leader"]);
    let deleted = next();
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(
        deleted.starts_with("DELETED") && deleted.contains("leader"),
        "{deleted}"
    );

    // The server's own request counters, as kube-apiserver names them.
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    assert!(
        metrics.contains(r#"apiserver_request_total{verb="LIST",group="coordination.k8s.io",version="v1",resource="leases""#),
        "{metrics}"
    );

    // Deleting the CRD removes the resource.
    s.kubectl_ok(&["delete", "-f", crd.to_str().unwrap()]);
    let out = s.kubectl(&["get", "widgets.example.com"]);
    assert!(!out.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_and_kinformer_informers_converge() {
    let s = Serve::start("kinformer", 4);
    let client = s.client().await;
    let pods: Api<Pod> = Api::all(client.clone());
    assert_eq!(
        pods.list(&ListParams::default()).await.unwrap().items.len(),
        4
    );

    // A CRD through kube-rs, then a DynamicObject informer on its resource.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(crd_json()).unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let widget = |name: &str| -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name}, "spec": {"size": 1}}))
        .unwrap()
    };
    widgets
        .create(&PostParams::default(), &widget("a"))
        .await
        .unwrap();

    let factory = SharedInformerFactory::new(client.clone());
    let dynamic = factory.dynamic_informer(&ar, true);
    let leases = factory.informer::<Lease>();
    factory.start();
    let cancel = tokio_util::sync::CancellationToken::new();
    let synced = tokio::time::timeout(
        Duration::from_secs(30),
        factory.wait_for_cache_sync(&cancel),
    )
    .await
    .expect("caches synced in time");
    assert!(synced.values().all(|ok| *ok), "{synced:?}");

    widgets
        .create(&PostParams::default(), &widget("b"))
        .await
        .unwrap();
    let lease_api: Api<Lease> = Api::namespaced(client.clone(), "default");
    let lease: Lease = serde_json::from_value(json!({"metadata": {"name": "l"}})).unwrap();
    lease_api
        .create(&PostParams::default(), &lease)
        .await
        .unwrap();
    let converged = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if dynamic.indexer().len() == 2 && leases.indexer().len() == 1 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        converged.is_ok(),
        "widgets {} leases {}",
        dynamic.indexer().len(),
        leases.indexer().len()
    );
    factory.shutdown().await;
}

/// The CRD manifest as JSON (the same content as [`CRD_YAML`]).
fn crd_json() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object", "required": ["size"], "properties": {
                        "size": {"type": "integer"},
                        "color": {"type": "string", "default": "blue"}}}}}}
            }]
        }
    })
}

fn go_check_binary() -> Option<PathBuf> {
    if !available("go", &["version"]) {
        return None;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/client-go");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("client-go-check");
    let st = Command::new("go")
        .current_dir(&src)
        .args(["build", "-o"])
        .arg(&out)
        .arg(".")
        .status()
        .expect("go build");
    assert!(st.success(), "building the client-go check failed");
    Some(out)
}

#[test]
fn client_go_informers_through_the_kubeconfig() {
    let Some(bin) = go_check_binary() else { return };
    let s = Serve::start("client-go", 5);
    let out = Command::new(bin).arg(s.kubeconfig()).output().unwrap();
    let v = last_json_line(&out, "client-go check");
    // (the message is the Status's own, read from its protobuf form: a body client-go could not
    // decode would give "the server could not find the requested resource")
    assert_eq!(
        v,
        json!({"pods": 5, "lease": "from-client-go",
            "missing": "leases.coordination.k8s.io \"missing\" not found"})
    );
    // The lease's create and update reached the informer by its protobuf watch, not by a
    // relist or re-watch after watch errors: one LIST or WATCH of leases in all (client-go
    // 1.35 lists by a streaming watch).
    let metrics = std::process::Command::new("kubectl")
        .env("KUBECONFIG", s.kubeconfig())
        .args(["get", "--raw", "/metrics"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if !metrics.is_empty() {
        let lists: u64 = metrics
            .lines()
            .filter(|l| {
                l.starts_with("apiserver_request_total{")
                    && (l.contains(r#"verb="LIST""#) || l.contains(r#"verb="WATCH""#))
                    && l.contains(r#"resource="leases""#)
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum();
        assert_eq!(
            lists, 1,
            "client-go relisted or re-watched leases: {metrics}"
        );
    }
}

const PYTHON: &str = r#"
import json, sys
from kubernetes import client, config, watch
config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
pods = v1.list_namespaced_pod("default")
names = sorted(p.metadata.name for p in pods.items)
v1.create_namespaced_pod("default", {"metadata": {"name": "from-python"},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
seen = None
w = watch.Watch()
for ev in w.stream(v1.list_namespaced_pod, "default", resource_version=pods.metadata.resource_version, timeout_seconds=20):
    seen = [ev["type"], ev["object"].metadata.name]
    w.stop()
print(json.dumps({"names": names, "event": seen}))
"#;

fn python_with_client() -> Option<PathBuf> {
    if !available("python3", &["--version"]) {
        return None;
    }
    // Shared with kinformer-apiserver's python_client test (same target/tmp).
    let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("python-kubernetes-venv");
    let py = venv.join("bin").join("python");
    let has = |py: &Path| {
        Command::new(py)
            .args(["-c", "import kubernetes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !has(&py) {
        let st = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .unwrap();
        assert!(st.success(), "python3 -m venv failed");
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
            .unwrap();
        assert!(st.success(), "pip install kubernetes failed");
    }
    Some(py)
}

#[test]
fn python_client_lists_and_watches_through_the_kubeconfig() {
    let Some(py) = python_with_client() else {
        return;
    };
    let s = Serve::start("python", 2);
    let out = Command::new(py)
        .args(["-c", PYTHON])
        .arg(s.kubeconfig())
        .output()
        .unwrap();
    let v = last_json_line(&out, "python client");
    assert_eq!(
        v,
        json!({"names": ["pod-000000", "pod-000001"], "event": ["ADDED", "from-python"]})
    );
}

const NODE: &str = r#"
import * as k8s from '@kubernetes/client-node';
const kc = new k8s.KubeConfig();
kc.loadFromFile(process.argv[2]);
const core = kc.makeApiClient(k8s.CoreV1Api);
const informer = k8s.makeInformer(kc, '/api/v1/namespaces/default/pods',
  () => core.listNamespacedPod({ namespace: 'default' }));
const names = new Set();
const timer = setTimeout(() => { console.error('timed out', [...names]); process.exit(3); }, 30000);
informer.on('error', (e) => { console.error('informer error', e); process.exit(2); });
informer.on('add', (p) => {
  names.add(p.metadata.name);
  if (names.has('from-node')) {
    clearTimeout(timer);
    console.log(JSON.stringify({ names: [...names].sort() }));
    process.exit(0);
  }
});
await informer.start();
await core.createNamespacedPod({ namespace: 'default', body: {
  metadata: { name: 'from-node' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } });
"#;

fn node_client_dir() -> Option<PathBuf> {
    if !available("node", &["--version"]) || !available("npm", &["--version"]) {
        return None;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("node-client");
    if !dir.join("node_modules/@kubernetes/client-node").exists() {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("package.json"),
            r#"{"name": "kinformer-node-check", "private": true, "type": "module"}"#,
        )
        .unwrap();
        let st = Command::new("npm")
            .current_dir(&dir)
            .args([
                "install",
                "--silent",
                "--no-audit",
                "--no-fund",
                "@kubernetes/client-node@1",
            ])
            .status()
            .unwrap();
        assert!(st.success(), "npm install @kubernetes/client-node failed");
    }
    std::fs::write(dir.join("informer.mjs"), NODE).unwrap();
    Some(dir)
}

#[test]
fn node_client_informer_through_the_kubeconfig() {
    let Some(dir) = node_client_dir() else { return };
    let s = Serve::start("node", 2);
    let out = Command::new("node")
        .current_dir(&dir)
        .arg("informer.mjs")
        .arg(s.kubeconfig())
        .output()
        .unwrap();
    let v = last_json_line(&out, "@kubernetes/client-node informer");
    assert_eq!(
        v,
        json!({"names": ["from-node", "pod-000000", "pod-000001"]})
    );
}
