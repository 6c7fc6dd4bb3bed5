use super::*;
use crate::resource::Scope;

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
    apply_schema(&res(), &root_schema(&widget_schema()), &mut obj, None).unwrap();
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
    let e = apply_schema(&res(), &root_schema(&widget_schema()), &mut obj, None).unwrap_err();
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

/// The causes of one invalid spec under `schema` (the spec's own schema), as
/// `field: message` lines.
fn causes_of(schema: Value, spec: Value) -> Vec<String> {
    let root = json!({"type": "object", "properties": {"spec": schema}});
    let mut obj = json!({"metadata": {"name": "g"}, "spec": spec})
        .as_object()
        .unwrap()
        .clone();
    cause_lines(apply_schema(&res(), &root_schema(&root), &mut obj, None))
}

/// The causes of a refused write as `field: message` lines, none when it was accepted.
pub(super) fn cause_lines(result: Result<(), ApiError>) -> Vec<String> {
    match result {
        Ok(()) => Vec::new(),
        Err(e) => e.details.as_ref().unwrap()["causes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                format!(
                    "{}: {}",
                    c["field"].as_str().unwrap(),
                    c["message"].as_str().unwrap()
                )
            })
            .collect(),
    }
}

/// Value validations, each answer copied from kube-apiserver v1.36.3 (the differential
/// check's `crd-validation` scenario compares them all over HTTP).
#[test]
fn value_validations_are_worded_as_kube_apiserver_words_them() {
    let schema = json!({
        "type": "object", "minProperties": 1,
        "properties": {
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1, "exclusiveMaximum": true},
            "step": {"type": "integer", "multipleOf": 5},
            "fstep": {"type": "number", "multipleOf": 0.5},
            "small": {"type": "integer", "format": "int32"},
            "name": {"type": "string", "minLength": 3, "maxLength": 8, "pattern": "^[a-z]+$"},
            "tags": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string", "maxLength": 1}},
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                      "items": {"type": "object", "properties": {"port": {"type": "integer"}, "name": {"type": "string"}}}},
            "labels": {"type": "object", "maxProperties": 2, "additionalProperties": {"type": "string"}},
            "when": {"type": "string", "format": "date-time"},
            "choice": {"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]},
            "all": {"type": "string", "allOf": [{"pattern": "^a"}, {"maxLength": 1}]},
            "one": {"type": "integer", "oneOf": [{"minimum": 5}, {"maximum": 7}]},
            "notx": {"type": "string", "not": {"pattern": "^x"}},
            "nul": {"type": "string", "nullable": true},
            "source": {"type": "object", "properties": {"git": {"type": "string"}, "image": {"type": "string"}},
                       "oneOf": [{"required": ["git"]}, {"required": ["image"]}]}
        }
    });
    let cases: &[(Value, &[&str])] = &[
        (
            json!({"replicas": 0}),
            &[
                "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
            ],
        ),
        (
            json!({"replicas": 11}),
            &[
                "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
            ],
        ),
        (
            json!({"ratio": 0}),
            &["spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"],
        ),
        (
            json!({"ratio": 1}),
            &["spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1"],
        ),
        (
            json!({"step": 7}),
            &["spec.step: Invalid value: 7: spec.step in body should be a multiple of 5"],
        ),
        (
            json!({"fstep": 0.7}),
            &["spec.fstep: Invalid value: 0.7: spec.fstep in body should be a multiple of 0.5"],
        ),
        (
            json!({"replicas": 2.5}),
            &[
                "spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\"",
                "<nil>: Invalid value: \"\": Checked value must be of type integer (default format) in spec.replicas",
            ],
        ),
        (
            json!({"small": 3_000_000_000_u64}),
            &[
                "<nil>: Invalid value: \"\": Checked value must be of type integer with format int32 in spec.small",
            ],
        ),
        (
            json!({"name": "ab"}),
            &[
                "spec.name: Invalid value: \"ab\": spec.name in body should be at least 3 chars long",
            ],
        ),
        (
            json!({"name": "abcdefghi"}),
            &["spec.name: Too long: may not be more than 8 bytes"],
        ),
        (
            json!({"name": "AbcD"}),
            &["spec.name: Invalid value: \"AbcD\": spec.name in body should match '^[a-z]+$'"],
        ),
        (
            json!({"name": "A"}),
            &["spec.name: Invalid value: \"A\": spec.name in body should be at least 3 chars long"],
        ),
        (
            json!({"tags": []}),
            &["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"],
        ),
        (
            json!({"tags": ["a", "bc", "d", "e"]}),
            &[
                "spec.tags[1]: Too long: may not be more than 1 byte",
                "spec.tags: Too many: 4: must have at most 3 items",
            ],
        ),
        (
            json!({"set": ["a", "a", "a", "b", "b"]}),
            &[
                "spec.set[1]: Duplicate value: \"a\"",
                "spec.set[4]: Duplicate value: \"b\"",
            ],
        ),
        (
            json!({"ports": [{"port": 1}, {"port": 1, "name": "x"}]}),
            &["spec.ports[1]: Duplicate value: {\"port\":1}"],
        ),
        (
            json!({"labels": {"a": "1", "b": "2", "c": "3"}}),
            &["spec.labels: Too many: 3: must have at most 2 items"],
        ),
        (
            json!({}),
            &["spec: Invalid value: 0: spec in body should have at least 1 properties"],
        ),
        (
            json!({"when": "yesterday"}),
            &[
                "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\"",
            ],
        ),
        (
            json!({"choice": "c"}),
            &[
                "<nil>: Invalid value: \"\": \"spec.choice\" must validate at least one schema (anyOf)",
                "spec.choice: Invalid value: \"c\": spec.choice in body should match '^a'",
            ],
        ),
        (
            json!({"all": "bc"}),
            &[
                "spec.all: Invalid value: \"bc\": spec.all in body should match '^a'",
                "spec.all: Too long: may not be more than 1 byte",
                "<nil>: Invalid value: \"\": \"spec.all\" must validate all the schemas (allOf). None validated",
            ],
        ),
        (
            json!({"one": 6}),
            &[
                "<nil>: Invalid value: \"\": \"spec.one\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
            ],
        ),
        (
            json!({"notx": "xy"}),
            &["<nil>: Invalid value: \"\": \"spec.notx\" must not validate the schema (not)"],
        ),
        (
            json!({"source": {}}),
            &[
                "<nil>: Invalid value: \"\": \"spec.source\" must validate one and only one schema (oneOf). Found none valid",
                "spec.source.git: Required value",
            ],
        ),
        (
            json!({"nul": null, "replicas": 3, "name": "abc", "one": 10, "source": {"git": "g"}}),
            &[],
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(
            &causes_of(schema.clone(), spec.clone()),
            want,
            "spec {spec}"
        );
    }
}

