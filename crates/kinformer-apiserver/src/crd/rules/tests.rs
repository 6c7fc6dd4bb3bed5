use futures::FutureExt;
use serde_json::json;

use super::*;
use crate::crd::tests::cause_lines;
use crate::crd::{apply_schema, root_schema};
use crate::resource::{ResourceInfo, Scope};

mod sets_and_format;

fn res() -> ResourceInfo {
    ResourceInfo::new("example.com", "v1", "Ruler", "rulers", Scope::Namespaced)
}

fn object(name: &str, spec: Value) -> Map<String, Value> {
    json!({"apiVersion": "example.com/v1", "kind": "Ruler", "metadata": {"name": name}, "spec": spec})
        .as_object()
        .unwrap()
        .clone()
}

/// The causes (`field: message`) of writing `spec` under `spec_schema` (replacing `old`'s spec
/// on an update), none when it is accepted.
pub(super) fn causes(spec_schema: Value, spec: Value, old: Option<Value>) -> Vec<String> {
    causes_at_root(json!({}), spec_schema, "r", spec, old)
}

fn causes_at_root(
    root_rules: Value,
    spec_schema: Value,
    name: &str,
    spec: Value,
    old: Option<Value>,
) -> Vec<String> {
    let mut root = json!({"type": "object", "properties": {"spec": spec_schema}});
    if root_rules != json!({}) {
        root["x-kubernetes-validations"] = root_rules;
    }
    let mut obj = object(name, spec);
    let old = old.map(|o| object(name, o));
    cause_lines(apply_schema(
        &res(),
        &root_schema(&root),
        &mut obj,
        old.as_ref(),
    ))
}

/// Rules, each with itself as its message.
pub(super) fn each_its_own_message(rules: &[&str]) -> Value {
    rules
        .iter()
        .map(|r| json!({"rule": r, "message": r}))
        .collect()
}

pub(super) fn with_rules(mut schema: Value, rules: Value) -> Value {
    schema["x-kubernetes-validations"] = rules;
    schema
}

