//! The defaults kube-apiserver sets on pod specs (`k8s.io/kubernetes/pkg/apis/core/v1`'s
//! `SetDefaults_PodSpec`, `_Container`, `_Probe`, `_Volume`, ...), wherever a pod spec is: a
//! Pod, and the pod template of every workload (Deployment, ReplicaSet, StatefulSet,
//! DaemonSet, Job, CronJob, ReplicationController, PodTemplate). A controller that compares
//! the template it wants with the one stored sees what it would see on a real cluster.
//!
//! A Pod also gets `SetDefaults_Pod`'s (`enableServiceLinks`, requests from limits) and, when
//! created, what kube-apiserver's admission plugins add: priority 0 with
//! `PreemptLowerPriority` when it names no priority class (Priority), and five-minute
//! tolerations of not-ready and unreachable nodes (DefaultTolerationSeconds). The
//! ServiceAccount admission (the account's name, its token volume and pull secrets) is
//! [`super::service_account`]'s.

use serde_json::{Map, Value, json};

use super::json_path::{each_object, object, set};
use crate::resource::ResourceInfo;

/// Where `res`'s objects keep a pod spec, if they have one.
fn pod_spec_path(res: &ResourceInfo) -> Option<&'static [&'static str]> {
    Some(match (res.group.as_str(), res.plural.as_str()) {
        ("", "pods") => &["spec"],
        ("", "podtemplates") => &["template", "spec"],
        ("", "replicationcontrollers")
        | ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets")
        | ("batch", "jobs") => &["spec", "template", "spec"],
        ("batch", "cronjobs") => &["spec", "jobTemplate", "spec", "template", "spec"],
        _ => return None,
    })
}

/// The `PodSpec` fields Go omits when they hold their zero value (`omitempty` on a value, not
/// a pointer): a pod spec decoded into Go's types and read back has none of them empty, so
/// nobody owns them (`k8s.io/api` v0.36.3 `core/v1` `PodSpec`).
const OMITTED_WHEN_EMPTY: &[&str] = &[
    "volumes",
    "initContainers",
    "ephemeralContainers",
    "restartPolicy",
    "dnsPolicy",
    "nodeSelector",
    "serviceAccountName",
    "serviceAccount",
    "nodeName",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "imagePullSecrets",
    "hostname",
    "subdomain",
    "schedulerName",
    "tolerations",
    "hostAliases",
    "priorityClassName",
    "readinessGates",
    "overhead",
    "topologySpreadConstraints",
    "schedulingGates",
    "resourceClaims",
];

/// What Go's decoding drops from the pod spec of `obj` (a body of `res`) before defaulting
/// and the field manager see it: `null` fields, and the [`OMITTED_WHEN_EMPTY`] ones that hold
/// `""`, `false`, `[]` or `{}` (so a Pod sent with `serviceAccountName: ""` gets `default`
/// from admission, owned by nobody, as on kube-apiserver).
pub(crate) fn drop_zero_values(res: &ResourceInfo, obj: &mut Map<String, Value>) {
    let Some(spec) = pod_spec_path(res).and_then(|path| object(obj, path)) else {
        return;
    };
    spec.retain(|k, v| {
        let zero = match v {
            Value::Null => return false,
            Value::String(s) => s.is_empty(),
            Value::Bool(b) => !*b,
            Value::Array(a) => a.is_empty(),
            Value::Object(m) => m.is_empty(),
            Value::Number(_) => false,
        };
        !(zero && OMITTED_WHEN_EMPTY.contains(&k.as_str()))
    });
}

