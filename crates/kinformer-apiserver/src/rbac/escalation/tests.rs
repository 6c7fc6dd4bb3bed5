use serde_json::json;

use super::{Rule, breakdown, compact, compact_string, covers, only_gc_fields_differ};

fn rule(v: serde_json::Value) -> Rule {
    serde_json::from_value(v).unwrap()
}

#[test]
fn a_rule_is_covered_piece_by_piece_as_rbac_compares_them() {
    let owner = rule(
        json!({"apiGroups": ["apps"], "resources": ["deployments", "*/scale"],
                            "verbs": ["get", "list"]}),
    );
    let wanted = rule(json!({"apiGroups": ["apps"],
                             "resources": ["deployments", "statefulsets/scale"],
                             "verbs": ["get", "watch"]}));
    let missing: Vec<Rule> = breakdown(&wanted)
        .into_iter()
        .filter(|sub| !covers(&owner, sub))
        .collect();
    let text: Vec<String> = compact(missing).iter().map(compact_string).collect();
    assert_eq!(
        text,
        [
            r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["watch"]}"#,
            r#"{APIGroups:["apps"], Resources:["statefulsets/scale"], Verbs:["watch"]}"#,
        ]
    );
    // names: an owner without names covers any; one with names only those
    let named = rule(
        json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                            "resourceNames": ["a"]}),
    );
    let want_a = rule(
        json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                             "resourceNames": ["a"]}),
    );
    let want_all = rule(json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}));
    assert!(covers(&named, &want_a));
    assert!(!covers(&named, &want_all));
    // paths: a trailing * covers what starts with the rest
    let paths = rule(json!({"nonResourceURLs": ["/healthz/*"], "verbs": ["get"]}));
    let sub = breakdown(&rule(
        json!({"nonResourceURLs": ["/healthz/etcd"], "verbs": ["get"]}),
    ));
    assert!(covers(&paths, &sub[0]));
}

#[test]
fn missing_rules_of_one_resource_are_compacted_into_one() {
    let wanted = rule(json!({"apiGroups": [""], "resources": ["pods"],
                             "verbs": ["get", "list", "delete"]}));
    let text: Vec<String> = compact(breakdown(&wanted))
        .iter()
        .map(compact_string)
        .collect();
    assert_eq!(
        text,
        [r#"{APIGroups:[""], Resources:["pods"], Verbs:["get" "list" "delete"]}"#]
    );
}

#[test]
fn owner_references_and_finalizers_alone_are_not_checked() {
    let old = json!({"metadata": {"name": "r", "resourceVersion": "1"}, "rules": []});
    let gc = json!({"metadata": {"name": "r", "resourceVersion": "2", "finalizers": ["x"],
                                 "ownerReferences": [{"uid": "u"}]}, "rules": []});
    assert!(only_gc_fields_differ(&gc, &old));
    let more = json!({"metadata": {"name": "r"}, "rules": [{"verbs": ["*"]}]});
    assert!(!only_gc_fields_differ(&more, &old));
}