/// Each answer as kube-apiserver v1.36.3 gives it (the differential check's `crd-rules`
/// scenario compares them over HTTP).
#[test]
fn failed_rules_are_worded_as_kube_apiserver_words_them() {
    let spec = with_rules(
        json!({"type": "object", "properties": {
            "replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
            "name": with_rules(json!({"type": "string"}), json!([{"rule": "self.startsWith('w-')"}])),
            "size": with_rules(json!({"type": "integer"}), json!([{"rule": "self % 2 == 0",
                "messageExpression": "self > 100 ? 'a large size must be even' : 'a small size must be even'"}])),
            "ratio": with_rules(json!({"type": "number"}), json!([{"rule": "self < 1.5", "message": "ratio must be below 1.5"}])),
            "mode": with_rules(json!({"type": "string"}), json!([{"rule": "self != 'forbidden'",
                "message": "this mode is forbidden", "reason": "FieldValueForbidden"}])),
            "a": {"type": "string"}, "b": {"type": "string"},
            "opt": {"type": "object", "properties": {"x": {"type": "integer"}}},
            "items": {"type": "array", "items": with_rules(
                json!({"type": "object", "properties": {"weight": {"type": "integer"}}}),
                json!([{"rule": "self.weight >= 0", "message": "weight must not be negative"}]))}
        }}),
        json!([
            {"rule": "!has(self.replicas) || !has(self.maxReplicas) || self.replicas <= self.maxReplicas",
             "message": "replicas must not exceed maxReplicas"},
            {"rule": "!has(self.a) || has(self.b)", "message": "b is required with a",
             "fieldPath": ".b", "reason": "FieldValueRequired"},
            {"rule": "!has(self.opt) || self.opt.x > 0", "message": "opt.x must be positive"}
        ]),
    );
    for (value, want) in [
        (
            json!({"replicas": 4, "maxReplicas": 3}),
            "spec: Invalid value: replicas must not exceed maxReplicas",
        ),
        (
            json!({"name": "x"}),
            "spec.name: Invalid value: \"x\": failed rule: self.startsWith('w-')",
        ),
        (
            json!({"size": 3}),
            "spec.size: Invalid value: 3: a small size must be even",
        ),
        (
            json!({"size": 301}),
            "spec.size: Invalid value: 301: a large size must be even",
        ),
        (
            json!({"ratio": 2.5}),
            "spec.ratio: Invalid value: 2.5: ratio must be below 1.5",
        ),
        (
            json!({"ratio": 2}),
            "spec.ratio: Invalid value: 2: ratio must be below 1.5",
        ),
        (
            json!({"mode": "forbidden"}),
            "spec.mode: Forbidden: this mode is forbidden",
        ),
        (
            json!({"a": "x"}),
            "spec.b: Required value: b is required with a",
        ),
        (
            json!({"items": [{"weight": 1}, {"weight": -1}]}),
            "spec.items[1]: Invalid value: weight must not be negative",
        ),
        (
            json!({"opt": {}}),
            "spec: Invalid value: \"object\": no such key: x evaluating rule: opt.x must be positive",
        ),
    ] {
        assert_eq!(
            causes(spec.clone(), value.clone(), None),
            vec![want.to_string()],
            "{value}"
        );
    }
    // the strings library Kubernetes' CEL environment has
    let lower = json!({"type": "object", "properties": {"name": with_rules(json!({"type": "string"}),
        json!([{"rule": "self.lowerAscii() == self && self.split('-').size() == 2 && self.trim() == self"}]))}});
    assert!(causes(lower.clone(), json!({"name": "a-b"}), None).is_empty());
    assert_eq!(causes(lower, json!({"name": "A-b"}), None).len(), 1);
    let valid = json!({"replicas": 2, "maxReplicas": 3, "name": "w-a", "size": 4, "ratio": 1,
        "mode": "m", "a": "x", "b": "y", "opt": {"x": 1}, "items": [{"weight": 0}]});
    assert_eq!(causes(spec, valid, None), Vec::<String>::new());
}

#[test]
fn the_root_sees_type_meta_and_the_name_only() {
    let rules = json!([{"rule": "self.metadata.name.size() <= 5", "message": "short names only"}]);
    let spec = json!({"type": "object"});
    assert_eq!(
        causes_at_root(rules.clone(), spec.clone(), "far-too-long", json!({}), None),
        vec!["<nil>: Invalid value: short names only".to_string()]
    );
    assert!(causes_at_root(rules, spec.clone(), "short", json!({}), None).is_empty());
    // labels are not part of the root's self (kube-apiserver's type check refuses such a rule
    // when the CRD is created; here it fails on every object)
    let labels = json!([{"rule": "has(self.metadata.labels)"}]);
    assert_eq!(
        causes_at_root(labels, spec, "r", json!({}), None),
        vec!["<nil>: Invalid value: failed rule: has(self.metadata.labels)".to_string()]
    );
}

#[test]
fn transition_rules_compare_with_the_old_value_on_updates_only() {
    let spec = json!({"type": "object", "properties": {
        "immutable": with_rules(json!({"type": "string"}), json!([{"rule": "self == oldSelf", "message": "Value is immutable"}])),
        "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"},
                "weight": with_rules(json!({"type": "integer"}), json!([{"rule": "self >= oldSelf", "message": "weight may not decrease"}]))}}},
        "plain": {"type": "array", "items": {"type": "object", "properties": {
                "weight": with_rules(json!({"type": "integer"}), json!([{"rule": "self >= oldSelf", "message": "never checked"}]))}}}
    }});
    let old =
        json!({"immutable": "a", "items": [{"name": "i", "weight": 5}], "plain": [{"weight": 5}]});
    // creates: nothing to compare with
    assert!(causes(spec.clone(), json!({"immutable": "b"}), None).is_empty());
    assert_eq!(
        causes(spec.clone(), json!({"immutable": "b"}), Some(old.clone())),
        vec!["spec.immutable: Invalid value: \"b\": Value is immutable".to_string()]
    );
    // map-list items are paired by key, wherever they are in the list
    assert_eq!(
        causes(
            spec.clone(),
            json!({"immutable": "a", "items": [{"name": "j", "weight": 0}, {"name": "i", "weight": 4}]}),
            Some(old.clone())
        ),
        vec!["spec.items[1].weight: Invalid value: 4: weight may not decrease".to_string()]
    );
    // other lists' items have no old value
    assert!(
        causes(
            spec,
            json!({"immutable": "a", "plain": [{"weight": 1}]}),
            Some(old)
        )
        .is_empty()
    );
}

