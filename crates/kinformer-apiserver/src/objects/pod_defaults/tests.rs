//! Pod spec defaults against kube-apiserver v1.36.3's answers to the same bodies
//! (`kubectl create --dry-run=server` of a Pod and of a Deployment with this pod spec,
//! recorded 2026-11-28; the ServiceAccount admission's token volume and mounts left out).

use serde_json::{Value, json};

use crate::objects::test_util::{body, res};

/// The pod spec sent: containers with and without tags, a digest, probes, a port, an env
/// field reference, limits, an init container, volumes of six kinds.
fn sent() -> Value {
    fixture("sent")
}

/// `kube_apiserver.json`: the spec sent (`sent`), and kube-apiserver's answers for a
/// Deployment's template (`template`) and a Pod (`pod`) with it.
fn fixture(name: &str) -> Value {
    let all: Value = serde_json::from_str(include_str!("kube_apiserver.json")).unwrap();
    all[name].clone()
}

#[test]
fn a_workloads_pod_template_is_defaulted_as_kube_apiserver_defaults_it() {
    let mut d = body(json!({"metadata": {"name": "w"}, "spec": {
        "selector": {"matchLabels": {"app": "w"}},
        "template": {"metadata": {"labels": {"app": "w"}}, "spec": sent()}}}));
    crate::objects::defaults::apply_defaults(&res("deployments"), &mut d);
    let want = fixture("template");
    assert_eq!(d["spec"]["template"]["spec"], want);
    // the same spec under every other kind that has a pod template
    for (plural, path) in [
        ("replicasets", "/spec/template/spec"),
        ("statefulsets", "/spec/template/spec"),
        ("daemonsets", "/spec/template/spec"),
        ("replicationcontrollers", "/spec/template/spec"),
        ("podtemplates", "/template/spec"),
    ] {
        let mut o = body(json!({"metadata": {"name": "w"}}));
        let mut at = serde_json::Map::new();
        at.insert("spec".into(), sent());
        if plural == "podtemplates" {
            o.insert("template".into(), Value::Object(at));
        } else {
            o.insert("spec".into(), json!({"template": Value::Object(at)}));
        }
        crate::objects::defaults::apply_defaults(&res(plural), &mut o);
        assert_eq!(Value::Object(o).pointer(path), Some(&want), "{plural}");
    }
    let mut cj = body(
        json!({"metadata": {"name": "w"}, "spec": {"schedule": "* * * * *",
        "jobTemplate": {"spec": {"template": {"spec": sent()}}}}}),
    );
    crate::objects::defaults::apply_defaults(&res("cronjobs"), &mut cj);
    assert_eq!(
        cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"],
        30
    );
    // templates sent without metadata read back with an empty one, as there
    assert_eq!(cj["spec"]["jobTemplate"]["metadata"], json!({}));
    assert_eq!(
        cj["spec"]["jobTemplate"]["spec"]["template"]["metadata"],
        json!({})
    );
}

#[test]
fn a_created_pod_gets_its_defaults_and_what_admission_adds() {
    let pods = res("pods");
    let mut p = body(json!({"metadata": {"name": "p1"}, "spec": sent()}));
    crate::objects::defaults::apply_defaults(&pods, &mut p);
    super::admit_created(&pods, &mut p);
    // the ServiceAccount admission's name (its token volume is left out of the fixture)
    let no_token = crate::objects::service_account::Account {
        automount: Some(false),
        ..Default::default()
    };
    crate::objects::service_account::admit(&mut p, &no_token);
    let want = fixture("pod");
    assert_eq!(p["spec"], want);
    // defaults fill only what is absent
    let mut q = body(json!({"metadata": {"name": "p2"}, "spec": {
        "containers": [{"name": "a", "image": "x:1", "imagePullPolicy": "Never"}],
        "restartPolicy": "Never", "priorityClassName": "high", "serviceAccountName": "robot",
        "tolerations": [{"operator": "Exists"}]}}));
    crate::objects::defaults::apply_defaults(&pods, &mut q);
    super::admit_created(&pods, &mut q);
    assert_eq!(q["spec"]["containers"][0]["imagePullPolicy"], "Never");
    assert_eq!(q["spec"]["restartPolicy"], "Never");
    assert_eq!(q["spec"]["serviceAccount"], "robot");
    assert!(q["spec"].get("priority").is_none());
    assert_eq!(q["spec"]["tolerations"], json!([{"operator": "Exists"}]));
}

#[test]
fn image_pull_policy_follows_the_tag() {
    for (image, policy) in [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("registry:5000/team/app", "Always"),
        ("registry:5000/team/app:v2", "IfNotPresent"),
        ("app@sha256:abc", "IfNotPresent"),
    ] {
        assert_eq!(super::pull_policy(image), policy, "{image}");
    }
}

