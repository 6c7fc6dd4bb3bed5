//! Unit tests of the mutating admission policies, after kube-apiserver v1.36's
//! `policy/mutating` tests and integration tests (the same inputs and outcomes).

use serde_json::{Value, json};

use super::*;
use crate::admission::policy::Bound;
use crate::resource::{ResourceInfo, builtin_resources};

fn res(group: &str, plural: &str) -> ResourceInfo {
    builtin_resources()
        .into_iter()
        .find(|r| r.group == group && r.plural == plural)
        .expect("a built-in resource")
}

/// A policy on creates and updates of `resources`, with `mutations`.
fn policy(name: &str, resources: &[&str], reinvocation: &str, mutations: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": ["", "apps"], "apiVersions": ["*"],
            "resources": resources, "operations": ["CREATE", "UPDATE"]}]},
        "reinvocationPolicy": reinvocation,
        "mutations": mutations,
    }})
}

fn apply(expr: &str) -> Value {
    json!({"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expr}})
}

fn patch(expr: &str) -> Value {
    json!({"patchType": "JSONPatch", "jsonPatch": {"expression": expr}})
}

fn bound(policy: Value) -> Bound {
    let name = format!("{}-binding", name_of(&policy));
    let binding = json!({"metadata": {"name": name}, "spec": {"policyName": name_of(&policy)}});
    Bound {
        policy,
        binding,
        params: Params::None,
    }
}

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"}, "finalizers": ["f1"]},
        "spec": {"containers": [{"name": "app", "image": "nginx", "args": ["x"]}],
                 "tolerations": [{"key": "k"}]}})
}

/// Runs `bound` over `object` (a create), the first pass, then the second when asked for.
fn run(res: &ResourceInfo, bound: Vec<Bound>, object: &mut Value) -> Result<bool, ApiError> {
    let policies = Policies {
        bound,
        namespace: Some(json!({"metadata": {"name": "ns"}})),
    };
    let name = name_of(object).to_string();
    let req = Request {
        res,
        subresource: None,
        namespace: "ns",
        name: &name,
        dry_run: false,
    };
    let mut passes = Passes::default();
    mutate(
        &policies,
        &req,
        Operation::Create,
        object,
        None,
        &mut passes,
        false,
    )?;
    let second = passes.wants_second();
    if second {
        mutate(
            &policies,
            &req,
            Operation::Create,
            object,
            None,
            &mut passes,
            true,
        )?;
    }
    Ok(second)
}

#[test]
fn an_apply_configuration_adds_a_label_and_a_sidecar_merged_by_key() {
    let pods = res("", "pods");
    let p = policy(
        "sidecar",
        &["pods"],
        "Never",
        json!([apply(
            r#"Object{metadata: Object.metadata{labels: {"added": "yes"}},
                spec: Object.spec{containers: [Object.spec.containers{name: "sidecar", image: "busybox"},
                                               Object.spec.containers{name: "app", image: "nginx:2"}]}}"#
        )]),
    );
    let mut object = pod();
    run(&pods, vec![bound(p)], &mut object).expect("applied");
    assert_eq!(
        object["metadata"]["labels"],
        json!({"a": "b", "added": "yes"})
    );
    // the live item merged by its key; the new one placed before the next item both lists
    // have (structured-merge-diff's order)
    assert_eq!(
        object["spec"]["containers"],
        json!([{"name": "sidecar", "image": "busybox"},
               {"name": "app", "image": "nginx:2", "args": ["x"]}])
    );
    assert_eq!(object["spec"]["tolerations"], json!([{"key": "k"}]));
    assert_eq!(object["metadata"]["finalizers"], json!(["f1"]));
}

