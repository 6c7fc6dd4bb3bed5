//! The estimates checked against what kube-apiserver v1.36.3's own estimator gives for the same
//! rules on the same schema (`apiextensions-apiserver`'s `cel.Compile`, run on each rule).

use serde_json::{Value, json};

use super::Node;
use super::estimate::Estimator;
use crate::crd::rule_checks::check;

/// A resource root with one field of each kind CEL sees.
fn schema() -> Value {
    let s = |extra: Value| {
        let mut v = json!({"type": "string"});
        if let (Value::Object(m), Value::Object(e)) = (&mut v, extra) {
            m.extend(e);
        }
        v
    };
    json!({"type": "object", "properties": {
        "s": s(json!({})),
        "s10": s(json!({"maxLength": 10})),
        "e": s(json!({"enum": ["a", "bb", "ccc"]})),
        "b": s(json!({"format": "byte", "maxLength": 10})),
        "bu": s(json!({"format": "byte"})),
        "dur": s(json!({"format": "duration"})),
        "d": s(json!({"format": "date"})),
        "dt": s(json!({"format": "date-time"})),
        "i": {"type": "integer"},
        "num": {"type": "number"},
        "bo": {"type": "boolean"},
        "ios": {"x-kubernetes-int-or-string": true},
        "ios5": {"x-kubernetes-int-or-string": true, "maxLength": 5},
        "l": {"type": "array", "items": {"type": "string"}},
        "l10": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}},
        "li": {"type": "array", "items": {"type": "integer"}},
        "m": {"type": "object", "additionalProperties": {"type": "string"}},
        "m5": {"type": "object", "maxProperties": 5,
               "additionalProperties": {"type": "string", "maxLength": 10}},
        "o": {"type": "object", "required": ["name"],
              "properties": {"name": {"type": "string"}, "x": {"type": "integer"}}},
        "pu": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    }})
}

fn cost_on(schema: &Value, root: bool, rule: &str) -> u64 {
    let program = super::super::rules::compiled(rule).expect(rule);
    Estimator::new(Node::new(schema, root))
        .run(program.expression())
        .cost
}