/// Fills the pod spec defaults of `obj` (a body of `res`), and a Pod's own.
pub(crate) fn apply(res: &ResourceInfo, obj: &mut Map<String, Value>) {
    let Some(path) = pod_spec_path(res) else {
        return;
    };
    let is_pod = path.len() == 1;
    // a template's metadata is an object even when none was sent (Go's `ObjectMeta` is no
    // pointer): `template.metadata` (and a CronJob's `jobTemplate.metadata`) read back as `{}`
    for end in (1..path.len()).filter(|&i| matches!(path[i - 1], "template" | "jobTemplate")) {
        if let Some(t) = object(obj, &path[..end]) {
            t.entry("metadata").or_insert_with(|| json!({}));
        }
    }
    if let Some(spec) = object(obj, path) {
        pod_spec(spec);
        if is_pod {
            pod(spec);
        }
    }
}

/// Whether `res` is the core Pods resource.
pub(crate) fn is_pod(res: &ResourceInfo) -> bool {
    (res.group.as_str(), res.plural.as_str()) == ("", "pods")
}

/// What kube-apiserver's admission adds to a Pod when it is created.
pub(crate) fn admit_created(res: &ResourceInfo, obj: &mut Map<String, Value>) {
    if !is_pod(res) {
        return;
    }
    let Some(spec) = object(obj, &["spec"]) else {
        return;
    };
    if spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        set(spec, "priority", json!(0));
    }
    set(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    let tolerations = spec
        .entry("tolerations")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(ts) = tolerations {
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let tolerated = ts.iter().any(|t| {
                let f = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default();
                (f("key") == key || (f("key").is_empty() && f("operator") == "Exists"))
                    && (f("effect") == "NoExecute" || f("effect").is_empty())
            });
            if !tolerated {
                ts.push(
                    json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                               "tolerationSeconds": 300}),
                );
            }
        }
    }
}

/// The status a created object of `res` starts with, whatever it was sent with, for the kinds
/// whose `PrepareForCreate` resets it (their empty status as Go serializes it); `None` for the
/// others (a Node keeps the status it registers with).
pub(crate) fn status_on_create(res: &ResourceInfo, obj: &Map<String, Value>) -> Option<Value> {
    Some(match (res.group.as_str(), res.plural.as_str()) {
        ("", "pods") => json!({"phase": "Pending", "qosClass": qos_class(obj)}),
        ("", "replicationcontrollers") | ("apps", "replicasets") => json!({"replicas": 0}),
        ("apps", "statefulsets") => json!({"replicas": 0, "availableReplicas": 0}),
        ("apps", "daemonsets") => json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                         "desiredNumberScheduled": 0, "numberReady": 0}),
        ("apps", "deployments") | ("batch", "jobs" | "cronjobs") => json!({}),
        ("", "services") | ("networking.k8s.io", "ingresses") => json!({"loadBalancer": {}}),
        ("policy", "poddisruptionbudgets") => json!({"disruptionsAllowed": 0, "currentHealthy": 0,
                                                    "desiredHealthy": 0, "expectedPods": 0}),
        ("autoscaling", "horizontalpodautoscalers") => {
            json!({"currentMetrics": null, "desiredReplicas": 0})
        }
        // the claim's phase is the default its decoding gives an empty status
        ("", "persistentvolumeclaims") => json!({"phase": "Pending"}),
        ("", "persistentvolumes") => {
            json!({"phase": "Pending", "lastPhaseTransitionTime": super::now_rfc3339()})
        }
        ("storage.k8s.io", "volumeattachments") => json!({"attached": false}),
        // its strategy resets the status to the empty one (`typeChecking` comes later)
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => json!({}),
        _ => return None,
    })
}

/// What a created Job or DaemonSet gets once it has its uid (`PrepareForCreate`): a Job
/// without `manualSelector: true` its generated selector (`batch.kubernetes.io/controller-uid`)
/// and its template's `controller-uid` and `job-name` labels (both spellings), which also
/// label the Job when it has none; a DaemonSet its template generation annotation.
pub(crate) fn after_uid(res: &ResourceInfo, obj: &mut Map<String, Value>, name: &str, uid: &str) {
    match (res.group.as_str(), res.plural.as_str()) {
        ("batch", "jobs") => job_selector(obj, name, uid),
        ("apps", "daemonsets") => {
            if let Some(meta) = object(obj, &["metadata"]) {
                let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
                if let Value::Object(a) = annotations {
                    a.insert(TEMPLATE_GENERATION.into(), json!("1"));
                }
            }
        }
        _ => {}
    }
}