#[test]
fn bad_patterns_are_reported_not_panicked_on() {
    let schema =
        json!({"type": "object", "properties": {"name": {"type": "string", "pattern": "("}}});
    let causes = causes_of(schema, json!({"name": "a"}));
    assert_eq!(causes.len(), 1);
    assert!(causes[0].contains("but pattern is invalid"), "{causes:?}");
}

/// An object stored before its schema grew stricter stays writable: what did not change is
/// not checked again (kube-apiserver's validation ratcheting, on by default since 1.33).
#[test]
fn unchanged_values_ratchet_on_update() {
    let spec = json!({"type": "object", "required": ["other"], "properties": {
        "name": {"type": "string", "maxLength": 3},
        "other": {"type": "string"},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
            "items": {"type": "object", "properties": {"port": {"type": "integer"}, "name": {"type": "string", "maxLength": 3}}}},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}},
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
    }});
    let root = json!({"type": "object", "properties": {"spec": spec}});
    let update = |old: Value, new: Value| {
        let obj = |spec: Value| {
            json!({"metadata": {"name": "g"}, "spec": spec})
                .as_object()
                .unwrap()
                .clone()
        };
        let (old, mut new) = (obj(old), obj(new));
        cause_lines(apply_schema(
            &res(),
            &root_schema(&root),
            &mut new,
            Some(&old),
        ))
    };
    let stored = json!({"name": "toolong", "other": "a",
        "ports": [{"port": 1, "name": "toolong"}], "tags": ["toolong"], "set": ["a", "a"]});
    // another field changes: the old breaches are not reported
    let mut changed = stored.clone();
    changed["other"] = json!("b");
    assert_eq!(update(stored.clone(), changed), Vec::<String>::new());
    // the breaching value itself changes
    let mut renamed = stored.clone();
    renamed["name"] = json!("stilltoolong");
    assert_eq!(
        update(stored.clone(), renamed),
        ["spec.name: Too long: may not be more than 3 bytes"]
    );
    // map-list items are paired by key; other lists' items only as a whole
    let mut moved = stored.clone();
    moved["ports"] = json!([{"port": 2, "name": "ok"}, {"port": 1, "name": "toolong"}]);
    moved["tags"] = json!(["toolong", "ok"]);
    assert_eq!(
        update(stored.clone(), moved),
        ["spec.tags[0]: Too long: may not be more than 3 bytes"]
    );
    // a set that repeated an item already may go on repeating
    let mut set = stored.clone();
    set["set"] = json!(["b", "b"]);
    assert_eq!(update(stored.clone(), set), Vec::<String>::new());
    // a missing required field is the changed spec's own cause
    let mut dropped = stored.clone();
    dropped.as_object_mut().unwrap().remove("other");
    assert_eq!(update(stored, dropped), ["spec.other: Required value"]);
}

/// `oneOf` and the like see the value as it is stored: pruned and defaulted first, as
/// kube-apiserver decodes a whole object before validating it (Gateway API's
/// `spec.addresses[]`: `type` defaults to `IPAddress`, and one branch takes `IPAddress`
/// values, the other every other type).
#[test]
fn combinators_see_defaulted_values() {
    let schema = json!({
        "type": "object",
        "properties": {"addresses": {"type": "array", "items": {
            "type": "object",
            "properties": {"type": {"type": "string", "default": "IPAddress"},
                           "value": {"type": "string"}},
            "oneOf": [
                {"properties": {"type": {"enum": ["IPAddress"]},
                                "value": {"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}}},
                {"properties": {"type": {"not": {"enum": ["IPAddress"]}}}}
            ]}}}
    });
    let spec = json!({"addresses": [
        {"value": "1.2.3.4"}, {"value": "1234::"}, {"type": "Hostname", "value": "example.com"}
    ]});
    assert_eq!(causes_of(schema.clone(), spec), Vec::<String>::new());
    let spec = json!({"addresses": [{"value": "1.2.3.4"}, {"value": "example.com"}]});
    assert_eq!(
        causes_of(schema, spec),
        [
            "<nil>: Invalid value: \"\": \"spec.addresses[1]\" must validate one and only one schema (oneOf). Found none valid",
            "<nil>: Invalid value: \"\": \"spec.addresses[1].value\" must validate at least one schema (anyOf)",
            "spec.addresses[1].value: Invalid value: \"example.com\": spec.addresses[1].value in body must be of type ipv4: \"example.com\"",
        ]
    );
}
