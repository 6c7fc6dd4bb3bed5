use serde_json::{Map, Value, json};

use super::{converted_objects, go_type, restore_metadata, review_version};

fn map(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn the_first_review_version_spoken_is_sent() {
    assert_eq!(
        review_version(&json!({"conversionReviewVersions": ["v2", "v1beta1", "v1"]})),
        Some("v1beta1")
    );
    assert_eq!(
        review_version(&json!({"conversionReviewVersions": ["v1"]})),
        Some("v1")
    );
    assert_eq!(
        review_version(&json!({"conversionReviewVersions": ["v3"]})),
        None
    );
}

#[test]
fn an_answer_is_checked_as_kube_apiserver_checks_it() {
    let ok = |response: Value| {
        serde_json::to_vec(&json!({"apiVersion": "apiextensions.k8s.io/v1",
                                    "kind": "ConversionReview", "response": response}))
        .unwrap()
    };
    let objs = converted_objects(
        &ok(json!({"uid": "u", "result": {"status": "Success"}, "convertedObjects": [{}]})),
        "v1",
        "u",
    )
    .unwrap();
    assert_eq!(objs, vec![json!({})]);
    assert_eq!(
        converted_objects(
            &ok(json!({"uid": "x", "result": {"status": "Success"}})),
            "v1",
            "u"
        )
        .unwrap_err(),
        r#"expected response.uid="u", got "x""#
    );
    assert_eq!(
        converted_objects(
            &ok(json!({"uid": "u", "result": {"status": "Failure"}})),
            "v1",
            "u"
        )
        .unwrap_err(),
        "response.result.status was 'Failure', not 'Success'"
    );
    assert_eq!(
        converted_objects(
            &ok(json!({"uid": "u", "result": {"status": "Failure", "message": "no"}})),
            "v1",
            "u"
        )
        .unwrap_err(),
        "no"
    );
    let bare =
        serde_json::to_vec(&json!({"response": {"uid": "x", "result": {"status": "Success"}}}))
            .unwrap();
    assert_eq!(
        converted_objects(&bare, "v1", "u").unwrap_err(),
        "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got , Kind="
    );
    // a v1beta1 answer's kind and uid are not checked
    assert!(converted_objects(&bare, "v1beta1", "u").unwrap().is_empty());
    let none = serde_json::to_vec(&json!({"apiVersion": "apiextensions.k8s.io/v1",
                                          "kind": "ConversionReview"}))
    .unwrap();
    assert_eq!(
        converted_objects(&none, "v1", "u").unwrap_err(),
        "no response provided"
    );
}

#[test]
fn metadata_is_the_originals_but_for_labels_and_annotations() {
    let original = map(
        json!({"metadata": {"name": "a", "uid": "u", "resourceVersion": "7",
                                           "labels": {"keep": "1"}, "annotations": {"a": "1"}}}),
    );
    let mut converted = map(json!({"metadata": {"name": "a", "resourceVersion": "99",
                                                "labels": {"keep": "1", "added": "2"}}}));
    restore_metadata(&original, &mut converted).unwrap();
    assert_eq!(
        converted["metadata"],
        json!({"name": "a", "uid": "u", "resourceVersion": "7",
               "labels": {"keep": "1", "added": "2"}})
    );
}

#[test]
fn bad_metadata_from_a_webhook_is_refused_in_kube_apiservers_words() {
    let original = map(json!({"metadata": {"name": "a"}}));
    let refused = |converted: Value| restore_metadata(&original, &mut map(converted)).unwrap_err();
    assert_eq!(refused(json!({})), "missing metadata in converted object");
    assert_eq!(
        refused(json!({"metadata": "x"})),
        "invalid metadata of type string in converted object"
    );
    assert_eq!(
        refused(json!({"metadata": {"labels": ["x"]}})),
        "invalid metadata.labels of type []interface {} in converted object"
    );
    assert_eq!(
        refused(json!({"metadata": {"annotations": {"k": 1}}})),
        "metadata.annotations[k] must be a string, but is int64 in converted object"
    );
    assert!(
        refused(json!({"metadata": {"labels": {"bad label!": "x"}}})).starts_with(
            "metadata.labels: Invalid value: \"bad label!\": name part must consist of"
        )
    );
    assert!(
        refused(json!({"metadata": {"annotations": {"bad key!": "x"}}}))
            .starts_with("metadata.annotation: Invalid value: \"bad key!\": ")
    );
    let two = refused(json!({"metadata": {"labels": {"bad!": "x", "worse!": "y"}}}));
    assert!(
        two.starts_with("[metadata.labels: ") && two.ends_with(']'),
        "{two}"
    );
}

#[test]
fn go_type_names_json_values_as_go_decodes_them() {
    assert_eq!(go_type(&json!(1)), "int64");
    assert_eq!(go_type(&json!(1.5)), "float64");
    assert_eq!(go_type(&json!({})), "map[string]interface {}");
    assert_eq!(go_type(&Value::Null), "<nil>");
}
