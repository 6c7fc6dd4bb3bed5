use super::*;
use crate::objects::test_util::res;
use serde_json::json;

fn check(plural: &str, v: Value) -> Result<(), ApiError> {
    validate_object(&res(plural), v.as_object().unwrap())
}

/// The recorded kube-apiserver v1.35 answer for e2e/diff "invalid / bad-data-key".
#[test]
fn config_map_data_keys_are_config_keys() {
    let e = check(
        "configmaps",
        json!({"metadata": {"name": "a"}, "data": {"bad key!": "v"}}),
    )
    .unwrap_err();
    let msg = "Invalid value: \"bad key!\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
    assert_eq!(e.code, 422);
    assert_eq!(
        e.message,
        format!("ConfigMap \"a\" is invalid: data[bad key!]: {msg}")
    );
    assert_eq!(
        e.details,
        Some(json!({"name": "a", "kind": "ConfigMap", "causes": [
            {"reason": "FieldValueInvalid", "message": msg, "field": "data[bad key!]"}
        ]}))
    );
    assert!(
        check(
            "configmaps",
            json!({"metadata": {"name": "a"}, "data": {"ok.key-1_X": "v"}})
        )
        .is_ok()
    );
    let e = check(
        "secrets",
        json!({"metadata": {"name": "s"}, "data": {"..x": "dg=="}}),
    )
    .unwrap_err();
    assert!(
        e.message
            .ends_with("data[..x]: Invalid value: \"..x\": must not start with '..'"),
        "{}",
        e.message
    );
}

/// The recorded kube-apiserver v1.35 answer for e2e/diff "invalid / bad-label".
#[test]
fn label_keys_are_qualified_names() {
    let e = check(
        "configmaps",
        json!({"metadata": {"name": "b", "labels": {"bad label!": "x"}}}),
    )
    .unwrap_err();
    let msg = "Invalid value: \"bad label!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    assert_eq!(
        e.message,
        format!("ConfigMap \"b\" is invalid: metadata.labels: {msg}")
    );
    assert_eq!(
        e.details.as_ref().unwrap()["causes"],
        json!([{"reason": "FieldValueInvalid", "message": msg, "field": "metadata.labels"}])
    );
}

#[test]
fn every_metadata_violation_is_reported() {
    let e = check(
        "pods",
        json!({"metadata": {
            "name": "Bad_Name",
            "labels": {"example.com/app": "-bad", "ok": "fine"},
            "annotations": {"Example.com/Note": "x", "a/b/c": "y"},
            "finalizers": ["kubernetes.io/pv-protection", "bad finalizer"]
        }}),
    )
    .unwrap_err();
    let fields: Vec<&str> = e.details.as_ref().unwrap()["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "metadata.name",
            "metadata.labels",
            "metadata.annotations",
            "metadata.finalizers"
        ]
    );
    assert!(e.message.starts_with("Pod \"Bad_Name\" is invalid: [metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"), "{}", e.message);
    assert!(e.message.contains("metadata.labels: Invalid value: \"-bad\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"), "{}", e.message);
    assert!(
        e.message.contains(
            "metadata.annotations: Invalid value: \"a/b/c\": a valid label key must consist of"
        ),
        "{}",
        e.message
    );
}

#[test]
fn owner_references_need_every_identifying_field() {
    let e = check(
        "configmaps",
        json!({"metadata": {"name": "c", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r"}]}}),
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "ConfigMap \"c\" is invalid: metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty"
    );
}

#[test]
fn name_rules_per_kind() {
    assert!(check("namespaces", json!({"metadata": {"name": "a.b"}})).is_err());
    assert!(check("pods", json!({"metadata": {"name": "a.b"}})).is_ok());
    // RBAC's names are path segments (the bootstrap roles are named `system:...`)
    assert!(
        check(
            "clusterroles",
            json!({"metadata": {"name": "system:Agg_x"}})
        )
        .is_ok()
    );
    let e = check("clusterroles", json!({"metadata": {"name": "a/b%c"}})).unwrap_err();
    assert!(
        e.message.ends_with(
            r#"[metadata.name: Invalid value: "a/b%c": may not contain '/', metadata.name: Invalid value: "a/b%c": may not contain '%']"#
        ),
        "{}",
        e.message
    );
    let e = check("services", json!({"metadata": {"name": "1abc"}})).unwrap_err();
    assert!(
        e.message.contains("a DNS-1035 label must consist"),
        "{}",
        e.message
    );
    let long = "a".repeat(254);
    let e = check("pods", json!({"metadata": {"name": long}})).unwrap_err();
    assert!(e.message.contains("must be no more than 253 characters"));
    assert_eq!(
        qualified_name_errors(&"x".repeat(64)),
        vec!["name part must be no more than 63 bytes".to_string()]
    );
    assert_eq!(
        qualified_name_errors("/a"),
        vec!["prefix part must be non-empty".to_string()]
    );
    // apimachinery 1.36's words for a valid subdomain that is no label
    assert_eq!(dns1123_label_errors("a.b"), vec!["must not contain dots"]);
    assert!(dns1123_label_errors("a..b")[0].starts_with("a lowercase RFC 1123 label"));
    assert!(label_value_errors("").is_empty());
    assert!(
        check(
            "pods",
            json!({"metadata": {"name": "p", "generateName": "web-"}})
        )
        .is_ok()
    );
    assert!(
        check(
            "pods",
            json!({"metadata": {"name": "p", "generateName": "Web-"}})
        )
        .is_err()
    );
}
