use super::*;
use crate::resource::Scope;
use proptest::prelude::*;

/// Arbitrary JSON, biased towards schema keywords so schemas get walked.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just("object"),
            Just("array"),
            Just("string"),
            Just("integer"),
            Just("x"),
        ]
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("type".to_string()),
                    Just("properties".to_string()),
                    Just("items".to_string()),
                    Just("required".to_string()),
                    Just("default".to_string()),
                    Just("enum".to_string()),
                    Just("additionalProperties".to_string()),
                    Just("x-kubernetes-preserve-unknown-fields".to_string()),
                    Just("x-kubernetes-int-or-string".to_string()),
                    Just("spec".to_string()),
                    Just("a".to_string()),
                ],
                inner,
                0..5,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// Untrusted schemas and objects: a result or a 422, never a panic.
    #[test]
    fn schemas_apply_or_fail_cleanly(schema in json(), obj in json()) {
        let res = ResourceInfo::new("example.com", "v1", "Widget", "widgets", Scope::Namespaced);
        let root = root_schema(&schema);
        if let Value::Object(mut m) = obj
            && let Err(e) = apply_schema(&res, &root, &mut m, None)
        {
            prop_assert_eq!(e.code, 422);
        }
        let crd = json!({"metadata": {"name": "widgets.example.com"}, "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema}}]}});
        let mut m = crd.as_object().unwrap().clone();
        if let Err(e) = prepare(&mut m) {
            prop_assert_eq!(e.code, 422);
        }
        let _ = resource_info(&Value::Object(m));
    }
}