#[test]
fn an_apply_configuration_may_not_touch_atomic_lists_and_fails_closed_by_default() {
    let pods = res("", "pods");
    let expr = r#"Object{spec: Object.spec{tolerations: [Object.spec.tolerations{key: "k2"}]}}"#;
    let mut object = pod();
    let e = run(
        &pods,
        vec![bound(policy(
            "tol",
            &["pods"],
            "Never",
            json!([apply(expr)]),
        ))],
        &mut object,
    )
    .expect_err("refused");
    assert_eq!(e.code, 403);
    assert_eq!(e.reason, "Invalid");
    assert_eq!(
        e.message,
        "policy 'tol' with binding 'tol-binding' denied request: error applying patch: invalid \
         ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.tolerations"
    );
    // under Ignore the failing mutation is passed over and the next one applies
    let mut p = policy(
        "tol",
        &["pods"],
        "Never",
        json!([
            apply(expr),
            apply(r#"Object{metadata: Object.metadata{labels: {"next": "ran"}}}"#)
        ]),
    );
    p["spec"]["failurePolicy"] = json!("Ignore");
    let mut object = pod();
    run(&pods, vec![bound(p)], &mut object).expect("ignored");
    assert_eq!(object["spec"]["tolerations"], json!([{"key": "k"}]));
    assert_eq!(object["metadata"]["labels"]["next"], json!("ran"));
}

#[test]
fn a_deployment_selector_is_an_atomic_struct() {
    let deployments = res("apps", "deployments");
    let expr =
        r#"Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {"l": "v"}}}}"#;
    let mut object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"app": "d"}}}});
    let e = run(
        &deployments,
        vec![bound(policy(
            "sel",
            &["deployments"],
            "Never",
            json!([apply(expr)]),
        ))],
        &mut object,
    )
    .expect_err("refused");
    assert!(
        e.message
            .ends_with("may not mutate atomic arrays, maps or structs: .spec.selector"),
        "{}",
        e.message
    );
}

#[test]
fn a_type_name_must_follow_the_field_path() {
    let deployments = res("apps", "deployments");
    let expr = r#"Object{spec: Object.specx{replicas: 3}}"#;
    let mut object = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {}});
    let e = run(
        &deployments,
        vec![bound(policy(
            "t",
            &["deployments"],
            "Never",
            json!([apply(expr)]),
        ))],
        &mut object,
    )
    .expect_err("refused");
    assert!(
        e.message.ends_with(
            r#"type mismatch: unexpected type name "Object.specx", expected "Object.spec", which matches field name path from root Object type"#
        ),
        "{}",
        e.message
    );
    let ok = r#"Object{spec: Object.spec{replicas: 1337}}"#;
    run(
        &deployments,
        vec![bound(policy(
            "t",
            &["deployments"],
            "Never",
            json!([apply(ok)]),
        ))],
        &mut object,
    )
    .expect("applied");
    assert_eq!(object["spec"]["replicas"], json!(1337));
}

#[test]
fn mutations_see_each_other_and_variables_are_evaluated_again_for_each() {
    let endpoints = res("", "endpoints");
    let mut p = policy(
        "vars",
        &["endpoints"],
        "Never",
        json!([
            apply(r#"Object{metadata: Object.metadata{annotations: {"foo1": variables.foo1}}}"#),
            patch(
                r#"[JSONPatch{op: "test", path: "/metadata/annotations", value: {"foo1": variables.foo1}},
                      JSONPatch{op: "add", path: "/metadata/annotations/foo2", value: variables.foo2}]"#
            ),
            apply(
                r#"Object{metadata: Object.metadata{annotations: {"count": string(variables.count)}}}"#
            ),
        ]),
    );
    p["spec"]["variables"] = json!([
        {"name": "foo1", "expression": "\"foo1\" + \"Value\""},
        {"name": "foo2", "expression": "variables.foo1.replace(\"1\", \"2\")"},
        {"name": "count", "expression": "has(object.metadata.annotations) ? size(object.metadata.annotations) : 0"},
    ]);
    let mut object = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e", "namespace": "ns"}});
    run(&endpoints, vec![bound(p)], &mut object).expect("applied");
    assert_eq!(
        object["metadata"]["annotations"],
        json!({"foo1": "foo1Value", "foo2": "foo2Value", "count": "2"})
    );
}