/// Each rule's estimate on `schema` (a resource root) is kube-apiserver's; every one that is
/// not is reported.
fn assert_estimates(schema: &Value, cases: &[(&str, u64)]) {
    let mut wrong = Vec::new();
    for (rule, want) in cases {
        let got = cost_on(schema, true, rule);
        if got != *want {
            wrong.push(format!("{rule}: {got}, kube-apiserver {want}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn estimates_are_kube_apiservers() {
    let cases: &[(&str, u64)] = &[
        ("true", 0),
        ("self.i == 1", 2),
        ("self.i == self.i", 4),
        ("self.i < 1", 3),
        ("self.i + 1 == 2", 4),
        ("size(self.s) > 0", 4),
        ("self.s == 'abc'", 3),
        ("self.s == self.s", 314577),
        ("self.s10 == self.s10", 8),
        ("self.s10 < self.s10", 8),
        ("self.e == self.e", 5),
        ("self.e.contains('b')", 3),
        ("self.b == self.b", 5),
        ("self.bu == self.bu", 314577),
        ("self.dur == self.dur", 8),
        ("self.d == self.d", 6),
        ("self.dt == self.dt", 8),
        ("self.dt < self.dt", 5),
        ("self.ios == self.ios", 314577),
        ("self.ios5 == self.ios5", 6),
        ("self.s10 + self.s10 == ''", 12),
        ("self.s10 + 'abc' == self.s10", 13),
        ("has(self.s)", 1),
        ("!has(self.s)", 2),
        ("has(self.o.name)", 2),
        ("self.o.name == 'x'", 4),
        ("self.o.x == 1", 3),
        ("self.s10.startsWith('abc')", 3),
        ("self.s10.endsWith(self.s10)", 8),
        ("self.s10.contains(self.s10)", 20),
        ("self.s10.matches('^[a-z]+$')", 12),
        ("matches(self.s10, '^[a-z]+$')", 3),
        ("self.s10.lowerAscii() == 'a'", 7),
        ("self.s10.upperAscii() == 'a'", 7),
        ("self.s10.trim() == 'a'", 7),
        ("self.s10.substring(1) == 'a'", 7),
        ("self.s10.substring(1, 2) == 'a'", 7),
        ("self.s10.indexOf('a') == 1", 7),
        ("self.s10.charAt(1) == 'a'", 4),
        ("self.s10.split(',').size() == 1", 12),
        ("self.s10.replace('a', 'bb') == 'x'", 11),
        ("self.l10.join(',') == 'x'", 44),
        ("self.l10.join() == 'x'", 43),
        ("int(self.s10) == 1", 4),
        ("string(self.i) == '1'", 4),
        ("double(self.i) == 1.0", 4),
        ("string(self.b) == 'x'", 4),
        ("bytes(self.s10) == b'x'", 7),
        ("self.l10[0] == 'a'", 4),
        ("self.m5['a'] == 'a'", 4),
        ("self.m5.a == 'x'", 4),
        ("has(self.m5.a)", 2),
        ("'a' in self.l10", 12),
        ("'a' in self.m5", 3),
        ("self.i in [1, 2, 3]", 15),
        ("[1, 2, 3].size() == 3", 12),
        ("{'a': 1}.size() == 1", 32),
        ("self.l10 == self.l10", 5),
        ("self.l10 + self.l10 == self.l10", 8),
        ("self.l10.all(x, x == 'a')", 53),
        ("self.l10.exists(x, x == 'a')", 63),
        ("self.l10.exists_one(x, x == 'a')", 44),
        ("self.l10.map(x, x + 'a').size() == 1", 195),
        ("self.l10.filter(x, x == 'a').size() == 1", 165),
        ("self.l10.map(x, x != 'a', x).size() == 1", 165),
        ("self.m5.all(k, k == 'a')", 23),
        ("self.m5.all(k, self.m5[k] == 'a')", 43),
        ("self.i == 1 ? self.s10 == 'a' : self.s10 == 'bb'", 5),
        ("self.i == 1 || self.i == 2", 4),
        ("self.l.all(x, x == 'a')", 5242878),
        ("self.li.all(x, x == 1)", 6291455),
        ("self.m.all(k, k == 'a')", 1572863),
        ("self.s.matches('a')", 314575),
        ("dyn(self.i) == 1", 3),
        ("self.l10.isSorted()", 52),
        ("self.li.sum() == 1", 1572866),
        ("self.kind == 'Foo'", 3),
        ("self.metadata.name == 'x'", 4),
        ("self.metadata.name.contains('x')", 314576),
        ("isQuantity(self.s10)", 6),
        ("quantity(self.s10).isGreaterThan(quantity('1'))", 8),
        ("isURL(self.s10)", 3),
        ("self.s10.format([self.i]) == ''", 18),
        ("sets.contains(self.l10, ['a'])", 23),
        ("self.l10.slice(0, 1).size() == 1", 16),
        ("lists.range(5).size() == 5", 18),
        ("self.l10.distinct().size() == 1", 215),
        ("self.l10.reverse().size() == 1", 25),
        ("strings.quote(self.s10) == 'a'", 7),
        ("isIP(self.s10)", 6),
        ("ip(self.s10).family() == 4", 8),
        ("cidr(self.s10).containsIP(self.s10)", 16),
        ("self.s10.find('[0-9]') == ''", 12),
        ("self.s10.findAll('[0-9]').size() == 1", 14),
        ("url(self.s10).getHost() == ''", 7),
        ("format.dns1123Label().validate(self.s10).hasValue()", 132),
        ("self.num > 1.0", 3),
        ("self.num == 1.0", 2),
        ("self.bo", 2),
        ("!self.bo", 3),
        ("-self.i == 0", 4),
        ("self.i % 2 == 0", 4),
        ("timestamp(self.dt) == self.dt", 6),
        ("duration('1s') < self.dur", 4),
        ("type(self.ios) == int", 4),
        ("self.pu == self.pu", 4),
        ("self.l10.all(i, v, v == 'a')", 53),
        ("self.m5.exists(k, v, v == 'a')", 33),
        ("['abc','de'].exists(x, x.contains('a'))", 21),
        ("string(self.i) + 'x' == 'y'", 1844674407370955268),
        // two-variable comprehensions, entry sizes of built lists and maps, sortBy
        (
            "self.l10.transformList(i, v, v + v).all(x, x.size() < 50)",
            294,
        ),
        ("self.l10.transformList(i, v, v + v)[0].contains('a')", 242),
        ("self.l10.transformList(i, v, i > 1, v)[0] == 'a'", 165),
        ("self.m5.transformMap(k, v, v + v)['a'] == 'x'", 99),
        ("self.m5.transformMapEntry(k, v, {v: k})['a'] == 'x'", 204),
        (
            "self.m5.transformMapEntry(k, v, {v: k}).all(k, k.size() < 5)",
            234,
        ),
        ("self.l10.existsOne(i, v, v == 'a')", 44),
        ("self.l10.exists_one(v, v == 'a')", 44),
        ("self.m5.transformList(k, v, k)[0] == 'x'", 79),
        ("self.l.transformList(i, v, v)[0] == 'a'", 13631490),
        ("self.li.transformList(i, p, p * 2).sum() < 100", 23592959),
        ("self.l10.sortBy(n, n.size()) == self.l10", 379),
        ("self.l10.sortBy(n, n)[0].contains('a')", 377),
        ("self.l.sortBy(n, n.size()) == self.l", 2199033846196),
        ("self.l10.sort()[0].contains('a')", 224),
        (
            "self.l10.map(n, [n, n])[0][1].contains('a')",
            1844674407370955519,
        ),
        ("self.l10.map(n, [n, n])[0].size() == 2", 256),
        ("(self.i > 1 ? ['abc'] : ['x'])[0].contains(self.s10)", 20),
        ("(self.l10 + ['x'])[0].size() < 30", 16),
        ("{'a': 'bcd'}['a'].contains(self.s10)", 37),
        ("['abc', 'de'][1].contains(self.s10)", 17),
        ("[[1, 2], [3]].transformList(i, l, l.size()) == [2, 1]", 80),
        ("self.l10.transformList(i, n, [n])[0][0] == 'a'", 246),
        ("self.m5.all(k, v, self.l10.exists(n, n == v))", 533),
        ("self.l10.transformMap(i, v, v).size() < 10", 75),
        ("lists.range(5).transformList(i, v, v * 2)[0] == 0", 99),
        (
            "self.l10.map(x, self.l10.map(y, x + y))[0][0].size() < 100",
            2467,
        ),
    ];
    assert_estimates(&schema(), cases);
}

/// The sets and format libraries, and the optionals `format.named` and `validate` give.
#[test]
fn estimates_of_the_sets_and_format_libraries_are_kube_apiservers() {
    let cases: &[(&str, u64)] = &[
        ("format.dns1123Label() == format.uri()", 9),
        ("format.named('x').hasValue()", 2),
        ("format.named(self.s10).hasValue()", 4),
        (
            "format.named(self.s10) == format.named('x')",
            1844674407370955268,
        ),
        (
            "format.named('x').value().validate(self.s10).hasValue()",
            133,
        ),
        ("format.uri() != format.uuid()", 1844674407370955266),
        (
            "format.dns1123Label().validate(self.s10).value()[0] == 'x'",
            133,
        ),
        (
            "size(format.dns1123Label().validate(self.s10).orValue([])) == 0",
            144,
        ),
        (
            "format.dns1123Label().validate(self.s10).value().size() == 0",
            134,
        ),
        (
            "format.dns1123Label().validate(self.s10) == optional.none()",
            1844674407370955396,
        ),
        (
            "format.named('x').orValue(format.uri()) == format.uri()",
            11,
        ),
        ("format.dns1123Label().validate('my-name').hasValue()", 34),
        (
            "format.dns1123Label().validate(self.s10).value()[0] == self.s10",
            135,
        ),
        ("self.s10.split(',')[0] == 'x'", 11),
        ("self.s10.split(',')[0] == self.s10", 13),
        ("sets.equivalent(self.l10, self.l10)", 205),
        ("sets.intersects(self.l, ['a'])", 1048588),
        ("sets.contains(self.li, [1, 2])", 3145739),
        (
            "sets.contains(self.l10, format.dns1123Label().validate(self.s10).value())",
            u64::MAX,
        ),
        (
            "sets.contains(self.l10, self.l10) && sets.intersects(['a', 'b'], self.l10)",
            138,
        ),
    ];
    assert_estimates(&schema(), cases);
}

#[test]
fn estimates_on_strings_lists_and_messages() {
    let s10 = json!({"type": "string", "maxLength": 10});
    assert_eq!(
        cost_on(&s10, false, "['abc','de'].exists(x, x.contains('a'))"),
        29
    );
    assert_eq!(cost_on(&s10, false, "self + self + self"), 23);
    let strings = json!({"type": "array", "items": {"type": "string"}});
    assert_eq!(cost_on(&strings, false, "self.all(x, true)"), 3145727);
    let strings20 = json!({"type": "array", "maxItems": 20, "items": {"type": "string"}});
    assert_eq!(cost_on(&strings20, false, "self.all(x, true)"), 62);
    let ten = json!({"type": "array", "maxItems": 10, "items": {"type": "string"}});
    assert_eq!(cost_on(&ten, false, "self.all(x, self.all(y, true))"), 352);
    let s = json!({"type": "string"});
    assert_eq!(cost_on(&s, false, "self.contains('test')"), 314574);
    assert_eq!(cost_on(&s10, false, "self.contains('test')"), 5);
    assert_eq!(
        cost_on(&strings, false, "self.join(' ') == 'aa bb'"),
        329853068905
    );
    let m = json!({"type": "object", "additionalProperties": {"type": "string"}});
    assert_eq!(
        cost_on(&m, false, "self.all(x, x.contains(self[x]))"),
        2752507
    );
}

fn causes(schema: Value) -> Vec<String> {
    check(&schema, "spec.validation.openAPIV3Schema")
        .into_iter()
        .map(|(f, _, m)| format!("{f}: {m}"))
        .collect()
}

const TRY: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

#[test]
fn a_costly_rule_is_refused_with_its_factor() {
    // karpenter-provider-gcp#160: 18.1x, and the total 1.8x.
    let tags = |max: u64| {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "networkTags": {"type": "array", "maxItems": max, "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$'))"}]}}}}})
    };
    let at = "spec.validation.openAPIV3Schema.properties[spec].properties[networkTags].x-kubernetes-validations[0].rule";
    assert_eq!(
        causes(tags(64)),
        [
            format!("{at}: Forbidden: estimated rule cost exceeds budget by factor of 18.1x {TRY}"),
            format!(
                "{at}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
            ),
            format!(
                "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1.8x {TRY}"
            ),
        ]
    );
    assert_eq!(
        causes(tags(20)),
        [format!(
            "{at}: Forbidden: estimated rule cost exceeds budget by factor of 5.7x {TRY}"
        )]
    );
    // Bounded items: accepted.
    let mut bounded = tags(64);
    bounded["properties"]["spec"]["properties"]["networkTags"]["items"]["maxLength"] = json!(63);
    assert!(causes(bounded).is_empty());
}