#[test]
fn an_unchanged_value_keeps_passing_on_update() {
    let spec = json!({"type": "object", "properties": {
        "name": with_rules(json!({"type": "string"}), json!([{"rule": "self.startsWith('w-')"}])),
        "other": {"type": "string"}
    }});
    let stored = json!({"name": "legacy", "other": "a"});
    // the rule came after the object: an update that leaves the value alone is accepted, with
    // a warning
    let (accepted, warnings) = crate::warnings::recording(async {
        causes(
            spec.clone(),
            json!({"name": "legacy", "other": "b"}),
            Some(stored.clone()),
        )
    })
    .now_or_never()
    .unwrap();
    assert!(accepted.is_empty());
    assert_eq!(
        warnings,
        ["spec.name: Invalid value: \"legacy\": failed rule: self.startsWith('w-')"]
    );
    assert_eq!(
        causes(
            spec.clone(),
            json!({"name": "changed", "other": "a"}),
            Some(stored)
        ),
        vec![
            "spec.name: Invalid value: \"changed\": failed rule: self.startsWith('w-')".to_string()
        ]
    );
    // on create the same value fails
    assert_eq!(causes(spec, json!({"name": "legacy"}), None).len(), 1);
}

#[test]
fn schema_errors_that_block_rules_say_so_and_others_do_not() {
    let spec = json!({"type": "object", "properties": {
        "size": with_rules(json!({"type": "integer", "maximum": 10}), json!([{"rule": "self % 2 == 0"}]))
    }});
    assert_eq!(
        causes(spec.clone(), json!({"size": "three"}), None),
        vec![
            "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"".to_string(),
            "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".to_string(),
        ]
    );
    // a maximum does not block: the rule is evaluated too
    assert_eq!(causes(spec, json!({"size": 11}), None).len(), 2);
    // without any rule in the schema there is nothing to block
    let plain = json!({"type": "object", "properties": {"size": {"type": "integer"}}});
    assert_eq!(causes(plain, json!({"size": "three"}), None).len(), 1);
}

#[test]
fn rules_that_do_not_compile_refuse_the_schema_and_nothing_panics() {
    let node = |rule: &str| {
        json!({"type": "object", "properties": {"a": {"type": "integer"}},
               "x-kubernetes-validations": [{"rule": rule}]})
    };
    let check = |v: Value| crate::crd::rule_checks::check(&v, "p");
    assert!(check(node("self.a > 1")).is_empty());
    let e = check(node("self +"));
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].0, "p.x-kubernetes-validations[0].rule");
    assert!(
        e[0].2.starts_with(
            "Invalid value: {\"Rule\":\"self +\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:7: Syntax error"
        ),
        "{e:?}"
    );
    assert_eq!(
        check(node("")),
        [(
            "p.x-kubernetes-validations[0].rule".to_string(),
            "FieldValueRequired".to_string(),
            "Required value: rule is not specified".to_string()
        )]
    );
    assert!(
        check_shape(
            json!({"x-kubernetes-validations": "self"})
                .as_object()
                .unwrap()
        )
        .is_err()
    );
    let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
    assert_eq!(check(node(&deep)).len(), 1);
    assert_eq!(check(node(&"a".repeat(MAX_RULE_BYTES + 1))).len(), 1);
    let mut bad_expr = node("true");
    bad_expr["x-kubernetes-validations"][0]["messageExpression"] = json!("'a' +");
    assert_eq!(
        check(bad_expr)[0].0,
        "p.x-kubernetes-validations[0].messageExpression"
    );
    // a rule that fails at run time on odd values is a cause, not a crash
    let spec = json!({"type": "object", "properties": {
        "n": with_rules(json!({"type": "integer"}), json!([{"rule": "10 / self > 1"}, {"rule": "self"}]))
    }});
    let got = causes(spec, json!({"n": 0}), None);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[0].contains("division by zero evaluating rule: 10 / self > 1"),
        "{got:?}"
    );
    assert!(got[1].contains("evaluating rule: self"), "{got:?}");
}

