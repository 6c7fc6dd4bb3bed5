use serde_json::{Value, json};

use super::*;
use crate::resource::builtin_resources;

fn res(group: &str, plural: &str) -> ResourceInfo {
    builtin_resources()
        .into_iter()
        .find(|r| r.group == group && r.plural == plural)
        .expect("a built-in resource")
}

fn policy(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": spec})
}

fn binding(name: &str, policy: &str, actions: &[&str], extra: Value) -> Value {
    let mut spec = json!({"policyName": policy, "validationActions": actions});
    if let (Value::Object(s), Value::Object(e)) = (&mut spec, extra) {
        s.extend(e);
    }
    json!({"metadata": {"name": name}, "spec": spec})
}

fn rules(groups: &[&str], resources: &[&str], ops: &[&str]) -> Value {
    json!({"resourceRules": [{"apiGroups": groups, "apiVersions": ["*"], "resources": resources, "operations": ops}]})
}

fn cm(name: &str, labels: Value, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "ns", "labels": labels}, "data": data})
}

struct Case {
    res: ResourceInfo,
    policies: Policies,
}

impl Case {
    fn new(res: ResourceInfo, bound: Vec<(Value, Value, Params)>) -> Self {
        Case {
            res,
            policies: Policies {
                bound: bound
                    .into_iter()
                    .map(|(policy, binding, params)| Bound {
                        policy,
                        binding,
                        params,
                    })
                    .collect(),
                namespace: Some(json!({"metadata": {"name": "ns", "labels": {"env": "test"}}})),
            },
        }
    }

    fn admit(
        &self,
        sub: Option<&str>,
        op: Operation,
        obj: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let name = obj
            .or(old)
            .and_then(|o| o.pointer("/metadata/name"))
            .and_then(Value::as_str)
            .unwrap_or("x")
            .to_string();
        let req = Request {
            res: &self.res,
            subresource: sub,
            namespace: "ns",
            name: &name,
            dry_run: false,
        };
        admit(&self.policies, &req, op, obj, old)
    }

    fn create(&self, obj: &Value) -> Result<(), ApiError> {
        self.admit(None, Operation::Create, Some(obj), None)
    }
}

fn cause(e: &ApiError) -> String {
    e.details
        .as_ref()
        .and_then(|d| d.pointer("/causes/0/message"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_validation_that_is_not_true_denies_in_kube_apiservers_words() {
    let p = policy(
        "limits",
        json!({
            "matchConstraints": rules(&[""], &["configmaps"], &["CREATE", "UPDATE"]),
            "validations": [
                {"expression": "object.data.size() <= 2"},
                {"expression": "!('x' in object.data)", "message": "  no x  ", "reason": "Forbidden"},
                {"expression": "!object.metadata.name.startsWith('bad')",
                 "messageExpression": "'name ' + object.metadata.name + ' refused'", "message": "unused"},
                {"expression": "object.metadata.name != 'multi'",
                 "messageExpression": "'two\\nlines'", "message": "fallback message"},
            ]
        }),
    );
    let c = Case::new(
        res("", "configmaps"),
        vec![(
            p,
            binding("b", "limits", &["Deny"], json!({})),
            Params::None,
        )],
    );
    assert!(c.create(&cm("ok", json!({}), json!({"a": "1"}))).is_ok());

    let e = c
        .create(&cm("big", json!({}), json!({"a": "1", "b": "2", "c": "3"})))
        .unwrap_err();
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    let words = "ValidatingAdmissionPolicy 'limits' with binding 'b' denied request: failed expression: object.data.size() <= 2";
    assert_eq!(
        e.message,
        format!("configmaps \"big\" is forbidden: {words}")
    );
    assert_eq!(cause(&e), words);

    let e = c
        .create(&cm("c", json!({}), json!({"x": "1"})))
        .unwrap_err();
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert!(e.message.ends_with("denied request: no x"), "{}", e.message);

    let e = c.create(&cm("bad-1", json!({}), json!({}))).unwrap_err();
    assert!(
        e.message.ends_with("denied request: name bad-1 refused"),
        "{}",
        e.message
    );
    // a message expression giving several lines falls back to the message
    let e = c.create(&cm("multi", json!({}), json!({}))).unwrap_err();
    assert!(
        e.message.ends_with("denied request: fallback message"),
        "{}",
        e.message
    );
}

#[test]
fn resource_rules_name_subresources_scopes_names_and_exclusions() {
    let deployments = res("apps", "deployments");
    let mk = |constraints: Value| {
        Case::new(
            res("apps", "deployments"),
            vec![(
                policy(
                    "p",
                    json!({"matchConstraints": constraints, "validations": [{"expression": "false"}]}),
                ),
                binding("b", "p", &["Deny"], json!({})),
                Params::None,
            )],
        )
    };
    let d = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1}});
    let denied = |c: &Case, sub: Option<&str>, op: Operation| {
        let old = (op != Operation::Create).then_some(&d);
        let obj = (op != Operation::Delete).then_some(&d);
        c.admit(sub, op, obj, old).is_err()
    };
    // "deployments" is the main resource only; "deployments/*" and "*/scale" reach /scale
    let c = mk(rules(&["apps"], &["deployments"], &["*"]));
    assert!(denied(&c, None, Operation::Create));
    assert!(!denied(&c, Some("scale"), Operation::Update));
    assert!(denied(
        &mk(rules(&["apps"], &["deployments/*"], &["UPDATE"])),
        Some("scale"),
        Operation::Update
    ));
    assert!(denied(
        &mk(rules(&["*"], &["*/scale"], &["UPDATE"])),
        Some("scale"),
        Operation::Update
    ));
    assert!(!denied(
        &mk(rules(&["*"], &["*"], &["UPDATE"])),
        Some("status"),
        Operation::Update
    ));
    // operations and groups
    let c = mk(rules(&["apps"], &["deployments"], &["CREATE"]));
    assert!(!denied(&c, None, Operation::Update));
    assert!(!denied(&c, None, Operation::Delete));
    assert!(!denied(
        &mk(rules(&[""], &["deployments"], &["*"])),
        None,
        Operation::Create
    ));
    // scope
    let scoped = |scope: &str| {
        json!({"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"],
                                  "operations": ["*"], "scope": scope}]})
    };
    assert!(denied(&mk(scoped("Namespaced")), None, Operation::Create));
    assert!(!denied(&mk(scoped("Cluster")), None, Operation::Create));
    // names, and an exclusion by name
    let named = json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
        "resources": ["deployments"], "operations": ["*"], "resourceNames": ["other"]}]});
    assert!(!denied(&mk(named), None, Operation::Create));
    let excluded = json!({
        "resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}],
        "excludeResourceRules": [{"apiGroups": ["apps"], "apiVersions": ["*"], "resources": ["deployments"],
                                  "operations": ["*"], "resourceNames": ["web"]}]});
    assert!(!denied(&mk(excluded.clone()), None, Operation::Create));
    // the exclusion does not keep the policy from applying to other names
    let p = policy(
        "p",
        json!({"matchConstraints": excluded, "validations": [{"expression": "false"}]}),
    );
    let b = binding("b", "p", &["Deny"], json!({}));
    assert!(may_apply(&p, &b, &deployments, None));
    // matchPolicy Exact compares versions; Equivalent does not
    let exact = |version: &str| {
        json!({"matchPolicy": "Exact", "resourceRules": [{"apiGroups": ["apps"], "apiVersions": [version],
            "resources": ["deployments"], "operations": ["*"]}]})
    };
    assert!(denied(&mk(exact("v1")), None, Operation::Create));
    assert!(!denied(&mk(exact("v1beta2")), None, Operation::Create));
}