/// The annotation a DaemonSet's template generation is kept in.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// An updated DaemonSet's template generation: one more when its template changed
/// (`PrepareForUpdate`).
pub(crate) fn daemonset_updated(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    let template = |o: &Map<String, Value>| o.get("spec").and_then(|s| s.get("template")).cloned();
    let generation = |o: &Map<String, Value>| {
        o.get("metadata")
            .and_then(|m| {
                m.pointer(&format!(
                    "/annotations/{}",
                    TEMPLATE_GENERATION.replace('/', "~1")
                ))
            })
            .and_then(Value::as_str)
            .and_then(|g| g.parse::<i64>().ok())
            .unwrap_or(0)
    };
    let next = generation(old) + i64::from(template(old) != template(new));
    if let Some(meta) = object(new, &["metadata"]) {
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Value::Object(a) = annotations {
            a.insert(TEMPLATE_GENERATION.into(), json!(next.to_string()));
        }
    }
}

fn job_selector(obj: &mut Map<String, Value>, name: &str, uid: &str) {
    let Some(spec) = object(obj, &["spec"]) else {
        return;
    };
    if spec.get("manualSelector") == Some(&Value::Bool(true)) {
        return;
    }
    spec.insert("manualSelector".into(), json!(false));
    spec.insert(
        "selector".into(),
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
    );
    let template = spec.entry("template").or_insert_with(|| json!({}));
    let Value::Object(template) = template else {
        return;
    };
    let meta = template.entry("metadata").or_insert_with(|| json!({}));
    let Value::Object(meta) = meta else { return };
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    let Value::Object(labels) = labels else {
        return;
    };
    for (k, v) in [
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name),
        ("controller-uid", uid),
        ("job-name", name),
    ] {
        labels.insert(k.into(), json!(v));
    }
    let labels = Value::Object(labels.clone());
    if let Some(meta) = object(obj, &["metadata"])
        && meta
            .get("labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
    {
        meta.insert("labels".into(), labels);
    }
}

