//! Two-variable comprehensions evaluated through a schema's rules, on lists and maps, with the
//! examples of cel-go's `ext/comprehensions.go` documentation and its errors.

use serde_json::{Value, json};

use crate::crd::rules::tests::{causes, each_its_own_message, with_rules};

fn strings(max: u32) -> Value {
    json!({"type": "array", "maxItems": max, "items": {"type": "string", "maxLength": 20}})
}

fn labels() -> Value {
    json!({"type": "object", "maxProperties": 10,
        "additionalProperties": {"type": "string", "maxLength": 20}})
}

#[test]
fn all_exists_and_exists_one_see_an_index_and_a_value() {
    let holds = [
        "[1, 2, 3].all(i, v, i < v) && ![1, 1].all(i, v, i < v)",
        "[10, 20].exists(i, v, i == 1 && v == 20) && ![10, 20].exists(i, v, i == 1 && v == 10)",
        "[1, 2, 2].existsOne(i, v, v == 1) && ![1, 2, 2].exists_one(i, v, v == 2)",
        "{'a': 1, 'b': 2}.all(k, v, k.size() == 1 && v > 0)",
        "{'a': 1, 'b': 2}.exists(k, v, k == 'b' && v == 2) && {'a': 1}.existsOne(k, v, v == 1)",
        "[].all(i, v, false) && ![].exists(i, v, true)",
        "self.ports.all(i, p, i == 0 || p > self.ports[i - 1])",
        "self.labels.exists(k, v, k.startsWith('team/') && v != '')",
    ];
    let spec = with_rules(
        json!({"type": "object", "properties": {
            "ports": {"type": "array", "maxItems": 10, "items": {"type": "integer"}},
            "labels": labels()}}),
        each_its_own_message(&holds),
    );
    let ok = json!({"ports": [80, 443, 8080], "labels": {"team/a": "x"}});
    assert_eq!(causes(spec.clone(), ok, None), Vec::<String>::new());
    let bad = json!({"ports": [443, 80], "labels": {"team/a": ""}});
    let got = causes(spec, bad, None);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[0].contains("self.ports.all"), "{got:?}");
    assert!(got[1].contains("self.labels.exists"), "{got:?}");
}

#[test]
fn transforms_build_lists_and_maps_with_an_optional_filter() {
    let holds = [
        "[1, 2, 3].transformList(i, v, i * v) == [0, 2, 6]",
        "[1, 2, 3].transformList(i, v, v > 1, v * 10) == [20, 30]",
        "{'a': 1, 'b': 2}.transformList(k, v, k + string(v)).size() == 2",
        "{'a': 1, 'b': 2}.transformMap(k, v, v + 1) == {'a': 2, 'b': 3}",
        "{'a': 1, 'b': 2}.transformMap(k, v, v > 1, k + 'x') == {'b': 'bx'}",
        "[5, 6].transformMap(i, v, v * 2) == {0: 10, 1: 12}",
        "{'a': 'x', 'b': 'y'}.transformMapEntry(k, v, {v: k}) == {'x': 'a', 'y': 'b'}",
        "{'a': 'x', 'b': 'y'}.transformMapEntry(k, v, k == 'a', {v: k}) == {'x': 'a'}",
        "self.names.transformList(i, n, n.upperAscii()) == ['A', 'B']",
        "self.labels.transformMap(k, v, v.size()) == {'app': 3}",
    ];
    let spec = with_rules(
        json!({"type": "object", "properties": {"names": strings(10), "labels": labels()}}),
        each_its_own_message(&holds),
    );
    let ok = json!({"names": ["a", "b"], "labels": {"app": "web"}});
    assert_eq!(causes(spec, ok, None), Vec::<String>::new());
}

