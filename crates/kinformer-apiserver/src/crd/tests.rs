use super::*;

fn widget_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {
                    "size": {"type": "integer"},
                    "color": {"type": "string", "default": "blue", "enum": ["blue", "red"]},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "port": {"x-kubernetes-int-or-string": true},
                    "items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer", "default": 1}}}}
                }
            },
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
        }
    })
}

fn res() -> ResourceInfo {
    ResourceInfo::new("example.com", "v1", "Widget", "widgets", Scope::Namespaced)
}

#[test]
fn prunes_defaults_and_keeps_metadata() {
    let mut obj = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "labels": {"a": "b"}},
        "spec": {"size": 3, "unknown": 1, "labels": {"x": "y"}, "free": {"any": {"thing": 1}},
                 "port": "http", "items": [{"m": 2}]},
        "extra": true
    })
    .as_object()
    .unwrap()
    .clone();
    apply_schema(&res(), &root_schema(&widget_schema()), &mut obj).unwrap();
    assert_eq!(
        Value::Object(obj),
        json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "labels": {"a": "b"}},
            "spec": {"size": 3, "color": "blue", "labels": {"x": "y"}, "free": {"any": {"thing": 1}},
                     "port": "http", "items": [{"n": 1}]}
        })
    );
}

#[test]
fn types_enums_and_required_are_checked() {
    let mut obj =
        json!({"metadata": {"name": "w"}, "spec": {"color": "green", "labels": {"x": 1}}})
            .as_object()
            .unwrap()
            .clone();
    let e = apply_schema(&res(), &root_schema(&widget_schema()), &mut obj).unwrap_err();
    assert_eq!(e.code, 422);
    assert!(
        e.message
            .starts_with("Widget.example.com \"w\" is invalid: ["),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("spec.size: Required value"),
        "{}",
        e.message
    );
    assert!(
        e.message
            .contains("spec.color: Unsupported value: \"green\""),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("spec.labels.x: Invalid value: \"integer\": spec.labels.x in body must be of type string: \"integer\""),
        "{}",
        e.message
    );
}

#[test]
fn crds_are_validated_and_established() {
    let mut crd = json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": widget_schema()},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size"}}}]}
    })
    .as_object()
    .unwrap()
    .clone();
    prepare(&mut crd).unwrap();
    assert_eq!(crd["status"]["conditions"][1]["type"], "Established");
    assert_eq!(crd["status"]["acceptedNames"]["listKind"], "WidgetList");
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    let again = {
        let mut c = crd.clone();
        prepare(&mut c).unwrap();
        c
    };
    assert_eq!(again, crd, "preparing twice changes nothing");
    let info = resource_info(&Value::Object(crd.clone())).unwrap();
    assert_eq!(info.api_version(), "example.com/v1");
    assert_eq!(info.short_names, ["wd"]);
    assert_eq!(info.categories, ["all"]);
    assert!(info.status_subresource);
    assert_eq!(info.scale.unwrap().spec_replicas_path, ".spec.size");

    let mut core = json!({"metadata": {"name": "deployments.apps"}, "spec": {"group": "apps", "scope": "Namespaced",
        "names": {"plural": "deployments", "kind": "Deployment"},
        "versions": [{"name": "v1", "served": true, "storage": true}]}})
    .as_object()
    .unwrap()
    .clone();
    let e = prepare(&mut core).unwrap_err();
    assert!(e.message.contains("at least one dot"), "{}", e.message);
    let mut bad =
        json!({"metadata": {"name": "wrong"}, "spec": {"group": "example.com", "scope": "Galaxy",
        "names": {"plural": "widgets", "kind": "Widget"}, "versions": []}})
        .as_object()
        .unwrap()
        .clone();
    let e = prepare(&mut bad).unwrap_err();
    assert_eq!(e.code, 422);
    assert!(e.message.contains("metadata.name"), "{}", e.message);
    assert!(e.message.contains("spec.scope"), "{}", e.message);
    assert!(e.message.contains("spec.versions"), "{}", e.message);
}

#[test]
fn deep_schemas_are_refused() {
    let mut schema = json!({"type": "string"});
    for _ in 0..100 {
        schema = json!({"type": "object", "properties": {"a": schema}});
    }
    assert!(check_schema(&schema, 0).is_err());
}