/// A pod's quality of service class (`qos.GetPodQOS`, from its containers' CPU and memory):
/// `BestEffort` without requests or limits, `Guaranteed` when every container's limits name
/// both and its requests equal them, `Burstable` otherwise.
fn qos_class(obj: &Map<String, Value>) -> &'static str {
    let spec = obj.get("spec");
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|f| spec.and_then(|s| s.get(*f)).and_then(Value::as_array))
        .flatten()
        .collect();
    let of = |c: &Value, kind: &str, r: &str| {
        c.pointer(&format!("/resources/{kind}/{r}"))
            .and_then(Value::as_str)
            .filter(|q| !is_zero(q))
            .map(str::to_string)
    };
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in &containers {
        for r in ["cpu", "memory"] {
            let (req, lim) = (of(c, "requests", r), of(c, "limits", r));
            any |= req.is_some() || lim.is_some();
            guaranteed &= lim.is_some() && req == lim;
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

fn is_zero(q: &str) -> bool {
    q.trim_start_matches(['+', '-'])
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .chars()
        .all(|c| c == '0' || c == '.')
}

/// `SetDefaults_Pod`: service links on, and each container's requests default to its limits;
/// and the deprecated `serviceAccount` shown as `serviceAccountName`, as v1's conversion does.
fn pod(spec: &mut Map<String, Value>) {
    set(spec, "enableServiceLinks", json!(true));
    if let Some(name) = spec
        .get("serviceAccountName")
        .filter(|n| n.is_string())
        .cloned()
    {
        set(spec, "serviceAccount", name);
    }
    for field in ["initContainers", "containers"] {
        for c in each_object(spec, field) {
            let Some(Value::Object(res)) = c.get_mut("resources") else {
                continue;
            };
            let Some(Value::Object(limits)) = res.get("limits").cloned() else {
                continue;
            };
            let requests = res
                .entry("requests")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(requests) = requests {
                for (k, v) in limits {
                    requests.entry(k).or_insert(v);
                }
            }
        }
    }
}

/// `SetDefaults_PodSpec` and what it reaches: containers, probes, ports, volumes.
fn pod_spec(spec: &mut Map<String, Value>) {
    set(spec, "dnsPolicy", json!("ClusterFirst"));
    set(spec, "restartPolicy", json!("Always"));
    set(spec, "securityContext", json!({}));
    set(spec, "terminationGracePeriodSeconds", json!(30));
    set(spec, "schedulerName", json!("default-scheduler"));
    let host_network = spec.get("hostNetwork") == Some(&Value::Bool(true));
    for field in ["initContainers", "containers", "ephemeralContainers"] {
        for c in each_object(spec, field) {
            container(c, host_network);
        }
    }
    for v in each_object(spec, "volumes") {
        volume(v);
    }
}

fn container(c: &mut Map<String, Value>, host_network: bool) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
    let policy = pull_policy(image);
    set(c, "imagePullPolicy", json!(policy));
    set(c, "terminationMessagePath", json!("/dev/termination-log"));
    set(c, "terminationMessagePolicy", json!("File"));
    set(c, "resources", json!({}));
    for p in each_object(c, "ports") {
        set(p, "protocol", json!("TCP"));
        if host_network && p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0 {
            let port = p.get("containerPort").cloned().unwrap_or(Value::Null);
            p.insert("hostPort".into(), port);
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(Value::Object(p)) = c.get_mut(probe) {
            set(p, "timeoutSeconds", json!(1));
            set(p, "periodSeconds", json!(10));
            set(p, "successThreshold", json!(1));
            set(p, "failureThreshold", json!(3));
            handler(p);
        }
    }
    if let Some(Value::Object(lifecycle)) = c.get_mut("lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(Value::Object(h)) = lifecycle.get_mut(hook) {
                handler(h);
            }
        }
    }
    for e in each_object(c, "env") {
        if let Some(f) = object(e, &["valueFrom", "fieldRef"]) {
            set(f, "apiVersion", json!("v1"));
        }
    }
}

/// `SetDefaults_HTTPGetAction`: path `/`, scheme HTTP.
fn handler(h: &mut Map<String, Value>) {
    if let Some(Value::Object(get)) = h.get_mut("httpGet") {
        set(get, "path", json!("/"));
        set(get, "scheme", json!("HTTP"));
    }
}

/// `Always` for an image without a tag or tagged `latest`, `IfNotPresent` otherwise (a digest
/// included).
fn pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) if tag != "latest" => "IfNotPresent",
        _ => "Always",
    }
}

/// `SetDefaults_Volume` and its sources' defaults.
fn volume(v: &mut Map<String, Value>) {
    if v.keys().all(|k| k == "name") {
        v.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(Value::Object(s)) = v.get_mut(source) {
            set(s, "defaultMode", json!(420));
            field_refs(s);
            for src in each_object(s, "sources") {
                if let Some(Value::Object(d)) = src.get_mut("downwardAPI") {
                    field_refs(d);
                }
                if let Some(Value::Object(t)) = src.get_mut("serviceAccountToken") {
                    set(t, "expirationSeconds", json!(3600));
                }
            }
        }
    }
    if let Some(Value::Object(h)) = v.get_mut("hostPath") {
        set(h, "type", json!(""));
    }
}

/// A downward API source's items: `fieldRef.apiVersion` `v1`.
fn field_refs(s: &mut Map<String, Value>) {
    for item in each_object(s, "items") {
        if let Some(Value::Object(f)) = item.get_mut("fieldRef") {
            set(f, "apiVersion", json!("v1"));
        }
    }
}

#[cfg(test)]
mod tests;
