//! The rule checks against what kube-apiserver v1.36.3 answered for the same CRDs (each
//! expected text was read from its 422).

use serde_json::{Value, json};

use super::check;

/// `spec` with three fields and `rules` on it, as the root's property.
fn schema(rules: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {
            "replicas": {"type": "integer"},
            "name": {"type": "string", "maxLength": 10},
            "my-field": {"type": "string", "maxLength": 5},
            "pu": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        "x-kubernetes-validations": rules}}})
}

const AT: &str = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]";

fn lines(rules: Value) -> Vec<String> {
    check(&schema(rules), "spec.validation.openAPIV3Schema")
        .into_iter()
        .map(|(f, _, m)| format!("{f}: {m}"))
        .collect()
}

fn value(rule: &str) -> String {
    format!(
        "{{\"Rule\":{},\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}}",
        super::go_json(rule)
    )
}

#[test]
fn what_the_type_check_refuses_is_worded_as_cel_go_words_it() {
    let cases: &[(&str, &str)] = &[
        (
            "['a'].flatten().size() == 1",
            "ERROR: <input>:1:14: found no matching overload for 'flatten' applied to 'list(string).()'\n | ['a'].flatten().size() == 1\n | .............^",
        ),
        (
            "{'a': 1, 'b': 'x'}.size() == 2",
            "ERROR: <input>:1:15: expected type 'int' but found 'string'\n | {'a': 1, 'b': 'x'}.size() == 2\n | ..............^",
        ),
        (
            "[1, null].size() == 2",
            "ERROR: <input>:1:5: expected type 'int' but found 'null'\n | [1, null].size() == 2\n | ....^",
        ),
        (
            "[1, dyn('a')].size() == 2",
            "ERROR: <input>:1:8: expected type 'int' but found 'dyn'\n | [1, dyn('a')].size() == 2\n | .......^",
        ),
        (
            "[{'a': 1}, {'b': 'x'}].size() == 2",
            "ERROR: <input>:1:12: expected type 'map(string, int)' but found 'map(string, string)'\n | [{'a': 1}, {'b': 'x'}].size() == 2\n | ...........^",
        ),
        (
            "self.foo == 1",
            "ERROR: <input>:1:5: undefined field 'foo'\n | self.foo == 1\n | ....^",
        ),
        (
            "has(self.foo)",
            "ERROR: <input>:1:4: undefined field 'foo'\n | has(self.foo)\n | ...^",
        ),
        (
            "self.pu.x == 1",
            "ERROR: <input>:1:8: undefined field 'x'\n | self.pu.x == 1\n | .......^",
        ),
        (
            "selff.name == 'a'",
            "ERROR: <input>:1:1: undeclared reference to 'selff' (in container '')\n | selff.name == 'a'\n | ^",
        ),
        (
            "[1,2].all(x, x > y)",
            "ERROR: <input>:1:18: undeclared reference to 'y' (in container '')\n | [1,2].all(x, x > y)\n | .................^",
        ),
        (
            "self.replicas == 'a'",
            "ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, string)'\n | self.replicas == 'a'\n | ..............^",
        ),
        (
            "self.replicas == 1.0",
            "ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, double)'\n | self.replicas == 1.0\n | ..............^",
        ),
        (
            "self.replicas < 'a'",
            "ERROR: <input>:1:15: found no matching overload for '_<_' applied to '(int, string)'\n | self.replicas < 'a'\n | ..............^",
        ),
        (
            "self.name + 1 == 'a'",
            "ERROR: <input>:1:11: found no matching overload for '_+_' applied to '(string, int)'\n | self.name + 1 == 'a'\n | ..........^",
        ),
        (
            "self.name.startsWith(1)",
            "ERROR: <input>:1:21: found no matching overload for 'startsWith' applied to 'string.(int)'\n | self.name.startsWith(1)\n | ....................^",
        ),
        (
            "size(self.replicas) > 0",
            "ERROR: <input>:1:5: found no matching overload for 'size' applied to '(int)'\n | size(self.replicas) > 0\n | ....^",
        ),
        (
            "int(self.name) == 1 ? true : 'x'",
            "ERROR: <input>:1:21: found no matching overload for '_?_:_' applied to '(bool, bool, string)'\n | int(self.name) == 1 ? true : 'x'\n | ....................^",
        ),
        (
            "dyn(self.name) % 1.5 == 1.5",
            "ERROR: <input>:1:16: found no matching overload for '_%_' applied to '(dyn, double)'\n | dyn(self.name) % 1.5 == 1.5\n | ...............^",
        ),
        (
            "self.name != null",
            "ERROR: <input>:1:11: found no matching overload for '_!=_' applied to '(string, null)'\n | self.name != null\n | ..........^",
        ),
        (
            "math.greatest(self.replicas, 1) > 0",
            "ERROR: <input>:1:1: undeclared reference to 'math' (in container '')\n | math.greatest(self.replicas, 1) > 0\n | ^\nERROR: <input>:1:14: undeclared reference to 'greatest' (in container '')\n | math.greatest(self.replicas, 1) > 0\n | .............^",
        ),
        (
            "self.foo == self.bar",
            "ERROR: <input>:1:5: undefined field 'foo'\n | self.foo == self.bar\n | ....^\nERROR: <input>:1:17: undefined field 'bar'\n | self.foo == self.bar\n | ................^",
        ),
        (
            "self.replicas > 1 &&",
            "ERROR: <input>:1:21: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.replicas > 1 &&\n | ....................^",
        ),
    ];
    for (rule, error) in cases {
        assert_eq!(
            lines(json!([{"rule": rule}])),
            [format!(
                "{AT}.rule: Invalid value: {}: compilation failed: {error}",
                value(rule)
            )],
            "{rule}"
        );
    }
    for rule in ["self.replicas", "self.name.size()"] {
        assert_eq!(
            lines(json!([{"rule": rule}])),
            [format!(
                "{AT}.rule: Invalid value: {}: cel expression must evaluate to a bool",
                value(rule)
            )]
        );
    }
    // What kube-apiserver accepts: escaped names, numbers compared across types, values of
    // unknown type.
    for rule in [
        "self.my__dash__field == 'a'",
        "self.replicas < 1.5",
        "has(self.pu) && self.name.size() < 5",
        "self.replicas == 1 || dyn(self.name) == 1",
        "self.pu != null && self.name == ['a'][0]",
        "self.replicas + dyn(1) == 2 && dyn(1.5) * 2.0 < 3.0 && self.replicas % dyn(1.5) == 1",
        "self.name.matches('^a') ? self.replicas > 1 : self.replicas < 1",
    ] {
        assert!(lines(json!([{"rule": rule}])).is_empty(), "{rule}");
    }
}