#[test]
fn json_patches_as_evanphx_v4_applies_them() {
    let deployments = res("apps", "deployments");
    let d = || {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a", "image": "i"}]}}}})
    };
    let one = |expr: &str, object: &mut Value| {
        run(
            &deployments,
            vec![bound(policy(
                "j",
                &["deployments"],
                "Never",
                json!([patch(expr)]),
            ))],
            object,
        )
    };
    // a failed test discards the whole patch, silently
    let mut o = d();
    one(
        r#"[JSONPatch{op: "replace", path: "/spec/replicas", value: 3},
            JSONPatch{op: "test", path: "/spec/replicas", value: 100}]"#,
        &mut o,
    )
    .expect("no error");
    assert_eq!(o["spec"]["replicas"], json!(1));
    one(
        r#"[JSONPatch{op: "test", path: "/spec/replicas", value: 1},
            JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]"#,
        &mut o,
    )
    .expect("applied");
    assert_eq!(o["spec"]["replicas"], json!(3));
    // an added container built as the list's type; a negative index counts from the end
    one(r#"[JSONPatch{op: "add", path: "/spec/template/spec/containers/-",
                      value: Object.spec.template.spec.containers{name: "x", ports: [Object.spec.template.spec.containers.ports{containerPort: 8080}]}},
            JSONPatch{op: "add", path: "/spec/template/spec/containers/-1", value: {"name": "y"}}]"#, &mut o)
        .expect("applied");
    let names: Vec<&str> = o["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "x", "y"]);
    assert_eq!(
        o["spec"]["template"]["spec"]["containers"][1]["ports"],
        json!([{"containerPort": 8080}])
    );
    // escaped keys; a replace of a missing key adds it
    one(r#"[JSONPatch{op: "add", path: "/metadata/labels", value: {}},
            JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("k8s.io/x~y"), value: "true"},
            JSONPatch{op: "replace", path: "/metadata/annotations", value: {"r": "1"}}]"#, &mut o)
        .expect("applied");
    assert_eq!(o["metadata"]["labels"], json!({"k8s.io/x~y": "true"}));
    assert_eq!(o["metadata"]["annotations"], json!({"r": "1"}));
    // an add under a missing parent is an error, in evanphx's words
    let e = one(
        r#"[JSONPatch{op: "add", path: "/metadata/missing/x", value: "v"}]"#,
        &mut o,
    )
    .expect_err("refused");
    assert!(
        e.message.ends_with(
            r#"JSON Patch: add operation does not apply: doc is missing path: "/metadata/missing/x": missing value"#
        ),
        "{}",
        e.message
    );
    let e = one(
        r#"[JSONPatch{op: "remove", path: "/metadata/generateName"}]"#,
        &mut o,
    )
    .expect_err("refused");
    assert!(
        e.message.ends_with(
            "JSON Patch: error in remove for path: '/metadata/generateName': Unable to remove nonexistent key: generateName: missing value"
        ),
        "{}",
        e.message
    );
    let e = one(r#""not a patch""#, &mut o).expect_err("refused");
    assert!(
        e.message
            .ends_with("must evaluate to list(JSONPatch) but got string"),
        "{}",
        e.message
    );
}

#[test]
fn if_needed_policies_run_again_in_the_second_pass() {
    // each increments the annotation `foo`: three in the first pass, the two IfNeeded again
    let endpoints = res("", "endpoints");
    let inc = r#"Object{metadata: Object.metadata{annotations: {"foo": string(int(object.metadata.annotations["foo"]) + 1)}}}"#;
    let policies = vec![
        bound(policy(
            "p1",
            &["endpoints"],
            "IfNeeded",
            json!([apply(inc)]),
        )),
        bound(policy(
            "p2",
            &["endpoints"],
            "IfNeeded",
            json!([apply(inc)]),
        )),
        bound(policy("p3", &["endpoints"], "Never", json!([apply(inc)]))),
    ];
    let mut object = json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "e", "namespace": "ns", "annotations": {"foo": "0"}}});
    assert!(run(&endpoints, policies, &mut object).expect("applied"));
    assert_eq!(object["metadata"]["annotations"]["foo"], json!("5"));
}

#[test]
fn match_conditions_decide_and_do_not_see_the_namespace() {
    let pods = res("", "pods");
    let mut p = policy(
        "cond",
        &["pods"],
        "Never",
        json!([apply(
            r#"Object{metadata: Object.metadata{labels: {"applied": "updated"}}}"#
        )]),
    );
    p["spec"]["matchConditions"] = json!([
        {"name": "env", "expression": "object.metadata.?labels[\"environment\"] == optional.of(\"test\")"},
        {"name": "no-namespace", "expression": "namespaceObject == null"},
    ]);
    let mut test = pod();
    test["metadata"]["labels"]["environment"] = json!("test");
    run(&pods, vec![bound(p.clone())], &mut test).expect("applied");
    assert_eq!(test["metadata"]["labels"]["applied"], json!("updated"));
    let mut production = pod();
    production["metadata"]["labels"]["environment"] = json!("production");
    let before = production.clone();
    run(&pods, vec![bound(p)], &mut production).expect("skipped");
    assert_eq!(production, before);
}

#[test]
fn constructed_types_are_read_from_the_expression() {
    let names: Vec<String> = patch::constructed_types(
        r#"Object{spec: Object.spec{x: [Object.spec.x {a: 1}]}} + [JSONPatch{op: "add"}] + MyObject{} + a.Object{}"#,
    )
    .collect();
    assert_eq!(
        names,
        ["Object", "Object.spec", "Object.spec.x", "JSONPatch"]
    );
}
