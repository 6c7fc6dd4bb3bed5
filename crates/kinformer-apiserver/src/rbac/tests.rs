use serde_json::json;

use super::*;

fn rule(v: serde_json::Value) -> Rule {
    serde_json::from_value(v).unwrap()
}

fn resource(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
    Attributes {
        resource_request: true,
        verb: verb.into(),
        group: group.into(),
        namespace: "ns".into(),
        resource: resource.into(),
        subresource: sub.into(),
        name: name.into(),
        path: String::new(),
    }
}

fn path(verb: &str, p: &str) -> Attributes {
    Attributes {
        verb: verb.into(),
        path: p.into(),
        ..Attributes::default()
    }
}

fn user(name: &str, groups: &[&str]) -> User {
    User {
        username: name.into(),
        uid: String::new(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        extra: Default::default(),
        audiences: Vec::new(),
    }
}

/// `RuleAllows` as rbac/v1's helpers match: `*` anywhere, a subresource only by its own
/// `res/sub` or `*/sub`, resource names only when the request names one, path prefixes by a
/// trailing `*`.
#[test]
fn rules_match_as_rbac_matches_them() {
    let pods = rule(json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}));
    assert!(pods.allows(&resource("get", "", "pods", "", "x")));
    assert!(pods.allows(&resource("list", "", "pods", "", "")));
    assert!(!pods.allows(&resource("watch", "", "pods", "", "")));
    assert!(!pods.allows(&resource("get", "apps", "pods", "", "x")));
    assert!(!pods.allows(&resource("get", "", "pods", "log", "x")));
    let logs = rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/log"]}));
    assert!(logs.allows(&resource("get", "", "pods", "log", "x")));
    assert!(!logs.allows(&resource("get", "", "pods", "", "x")));
    assert!(!logs.allows(&resource("get", "", "pods", "xlog", "x")));
    let named = rule(json!({"verbs": ["get", "list"], "apiGroups": [""],
        "resources": ["configmaps"], "resourceNames": ["a"]}));
    assert!(named.allows(&resource("get", "", "configmaps", "", "a")));
    assert!(!named.allows(&resource("get", "", "configmaps", "", "b")));
    assert!(!named.allows(&resource("list", "", "configmaps", "", "")));
    let urls = rule(json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}));
    assert!(urls.allows(&path("get", "/healthz")));
    assert!(urls.allows(&path("get", "/apis/apps/v1")));
    assert!(!urls.allows(&path("get", "/healthz/etcd")));
    assert!(!urls.allows(&path("post", "/healthz")));
    assert!(!urls.allows(&resource("get", "", "healthz", "", "")));
    assert!(!pods.allows(&path("get", "/api")));
}

/// `appliesToUser`: a service account subject without a namespace is in the binding's; a
/// ClusterRoleBinding's must name one.
#[test]
fn subjects_apply_as_rbac_applies_them() {
    let sa = user(
        "system:serviceaccount:ns:robot",
        &["system:serviceaccounts", AUTHENTICATED],
    );
    let subject = |v| serde_json::from_value::<Subject>(v).unwrap();
    let in_binding_ns = subject(json!({"kind": "ServiceAccount", "name": "robot"}));
    assert!(in_binding_ns.is(&sa, "ns"));
    assert!(!in_binding_ns.is(&sa, "other"));
    assert!(!in_binding_ns.is(&sa, ""));
    assert_eq!(in_binding_ns.describe("ns"), r#"ServiceAccount "robot/ns""#);
    let named = subject(json!({"kind": "ServiceAccount", "name": "robot", "namespace": "ns"}));
    assert!(named.is(&sa, ""));
    assert!(
        !subject(json!({"kind": "ServiceAccount", "name": "rob", "namespace": "ns"})).is(&sa, "")
    );
    assert!(subject(json!({"kind": "Group", "name": AUTHENTICATED})).is(&sa, ""));
    assert!(!subject(json!({"kind": "User", "name": "robot"})).is(&sa, ""));
    assert!(subject(json!({"kind": "User", "name": "jane"})).is(&user("jane", &[]), ""));
    assert_eq!(
        subject(json!({"kind": "Group", "name": "g"})).describe(""),
        r#"Group "g""#
    );
}

#[test]
fn errors_aggregate_as_apimachinery_prints_them() {
    assert_eq!(aggregate(vec!["a".into()]), "a");
    assert_eq!(
        aggregate(vec!["a".into(), "b".into(), "a".into()]),
        "[a, b]"
    );
}

/// A rule lists its resource half and its path half separately, as `RulesFor` does.
#[test]
fn a_rule_splits_into_what_a_rules_review_lists() {
    let r = rule(
        json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"],
        "resourceNames": ["a"]}),
    );
    assert_eq!(
        r.halves(),
        (
            Some(
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"],
                "resourceNames": ["a"]})
            ),
            None
        )
    );
    let p = rule(json!({"verbs": ["get"], "nonResourceURLs": ["/x"]}));
    assert_eq!(
        p.halves(),
        (
            None,
            Some(json!({"verbs": ["get"], "nonResourceURLs": ["/x"]}))
        )
    );
}