#[test]
fn a_rules_own_fields_are_checked_before_it_is_compiled() {
    let one = |rule: Value| lines(json!([rule]));
    assert_eq!(
        one(json!({"rule": ""})),
        [format!("{AT}.rule: Required value: rule is not specified")]
    );
    assert_eq!(
        one(json!({"rule": "self.replicas > 0", "message": "a\nb"})),
        [format!(
            "{AT}.message: Invalid value: \"a\\nb\": must not contain line breaks"
        )]
    );
    assert_eq!(
        one(json!({"rule": "self.replicas > 0", "message": "   "})),
        [format!(
            "{AT}.message: Invalid value: \"   \": must be non-empty if specified"
        )]
    );
    assert_eq!(
        one(json!({"rule": "self.name == 1\n  || self.foo"})),
        [format!(
            "{AT}.message: Required value: message must be specified if rule contains line breaks"
        )]
    );
    assert!(one(json!({"rule": "self.replicas > 0\n", "message": "ok"})).is_empty());
    assert_eq!(
        one(json!({"rule": "self.replicas > 0", "messageExpression": "  "})),
        [format!(
            "{AT}.messageExpression: Required value: messageExpression must be non-empty if specified"
        )]
    );
    assert_eq!(
        one(json!({"rule": "self.replicas > 0", "fieldPath": "  "})),
        [
            format!("{AT}.fieldPath: Invalid value: \"  \": must be non-empty if specified"),
            format!("{AT}.fieldPath: Invalid value: \"  \": must be a valid path"),
        ]
    );
    for bad in [".foo", "spec.replicas", ".name\n"] {
        assert!(
            one(json!({"rule": "self.replicas > 0", "fieldPath": bad}))
                .iter()
                .any(|l| l.ends_with("must be a valid path")),
            "{bad:?}"
        );
    }
    assert!(one(json!({"rule": "self.replicas > 0", "fieldPath": ".replicas"})).is_empty());
    assert!(one(json!({"rule": "self.replicas > 0", "fieldPath": "['my-field']"})).is_empty());
    // A wrong field blocks compiling every rule of the node: self.foo is not reported.
    assert_eq!(
        lines(json!([{"rule": "self.foo > 0"}, {"rule": "self.replicas > 0", "reason": "Bad", "fieldPath": ".nope"}])),
        [
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].reason: Unsupported value: \"Bad\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"".to_string(),
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].fieldPath: Invalid value: \".nope\": must be a valid path".to_string(),
        ]
    );
}

#[test]
fn message_expressions_and_optional_old_self_are_checked() {
    let rule = json!({"rule": "self.replicas > 0", "messageExpression": "self.replicas + 1"});
    assert_eq!(
        lines(json!([rule])),
        [format!(
            "{AT}.messageExpression: Invalid value: {{\"Rule\":\"self.replicas \\u003e 0\",\"Message\":\"\",\"MessageExpression\":\"self.replicas + 1\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}}: messageExpression must evaluate to a string"
        )]
    );
    let rule = json!({"rule": "self.replicas > 0", "messageExpression": "self.foo"});
    assert!(lines(json!([rule]))[0].contains(
        ": messageExpression compilation failed: ERROR: <input>:1:5: undefined field 'foo'"
    ));
    assert_eq!(
        lines(json!([{"rule": "self.replicas > 0", "optionalOldSelf": true}])),
        [format!(
            "{AT}.optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
        )]
    );
    // A rule that does not compile does not use oldSelf either.
    let both = lines(
        json!([{"rule": "self.replicas > 0 && self.name == 1", "message": "m",
        "reason": "FieldValueForbidden", "fieldPath": ".name", "optionalOldSelf": false}]),
    );
    assert_eq!(both.len(), 2, "{both:?}");
    assert!(both[0].contains("\"Reason\":\"FieldValueForbidden\",\"FieldPath\":\".name\",\"OptionalOldSelf\":false}: compilation failed"));
    assert_eq!(
        both[1],
        format!(
            "{AT}.optionalOldSelf: Invalid value: false: may not be set if oldSelf is not used in rule"
        )
    );
    assert!(
        lines(json!([{"rule": "self.replicas >= oldSelf.replicas", "optionalOldSelf": true}]))
            .is_empty()
    );
}