#[test]
fn a_crd_whose_rule_does_not_compile_is_refused() {
    let crd = |rule: &str| {
        json!({
            "metadata": {"name": "rulers.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "rulers", "kind": "Ruler"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": with_rules(json!({"type": "object", "properties": {"a": {"type": "integer"}}}), json!([{"rule": rule}]))}}}}]}
        })
        .as_object()
        .unwrap()
        .clone()
    };
    assert!(crate::crd::prepare(&mut crd("has(self.a)")).is_ok());
    let e = crate::crd::prepare(&mut crd("self.a ==")).unwrap_err();
    assert_eq!(e.code, 422);
    assert!(
        e.message.contains("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"self.a ==\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:10: Syntax error"),
        "{}",
        e.message
    );
}

#[test]
fn properties_are_read_by_the_names_cel_gives_them() {
    let spec = with_rules(
        json!({"type": "object", "properties": {
            "my-field": {"type": "string"}, "namespace": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}),
        json!([
            {"rule": "!has(self.my__dash__field) || self.my__dash__field == 'a'", "message": "dash"},
            {"rule": "!has(self.__namespace__) || self.__namespace__ != 'x'", "message": "reserved"},
            {"rule": "!has(self.labels) || !('my-key' in self.labels)", "message": "map keys as they are"},
        ]),
    );
    assert!(
        causes(
            spec.clone(),
            json!({"my-field": "a", "namespace": "y"}),
            None
        )
        .is_empty()
    );
    let got = causes(
        spec,
        json!({"my-field": "b", "namespace": "x", "labels": {"my-key": "1"}}),
        None,
    );
    assert_eq!(got.len(), 3, "{got:?}");
}

#[test]
fn kubernetes_quantities_are_evaluated() {
    let spec = with_rules(
        json!({"type": "object", "properties": {"memory": {"type": "string", "maxLength": 20}}}),
        json!([
            {"rule": "!has(self.memory) || quantity(self.memory).isLessThan(quantity('1Gi'))", "message": "below 1Gi"},
            {"rule": "!has(self.memory) || quantity(self.memory).compareTo(quantity('1024Mi')) <= 0", "message": "at most 1Gi"},
            {"rule": "!has(self.memory) || !(quantity(self.memory) == quantity('1024Mi'))", "message": "not 1024Mi"},
            {"rule": "!has(self.memory) || !quantity(self.memory).isInteger() || quantity(self.memory).add(1).sub(quantity('1')).asInteger() % 2 == 0", "message": "even"},
            {"rule": "isQuantity('1.5Gi') && !isQuantity('1.5 Gi') && quantity('1.5Gi').asApproximateFloat() == 1610612736.0"},
        ]),
    );
    assert!(causes(spec.clone(), json!({"memory": "512Mi"}), None).is_empty());
    assert!(causes(spec.clone(), json!({"memory": "100m"}), None).is_empty());
    let got = causes(spec.clone(), json!({"memory": "1Gi"}), None);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[0].contains("below 1Gi") && got[1].contains("not 1024Mi"),
        "{got:?}"
    );
    let got = causes(spec.clone(), json!({"memory": "3"}), None);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("even"), "{got:?}");
    let got = causes(spec, json!({"memory": "lots"}), None);
    assert!(
        !got.is_empty() && got[0].contains("evaluating rule"),
        "{got:?}"
    );
}