#[test]
fn selectors_read_the_namespace_the_object_and_the_old_object() {
    let case = |binding_match: Value| {
        Case::new(
            res("", "configmaps"),
            vec![(
                policy(
                    "p",
                    json!({"matchConstraints": rules(&[""], &["configmaps"], &["*"]),
                           "validations": [{"expression": "false"}]}),
                ),
                binding(
                    "b",
                    "p",
                    &["Deny"],
                    json!({"matchResources": binding_match}),
                ),
                Params::None,
            )],
        )
    };
    let plain = cm("a", json!({}), json!({}));
    let labelled = cm("a", json!({"team": "x"}), json!({}));
    let ns = |sel: Value| case(json!({"namespaceSelector": sel}));
    assert!(
        ns(json!({"matchLabels": {"env": "test"}}))
            .create(&plain)
            .is_err()
    );
    assert!(
        ns(json!({"matchLabels": {"env": "prod"}}))
            .create(&plain)
            .is_ok()
    );
    assert!(
        ns(json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "test"]}]}))
            .create(&plain)
            .is_err()
    );
    assert!(
        ns(json!({"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}))
            .create(&plain)
            .is_ok()
    );
    let obj = case(json!({"objectSelector": {"matchLabels": {"team": "x"}}}));
    assert!(obj.create(&plain).is_ok());
    assert!(obj.create(&labelled).is_err());
    // an update is matched by the old object's labels too
    assert!(
        obj.admit(None, Operation::Update, Some(&plain), Some(&labelled))
            .is_err()
    );
    // a namespace's own labels decide for a namespace
    let nsres = res("", "namespaces");
    let c = Case::new(
        nsres,
        vec![(
            policy(
                "p",
                json!({"matchConstraints": rules(&[""], &["namespaces"], &["*"]),
                       "validations": [{"expression": "false"}]}),
            ),
            binding(
                "b",
                "p",
                &["Deny"],
                json!({"matchResources": {"namespaceSelector": {"matchLabels": {"guarded": "yes"}}}}),
            ),
            Params::None,
        )],
    );
    assert!(c.create(&json!({"metadata": {"name": "n1"}})).is_ok());
    assert!(
        c.create(&json!({"metadata": {"name": "n2", "labels": {"guarded": "yes"}}}))
            .is_err()
    );
}

#[test]
fn failures_follow_the_failure_policy_and_configuration_errors_deny_whatever_the_actions() {
    let mk = |failure: &str, actions: &[&str], params: Params| {
        Case::new(
            res("", "configmaps"),
            vec![(
                policy(
                    "p",
                    json!({"failurePolicy": failure,
                           "matchConstraints": rules(&[""], &["configmaps"], &["*"]),
                           "validations": [{"expression": "object.data.missing == 'x'"}]}),
                ),
                binding("b", "p", actions, json!({})),
                params,
            )],
        )
    };
    let o = cm("a", json!({}), json!({}));
    let e = mk("Fail", &["Deny"], Params::None).create(&o).unwrap_err();
    assert_eq!(e.code, 422);
    assert!(
        e.message.ends_with(
            "denied request: expression 'object.data.missing == 'x'' resulted in error: no such key: missing"
        ),
        "{}",
        e.message
    );
    assert!(mk("Ignore", &["Deny"], Params::None).create(&o).is_ok());
    // a binding whose params are missing refuses even when it only warns
    let missing = || {
        Params::Error(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        )
    };
    let e = mk("Fail", &["Warn"], missing()).create(&o).unwrap_err();
    assert!(
        e.message.ends_with(
            "denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
        ),
        "{}",
        e.message
    );
    assert!(mk("Ignore", &["Deny"], missing()).create(&o).is_ok());
}

#[test]
fn params_variables_and_match_conditions_are_evaluated_in_order() {
    let p = policy(
        "p",
        json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": rules(&[""], &["configmaps"], &["*"]),
            "variables": [
                {"name": "keys", "expression": "object.data.size()"},
                {"name": "over", "expression": "variables.keys - int(params.data.max)"},
            ],
            "matchConditions": [
                {"name": "not-exempt", "expression": "object.metadata.name != 'exempt'"},
            ],
            "validations": [
                {"expression": "variables.over <= 0",
                 "messageExpression": "params.metadata.name + ': ' + string(variables.over) + ' too many'"},
            ]
        }),
    );
    let limit = |name: &str, max: &str| json!({"metadata": {"name": name}, "data": {"max": max}});
    let c = Case::new(
        res("", "configmaps"),
        vec![(
            p,
            binding("b", "p", &["Deny"], json!({})),
            // each parameter is evaluated in turn
            Params::Found(vec![limit("loose", "5"), limit("tight", "1")]),
        )],
    );
    assert!(c.create(&cm("a", json!({}), json!({"a": "1"}))).is_ok());
    let e = c
        .create(&cm("b", json!({}), json!({"a": "1", "b": "2", "c": "3"})))
        .unwrap_err();
    assert!(
        e.message.ends_with("denied request: tight: 2 too many"),
        "{}",
        e.message
    );
    assert!(
        c.create(&cm("exempt", json!({}), json!({"a": "1", "b": "2"})))
            .is_ok()
    );
}