#[test]
fn deep_rules_are_answered_not_crashed_on() {
    // Nested as deep as the 16 KiB a rule may have: refused, in some words, on this thread's
    // stack (kube-apiserver's parser refuses them past its recursion limit).
    for rule in [
        format!("{}1", "1 + ".repeat(4000)),
        format!("{}true{}", "(".repeat(8000), ")".repeat(8000)),
        format!("{}self.replicas{}", "[".repeat(5000), "]".repeat(5000)),
    ] {
        assert!(!lines(json!([{"rule": rule}])).is_empty());
    }
    // An even number of `!` is its operand, as cel-go's parser makes it.
    assert!(lines(json!([{"rule": format!("{}true", "!".repeat(16000))}])).is_empty());
}

/// Rules of the sets and format libraries: accepted as kube-apiserver v1.36.3 accepts them, and
/// refused in its words where it refuses them (a `validate` result of unknown size compared or
/// joined is too dear; wrong types; a function the libraries do not declare).
#[test]
fn sets_and_format_rules_are_checked_as_kube_apiserver_checks_them() {
    let with = |rules: Value| {
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 10},
                "tags": {"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 10}}},
            "x-kubernetes-validations": rules}}})
    };
    let lines = |rules: Value| -> Vec<String> {
        check(&with(rules), "spec.validation.openAPIV3Schema")
            .into_iter()
            .map(|(f, _, m)| format!("{f}: {m}"))
            .collect()
    };
    let ok = json!([
        {"rule": "!format.dns1123Label().validate(self.name).hasValue()",
         "messageExpression": "format.dns1123Label().validate(self.name).value()[0]"},
        {"rule": "sets.contains(['a', 'b'], self.tags) && sets.equivalent(self.tags, self.tags) && !sets.intersects(self.tags, ['x'])"},
        {"rule": "format.named('uri').value() == format.uri() && !format.named('nope').hasValue()"}
    ]);
    assert_eq!(lines(ok), Vec::<String>::new());
    let bad = json!([
        {"rule": "!format.dns1123Label().validate(self.name).hasValue()",
         "messageExpression": "format.dns1123Label().validate(self.name).value().join(', ')"},
        {"rule": "format.dns1123Label().validate(self.name) == optional.none()"},
        {"rule": "sets.contains(self.tags, [1])"},
        {"rule": "format.named('uri').validate(self.name).hasValue()"},
        {"rule": "format.nope().validate(self.name).hasValue()"},
        {"rule": "format.uri()"}
    ]);
    let at = |i: usize| {
        format!("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[{i}]")
    };
    let try_ = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
    let total = "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema";
    assert_eq!(
        lines(bad),
        [
            format!(
                "{}.messageExpression: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x {try_}",
                at(0)
            ),
            format!(
                "{}.rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {try_}",
                at(1)
            ),
            format!(
                "{}.rule: Invalid value: {}: compilation failed: ERROR: <input>:1:14: found no matching overload for 'sets.contains' applied to '(list(string), list(int))'\n | sets.contains(self.tags, [1])\n | .............^",
                at(2),
                value("sets.contains(self.tags, [1])")
            ),
            format!(
                "{}.rule: Invalid value: {}: compilation failed: ERROR: <input>:1:29: found no matching overload for 'validate' applied to 'optional_type(kubernetes.NamedFormat).(string)'\n | format.named('uri').validate(self.name).hasValue()\n | ............................^",
                at(3),
                value("format.named('uri').validate(self.name).hasValue()")
            ),
            format!(
                "{}.rule: Invalid value: {}: compilation failed: ERROR: <input>:1:1: undeclared reference to 'format' (in container '')\n | format.nope().validate(self.name).hasValue()\n | ^\nERROR: <input>:1:12: undeclared reference to 'nope' (in container '')\n | format.nope().validate(self.name).hasValue()\n | ...........^",
                at(4),
                value("format.nope().validate(self.name).hasValue()")
            ),
            format!(
                "{}.rule: Invalid value: {}: cel expression must evaluate to a bool",
                at(5),
                value("format.uri()")
            ),
            format!("{}.messageExpression: {total}", at(0)),
            format!("{}.rule: {total}", at(1)),
            format!(
                "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {try_}"
            ),
        ]
    );
}