/// `duration()` and `timestamp()` are evaluated (Gateway API's HTTPRoute compares
/// `duration(self.backendRequest) > duration(self.request)`), and strings of the `duration`,
/// `date-time`, `date` and `byte` formats reach rules as durations, timestamps and bytes, as
/// Kubernetes types them.
#[test]
fn durations_timestamps_and_bytes_are_evaluated() {
    let spec = with_rules(
        json!({"type": "object", "properties": {
            "request": {"type": "string", "pattern": "^([0-9]{1,5}(h|m|s|ms)){1,4}$"},
            "backendRequest": {"type": "string"},
            "every": {"type": "string", "format": "duration"},
            "at": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "key": {"type": "string", "format": "byte"}}}),
        json!([
            {"rule": "!(has(self.request) && has(self.backendRequest) && duration(self.request) != duration('0s') && duration(self.backendRequest) > duration(self.request))",
             "message": "backendRequest timeout cannot be longer than request timeout"},
            {"rule": "!has(self.every) || (self.every >= duration('1s') && self.every.getMinutes() < 60)", "message": "every"},
            {"rule": "!has(self.at) || self.at > timestamp('2020-01-01T00:00:00Z')", "message": "at"},
            {"rule": "!has(self.day) || self.day.getFullYear() >= 2020", "message": "day"},
            {"rule": "!has(self.key) || size(self.key) == 3", "message": "key"},
        ]),
    );
    let ok = json!({"request": "10s", "backendRequest": "1s", "every": "1.5m",
                    "at": "2026-11-28T01:00:00Z", "day": "2021-02-03", "key": "YWJj"});
    assert_eq!(causes(spec.clone(), ok, None), Vec::<String>::new());
    let bad = json!({"request": "200ms", "backendRequest": "1s", "every": "2h",
                     "at": "2019-12-31T23:59:59+00:00", "day": "2019-02-03", "key": "YWI="});
    let got = causes(spec.clone(), bad, None);
    assert_eq!(got.len(), 5, "{got:?}");
    for (cause, message) in got
        .iter()
        .zip(["backendRequest timeout", "every", "at", "day", "key"])
    {
        assert!(cause.contains(message), "{cause} lacks {message}");
    }
    assert_eq!(
        causes(spec, json!({"request": "0s", "backendRequest": "1h"}), None),
        Vec::<String>::new()
    );
    assert_eq!(
        typed::go_duration("1h30m"),
        Some(chrono::Duration::minutes(90))
    );
    assert_eq!(
        typed::go_duration("-1.5s"),
        Some(-chrono::Duration::milliseconds(1500))
    );
    assert_eq!(typed::go_duration("2d"), Some(chrono::Duration::hours(48)));
    assert_eq!(
        typed::go_duration("1µs"),
        Some(chrono::Duration::microseconds(1))
    );
    for bad in ["", "1", "h", "1x", "1.2.3s", "9999999999h"] {
        assert_eq!(typed::go_duration(bad), None, "{bad:?}");
    }
}