#[test]
fn created_workloads_and_pods_start_with_the_status_kube_apiserver_gives_them() {
    let status = |plural: &str, spec: Value| {
        let o =
            body(json!({"metadata": {"name": "x"}, "spec": spec, "status": {"phase": "Running"}}));
        super::status_on_create(&res(plural), &o)
    };
    // as kube-apiserver v1.36.3 answered these creates (the sent status dropped)
    assert_eq!(status("deployments", json!({})), Some(json!({})));
    assert_eq!(
        status("replicasets", json!({})),
        Some(json!({"replicas": 0}))
    );
    assert_eq!(
        status("statefulsets", json!({})),
        Some(json!({"availableReplicas": 0, "replicas": 0}))
    );
    assert_eq!(
        status("daemonsets", json!({})),
        Some(
            json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0,
                    "numberMisscheduled": 0, "numberReady": 0})
        )
    );
    assert_eq!(status("jobs", json!({})), Some(json!({})));
    assert_eq!(status("cronjobs", json!({})), Some(json!({})));
    assert_eq!(
        status("replicationcontrollers", json!({})),
        Some(json!({"replicas": 0}))
    );
    // a node keeps the status it registers with; a configmap has none
    assert_eq!(status("nodes", json!({})), None);
    assert_eq!(status("configmaps", json!({})), None);
    // a pod is Pending, of the class its containers' CPU and memory make it
    let qos = |containers: Value| status("pods", json!({"containers": containers})).unwrap();
    let c = |resources: Value| json!({"name": "c", "image": "i", "resources": resources});
    assert_eq!(
        qos(json!([c(json!({}))])),
        json!({"phase": "Pending", "qosClass": "BestEffort"})
    );
    let both = json!({"cpu": "1", "memory": "1Gi"});
    assert_eq!(
        qos(json!([c(json!({"limits": both, "requests": both}))]))["qosClass"],
        "Guaranteed"
    );
    assert_eq!(
        qos(json!([c(
            json!({"limits": both, "requests": {"cpu": "500m", "memory": "1Gi"}})
        )]))["qosClass"],
        "Burstable"
    );
    assert_eq!(
        qos(json!([
            c(json!({"limits": both, "requests": both})),
            c(json!({}))
        ]))["qosClass"],
        "Burstable"
    );
    assert_eq!(
        qos(json!([c(json!({"requests": {"cpu": "0"}}))]))["qosClass"],
        "BestEffort"
    );
}

#[test]
fn a_created_job_gets_its_selector_and_a_daemonset_counts_template_changes() {
    let mut j = body(json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {}}}}));
    super::after_uid(&res("jobs"), &mut j, "j", "u-1");
    let labels = json!({"batch.kubernetes.io/controller-uid": "u-1", "batch.kubernetes.io/job-name": "j",
                        "controller-uid": "u-1", "job-name": "j"});
    assert_eq!(j["spec"]["template"]["metadata"]["labels"], labels);
    assert_eq!(j["metadata"]["labels"], labels);
    assert_eq!(
        j["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
    );
    assert_eq!(j["spec"]["manualSelector"], false);
    // a manual selector is the user's
    let mut m = body(json!({"metadata": {"name": "m", "labels": {"a": "b"}},
                            "spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}}}}));
    super::after_uid(&res("jobs"), &mut m, "m", "u-2");
    assert_eq!(m["spec"]["selector"], json!({"matchLabels": {"a": "b"}}));

    let key = "deprecated.daemonset.template.generation";
    let mut ds = body(
        json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": []}}}}),
    );
    super::after_uid(&res("daemonsets"), &mut ds, "d", "u-3");
    assert_eq!(ds["metadata"]["annotations"][key], "1");
    let mut same = ds.clone();
    same["spec"]["minReadySeconds"] = json!(5);
    super::daemonset_updated(&ds, &mut same);
    assert_eq!(same["metadata"]["annotations"][key], "1");
    let mut changed = ds.clone();
    changed["spec"]["template"]["metadata"] = json!({"labels": {"v": "2"}});
    super::daemonset_updated(&ds, &mut changed);
    assert_eq!(changed["metadata"]["annotations"][key], "2");
}

#[test]
fn a_pod_specs_empty_omitempty_fields_and_nulls_are_dropped_as_go_decodes_them() {
    let spec = json!({
        "serviceAccountName": "", "imagePullSecrets": [], "nodeSelector": {}, "hostNetwork": false,
        "securityContext": null, "containers": [], "hostname": "h", "hostPID": true,
        "terminationGracePeriodSeconds": 0
    });
    let mut p = body(json!({"metadata": {"name": "p"}, "spec": spec}));
    super::drop_zero_values(&res("pods"), &mut p);
    // `containers` has no omitempty; numbers are pointers in a pod spec
    assert_eq!(
        p["spec"],
        json!({"containers": [], "hostname": "h", "hostPID": true, "terminationGracePeriodSeconds": 0})
    );
    let mut d = body(json!({"spec": {"template": {"spec": {"tolerations": [], "nodeName": ""}}}}));
    super::drop_zero_values(&res("deployments"), &mut d);
    assert_eq!(d["spec"]["template"]["spec"], json!({}));
}