#[tokio::test]
async fn warn_bindings_add_warnings_and_audit_ones_nothing() {
    let c = Case::new(
        res("", "configmaps"),
        vec![
            (
                policy(
                    "p",
                    json!({"matchConstraints": rules(&[""], &["configmaps"], &["*"]),
                           "validations": [{"expression": "false", "message": "should not"}]}),
                ),
                binding("audit", "p", &["Audit"], json!({})),
                Params::None,
            ),
            (
                policy(
                    "p",
                    json!({"matchConstraints": rules(&[""], &["configmaps"], &["*"]),
                           "validations": [{"expression": "false", "message": "should not"}]}),
                ),
                binding("warn", "p", &["Warn", "Audit"], json!({})),
                Params::None,
            ),
        ],
    );
    let (out, warnings) =
        crate::warnings::recording(async { c.create(&cm("a", json!({}), json!({}))) }).await;
    assert!(out.is_ok());
    assert_eq!(
        warnings,
        ["Validation failed for ValidatingAdmissionPolicy 'p' with binding 'warn': should not"]
    );
}

#[test]
fn deletes_see_the_old_object_and_no_object() {
    let c = Case::new(
        res("", "configmaps"),
        vec![(
            policy(
                "p",
                json!({"matchConstraints": rules(&[""], &["configmaps"], &["DELETE"]),
                       "validations": [{"expression": "object == null && request.operation == 'DELETE' && oldObject.metadata.name != 'kept'",
                                        "message": "kept"}]}),
            ),
            binding("b", "p", &["Deny"], json!({})),
            Params::None,
        )],
    );
    let kept = cm("kept", json!({}), json!({}));
    assert!(c.admit(None, Operation::Delete, None, Some(&kept)).is_err());
    let other = cm("other", json!({}), json!({}));
    assert!(c.admit(None, Operation::Delete, None, Some(&other)).is_ok());
    // not bound to creates
    assert!(c.create(&kept).is_ok());
}