/// Kubernetes' lists library and regex `find`/`findAll` are evaluated, with the examples of
/// `k8s.io/apiserver/pkg/cel/library` (lists.go, regex.go) and on a schema's own lists.
#[test]
fn kubernetes_lists_and_regex_libraries_are_evaluated() {
    let holds = [
        "[1, 2, 3].isSorted() && ['a', 'b', 'b', 'c'].isSorted() && ![2.0, 1.0].isSorted()",
        "[1].isSorted() && [].isSorted()",
        "[1, 3].sum() == 4 && [1.0, 3.0].sum() == 4.0 && [].sum() == 0",
        "[duration('1m'), duration('1s')].sum() == duration('61s')",
        "[1, 3].min() == 1 && [1, 3].max() == 3 && [1].min() == 1 && ['b', 'a'].max() == 'b'",
        "[1, 2, 2, 3].indexOf(2) == 1 && ['a', 'b', 'b', 'c'].lastIndexOf('b') == 2",
        "[1.0].indexOf(1.1) == -1 && [].indexOf('string') == -1 && 'abcb'.indexOf('b') == 1",
        "'abc 123'.find('[0-9]+') == '123' && 'abc'.find('[0-9]+') == ''",
        "'123 abc 456'.findAll('[0-9]+') == ['123', '456']",
        "'123 abc 456'.findAll('[0-9]+', 1) == ['123'] && '123 abc 456'.findAll('[0-9]+', 0) == []",
        "self.weights.sum() == 100 && self.weights.max() == 60 && self.priorities.isSorted()",
    ];
    let spec = with_rules(
        json!({"type": "object", "properties": {
            "weights": {"type": "array", "maxItems": 10, "items": {"type": "integer"}},
            "priorities": {"type": "array", "maxItems": 10, "items": {"type": "integer"}}}}),
        each_its_own_message(&holds),
    );
    let ok = json!({"weights": [40, 60], "priorities": [1, 2, 2, 5]});
    assert_eq!(causes(spec.clone(), ok, None), Vec::<String>::new());
    let bad = json!({"weights": [40, 50], "priorities": [1, 2, 2, 5]});
    let got = causes(spec, bad, None);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("self.weights.sum() == 100"), "{got:?}");

    let empty = with_rules(
        json!({"type": "object", "properties": {
            "weights": {"type": "array", "maxItems": 10, "items": {"type": "integer"}}}}),
        json!([{"rule": "self.weights.min() >= 0"}]),
    );
    let got = causes(empty, json!({"weights": []}), None);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("min called on empty list"), "{got:?}");
}

/// Kubernetes' IP and CIDR libraries are evaluated, with the examples of
/// `k8s.io/apiserver/pkg/cel/library` (ip.go, cidr.go) and on a schema's own strings.
#[test]
fn kubernetes_ip_and_cidr_libraries_are_evaluated() {
    let holds = [
        "isIP('1.2.3.4') && isIP('::1') && !isIP('1.2.3') && !isIP('01.2.3.4') && !isIP('::ffff:1.2.3.4')",
        "ip('127.0.0.1').family() == 4 && ip('::1').family() == 6",
        "ip('0.0.0.0').isUnspecified() && ip('::').isUnspecified() && !ip('::1').isUnspecified()",
        "ip('127.0.0.1').isLoopback() && ip('::1').isLoopback() && !ip('2001:db8::abcd').isLoopback()",
        "ip('224.0.0.1').isLinkLocalMulticast() && !ip('224.0.1.1').isLinkLocalMulticast()",
        "ip('ff02::1').isLinkLocalMulticast() && !ip('fd00::1').isLinkLocalMulticast()",
        "ip('169.254.169.254').isLinkLocalUnicast() && ip('fe80::1').isLinkLocalUnicast() && !ip('fd80::1').isLinkLocalUnicast()",
        "ip('192.168.0.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast()",
        "ip('2001:db8::abcd').isGlobalUnicast() && !ip('ff00::1').isGlobalUnicast()",
        "ip.isCanonical('127.0.0.1') && ip.isCanonical('2001:db8::abcd') && !ip.isCanonical('2001:DB8::ABCD')",
        "string(ip('2001:db8:0:0::1')) == '2001:db8::1' && ip('1.2.3.4') == ip('1.2.3.4')",
        "isCIDR('192.168.0.0/24') && isCIDR('192.168.0.1/24') && !isCIDR('192.168.0.0') && !isCIDR('1.2.3.4/33')",
        "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1')) && !cidr('192.168.0.0/24').containsIP('192.168.1.1')",
        "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25')) && !cidr('192.168.0.0/24').containsCIDR('192.168.0.0/23')",
        "cidr('::1/128').containsIP('::1') && !cidr('0.0.0.0/0').containsIP('::1')",
        "cidr('192.168.0.1/24').ip() == ip('192.168.0.1') && cidr('192.168.0.1/24').ip().family() == 4",
        "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24') && cidr('192.168.0.1/24') != cidr('192.168.0.1/24').masked()",
        "cidr('192.168.0.0/16').prefixLength() == 16 && cidr('::1/128').prefixLength() == 128",
        "string(cidr('192.168.0.1/24').masked()) == '192.168.0.0/24'",
        "!has(self.pool) || cidr(self.pool).containsIP(self.gateway)",
    ];
    let spec = with_rules(
        json!({"type": "object", "properties": {
            "pool": {"type": "string", "maxLength": 64},
            "gateway": {"type": "string", "maxLength": 64}}}),
        each_its_own_message(&holds),
    );
    let ok = json!({"pool": "10.0.0.0/8", "gateway": "10.1.2.3"});
    assert_eq!(causes(spec.clone(), ok, None), Vec::<String>::new());
    let got = causes(
        spec.clone(),
        json!({"pool": "10.0.0.0/8", "gateway": "11.0.0.1"}),
        None,
    );
    assert_eq!(got.len(), 1, "{got:?}");
    let got = causes(spec, json!({"pool": "10.0.0.0/8", "gateway": "nope"}), None);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("parse error"), "{got:?}");
}