#[test]
fn rules_under_lists_and_maps_cost_once_per_value() {
    // kube-apiserver's "forbid validation rules where cost total exceeds total limit".
    let keyword = json!([{"rule": "self.contains('keyword')"}]);
    let schema = json!({"type": "object", "properties": {
        "list": {"type": "array", "maxItems": 100000, "items": {"type": "string", "maxLength": 5000, "x-kubernetes-validations": keyword}},
        "map": {"type": "object", "maxProperties": 1000, "additionalProperties": {"type": "string", "maxLength": 5000, "x-kubernetes-validations": keyword}},
        "field": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 50 && self < 100"}]},
    }});
    let p = "spec.validation.openAPIV3Schema.properties";
    assert_eq!(
        causes(schema),
        [
            format!(
                "{p}[list].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 20.0x {TRY}"
            ),
            format!(
                "{p}[list].items.x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
            ),
            format!(
                "{p}[map].additionalProperties.x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
            ),
            format!(
                "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 2.0x {TRY}"
            ),
        ]
    );
}

#[test]
fn factors_below_one_and_a_half_have_six_decimals_and_messages_are_not_multiplied() {
    let schema = json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.all(x, x.size() < 10 && x.size() > 0 && x != '')"}]}}});
    assert_eq!(
        causes(schema),
        [format!(
            "spec.validation.openAPIV3Schema.properties[tags].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 1.048575x {TRY}"
        )]
    );
    // kubernetes/kubernetes#124234: a number turned into a string has no known size.
    let schema = json!({"type": "object", "properties": {"config": {"type": "object",
        "properties": {"attempts": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.attempts >= 0",
            "messageExpression": "'invalid attempts: ' + string(self.attempts)"}]}}});
    let at = "spec.validation.openAPIV3Schema.properties[config].x-kubernetes-validations[0].messageExpression";
    assert_eq!(
        causes(schema),
        [
            format!(
                "{at}: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x {TRY}"
            ),
            format!(
                "{at}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
            ),
            format!(
                "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {TRY}"
            ),
        ]
    );
    // A message expression under an unbounded list costs once, not once per item.
    let schema = json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 10,
        "x-kubernetes-validations": [{"rule": "self != 'x'", "messageExpression": "self + self + self"}]}}}});
    assert!(causes(schema).is_empty());
}

#[test]
fn old_self_is_refused_where_no_old_value_pairs_with_a_new_one() {
    let list = |ty: &str| {
        json!({"type": "object", "properties": {"tags": {"type": "array", "maxItems": 10,
            "x-kubernetes-list-type": ty, "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "maxLength": 10},
                "v": {"type": "string", "maxLength": 10, "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}}})
    };
    assert_eq!(
        causes(list("set")),
        [
            "spec.validation.openAPIV3Schema.properties[tags].items.properties[v].x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[tags]"
        ]
    );
    assert!(causes(list("map")).is_empty());
}