#[test]
fn nested_comprehensions_shadow_and_read_outer_variables() {
    let holds = [
        // the inner `i` is the inner list's index
        "[[1, 2], [3]].all(i, l, l.all(i, v, v > i))",
        // the inner loop reads the outer index
        "[[1], [2, 3]].all(i, l, l.exists(j, v, v == i + j + 1))",
        // a one-variable macro inside, naming the outer value's variable
        "[1, 2].all(i, v, [5].all(v, v > i))",
        // a two-variable macro in the filter and body of a transform
        "[[1], [2, 2]].transformList(i, l, l.all(j, v, v == i + 1), l.size()) == [1, 2]",
        // a comprehension over the result of another
        "{'a': 1}.transformMap(k, v, v * 2).all(k, v, v == 2)",
    ];
    let spec = with_rules(json!({"type": "object"}), each_its_own_message(&holds));
    assert_eq!(causes(spec, json!({}), None), Vec::<String>::new());
}

#[test]
fn a_key_inserted_twice_fails_the_rule_in_cel_gos_words() {
    let spec = json!({"type": "object", "properties": {
        "labels": with_rules(labels(), json!([{"rule": "self.transformMapEntry(k, v, {v: k}).size() > 0"}]))
    }});
    assert_eq!(
        causes(spec.clone(), json!({"labels": {"a": "x", "b": "y"}}), None),
        Vec::<String>::new()
    );
    let got = causes(spec, json!({"labels": {"a": "x", "b": "x"}}), None);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("insert failed: key x already exists evaluating rule:"),
        "{got:?}"
    );
}

#[test]
fn a_crd_with_them_is_accepted_and_misuse_is_refused_in_cel_gos_words() {
    let check = |rule: &str| {
        let node = json!({"type": "object", "properties": {"names": strings(10), "labels": labels()},
            "x-kubernetes-validations": [{"rule": rule}]});
        crate::crd::rule_checks::check(&node, "p")
            .into_iter()
            .map(|(_, _, m)| m)
            .collect::<Vec<_>>()
    };
    for rule in [
        "self.names.all(i, n, n != '')",
        "self.labels.exists(k, v, v == k)",
        "self.names.existsOne(i, n, n == 'a')",
        "self.names.transformList(i, n, i > 0, n).size() < 5",
        "self.labels.transformMap(k, v, v.size()).all(k, n, n < 30)",
        "self.labels.transformMapEntry(k, v, {v: k}).size() >= 0",
    ] {
        assert_eq!(check(rule), Vec::<String>::new(), "{rule}");
    }
    let refused = [
        ("self.names.all(i, i, true)", "duplicate variable name: i"),
        (
            "self.names.all(i, 1, true)",
            "argument must be a simple name",
        ),
        (
            "self.names.all(i, __result__, true)",
            "iteration variable overwrites accumulator variable",
        ),
        (
            "self.labels.all(k, v, v > 1)",
            "found no matching overload for '_>_' applied to '(string, int)'",
        ),
        (
            "self.names.all(i, n, i == 'a')",
            "found no matching overload for '_==_' applied to '(int, string)'",
        ),
    ];
    for (rule, words) in refused {
        let got = check(rule);
        assert_eq!(got.len(), 1, "{rule}: {got:?}");
        assert!(got[0].contains(words), "{rule}: {got:?}");
    }
}

/// `first()` and `last()` of cel-go's optional library, on lists a rule reads and builds.
#[test]
fn first_and_last_give_optionals() {
    let holds = [
        "[1, 2, 3].first() == optional.of(1) && [1, 2, 3].last().value() == 3",
        "![].first().hasValue() && [].last().orValue('z') == 'z'",
        "!self.names.first().hasValue() || self.names.first().value() == 'a'",
        "self.names.transformList(i, n, n + '!').last().orValue('') != 'b!'",
    ];
    let spec = with_rules(
        json!({"type": "object", "properties": {"names": strings(10)}}),
        each_its_own_message(&holds),
    );
    for names in [json!(["a", "c"]), json!([])] {
        assert_eq!(
            causes(spec.clone(), json!({"names": names}), None),
            Vec::<String>::new()
        );
    }
    let got = causes(spec, json!({"names": ["x", "b"]}), None);
    assert_eq!(got.len(), 2, "{got:?}");
}