/// Kubernetes' URL and semver libraries (`urls.go`, `semverlib.go`), through a schema's rules.
#[test]
fn kubernetes_url_and_semver_libraries_are_evaluated() {
    let holds = [
        "isURL('https://example.com/a') && isURL('/a/b') && !isURL('example.com') && !isURL('')",
        "url('https://u@example.com:8443/a%2Fb?x=1&x=2').getScheme() == 'https'",
        "url('https://example.com:8443/').getHost() == 'example.com:8443' && url('https://[::1]:80/').getHostname() == '::1'",
        "url('https://example.com:8443/').getPort() == '8443' && url('https://example.com/').getPort() == ''",
        "url('https://h/a%2Fb').getEscapedPath() == '/a%2Fb' && url('https://h/a b').getEscapedPath() == '/a%20b'",
        "url('https://h/?x=1&x=2&y=a+b').getQuery()['x'] == ['1', '2'] && url('https://h/?x=1&y=a+b').getQuery()['y'] == ['a b']",
        "isSemver('1.2.3-rc.1+b') && !isSemver('v1.2.3') && isSemver('v1.2', true) && !isSemver('01.2.3')",
        "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
        "semver('1.0.0-alpha').isLessThan(semver('1.0.0')) && semver('2.0.0').isGreaterThan(semver('1.9.9'))",
        "semver('1.0.0-beta.11').compareTo(semver('1.0.0-beta.2')) == 1 && semver('1.0.0+a') == semver('1.0.0+b')",
        "semver('v1.02', true) == semver('1.2.0')",
        "!has(self.endpoint) || url(self.endpoint).getScheme() == 'https'",
    ];
    let spec = with_rules(
        json!({"type": "object", "properties": {
            "endpoint": {"type": "string", "maxLength": 64}}}),
        each_its_own_message(&holds),
    );
    assert_eq!(
        causes(spec.clone(), json!({"endpoint": "https://h/"}), None),
        Vec::<String>::new()
    );
    let got = causes(spec.clone(), json!({"endpoint": "http://h/"}), None);
    assert_eq!(got.len(), 1, "{got:?}");
    let got = causes(spec, json!({"endpoint": "not a url"}), None);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("URL parse error during conversion from string: parse \"not a url\": invalid URI for request"),
        "{got:?}"
    );
}
