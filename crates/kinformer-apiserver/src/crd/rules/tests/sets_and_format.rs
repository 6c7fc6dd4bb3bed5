//! cel-go's sets library and Kubernetes' format library, evaluated; the answers are those of
//! cel-go v0.26 and `k8s.io/apiserver` v0.36.3 for the same expressions.

use super::*;

/// What `expr` evaluates to in the rules' environment.
fn eval(expr: &str) -> Cel {
    cel_evaluate(expr, &cel_context()).unwrap_or_else(|e| panic!("{expr}: {e:?}"))
}

/// The errors `format.<name>().validate(s)` gives (`[]` for `optional.none()`).
fn format_errors(name: &str, s: &str) -> Vec<String> {
    let expr = format!("format.{name}().validate({}).orValue([])", json!(s));
    match eval(&expr) {
        Cel::List(l) => l
            .iter()
            .map(|x| match x {
                Cel::String(s) => s.to_string(),
                other => panic!("{expr}: {other:?}"),
            })
            .collect(),
        other => panic!("{expr}: {other:?}"),
    }
}

const LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const NAME_PART: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

#[test]
fn each_format_accepts_its_values_and_words_what_is_wrong_as_go_does() {
    let valid = [
        ("dns1123Label", "my-label-name"),
        ("dns1123Subdomain", "apiextensions.k8s.io"),
        ("dns1035Label", "my-label-name"),
        ("qualifiedName", "apiextensions.k8s.io/v1beta1"),
        ("qualifiedName", "my.name"),
        ("dns1123LabelPrefix", "my-label-prefix-"),
        ("dns1123SubdomainPrefix", "mysubdomain.prefix.-"),
        ("dns1035LabelPrefix", "my-label-prefix-"),
        ("dns1035LabelPrefix", "1-"),
        ("labelValue", "my-cool-label-Value"),
        ("labelValue", ""),
        ("uri", "http://example.com"),
        ("uri", "/a b"),
        ("uri", "mailto:x@y"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
        ("uuid", "123E4567E89B12D3A456426614174000"),
        ("byte", "aGVsbG8="),
        ("date", "2020-02-29"),
        ("datetime", "2021-01-01T00:00:00Z"),
        ("datetime", "2020-01-01t10:00:00.5+02:00"),
    ];
    for (name, s) in valid {
        assert_eq!(format_errors(name, s), Vec::<String>::new(), "{name} {s:?}");
    }
    let long = "a".repeat(64);
    let prefix = format!("{}/x", "a".repeat(254));
    let invalid: Vec<(&str, &str, Vec<String>)> = vec![
        ("dns1123Label", "contains a space", vec![LABEL.into()]),
        ("dns1123Label", "a.b", vec!["must not contain dots".into()]),
        (
            "dns1123Label",
            &long,
            vec!["must be no more than 63 characters".into()],
        ),
        ("dns1123Subdomain", "-a", vec![SUBDOMAIN.into()]),
        ("dns1035Label", "1abc", vec![DNS1035.into()]),
        (
            "qualifiedName",
            "a/b/c",
            vec![format!(
                "a valid label key {NAME_PART} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )],
        ),
        (
            "qualifiedName",
            "/a",
            vec!["prefix part must be non-empty".into()],
        ),
        (
            "qualifiedName",
            "Example.com/x",
            vec![format!("prefix part {SUBDOMAIN}")],
        ),
        (
            "qualifiedName",
            "",
            vec![
                "name part must be non-empty".into(),
                format!("name part {NAME_PART}"),
            ],
        ),
        (
            "qualifiedName",
            &long,
            vec!["name part must be no more than 63 bytes".into()],
        ),
        (
            "qualifiedName",
            &prefix,
            vec!["prefix part must be no more than 253 bytes".into()],
        ),
        (
            "dns1123LabelPrefix",
            "contains a space-",
            vec![LABEL.into()],
        ),
        (
            "dns1123LabelPrefix",
            "a.b-",
            vec!["must not contain dots".into()],
        ),
        ("dns1123LabelPrefix", "xé-", vec![LABEL.into()]),
        ("dns1123SubdomainPrefix", "-", vec![SUBDOMAIN.into()]),
        ("dns1035LabelPrefix", "12-", vec![DNS1035.into()]),
        (
            "labelValue",
            "my-cool-label-Value!!\n\n!!!",
            vec![LABEL_VALUE.into()],
        ),
        (
            "labelValue",
            &long,
            vec!["must be no more than 63 bytes".into()],
        ),
        (
            "uri",
            "foo",
            vec!["parse \"foo\": invalid URI for request".into()],
        ),
        ("uri", "", vec!["parse \"\": empty url".into()]),
        (
            "uri",
            "http://[::1",
            vec!["parse \"http://[::1\": missing ']' in host".into()],
        ),
        (
            "uri",
            "http://a:b/",
            vec!["parse \"http://a:b/\": invalid port \":b\" after host".into()],
        ),
        (
            "uri",
            "http://example.com/%zz",
            vec!["parse \"http://example.com/%zz\": invalid URL escape \"%zz\"".into()],
        ),
        (
            "uri",
            "a\u{1}",
            vec!["parse \"a\\x01\": net/url: invalid control character in URL".into()],
        ),
        (
            "uuid",
            "nope",
            vec!["does not match the UUID format".into()],
        ),
        ("byte", "aGVsbG8", vec!["invalid base64".into()]),
        ("byte", "", vec!["invalid base64".into()]),
        ("date", "2020-01-32", vec!["invalid date".into()]),
        (
            "datetime",
            "2020-01-32T00:00:00Z",
            vec!["invalid datetime".into()],
        ),
    ];
    for (name, s, want) in invalid {
        assert_eq!(format_errors(name, s), want, "{name} {s:?}");
    }
}

#[test]
fn formats_are_named_compared_and_typed_as_in_kubernetes() {
    let names = [
        "dns1123Label",
        "dns1123Subdomain",
        "dns1035Label",
        "qualifiedName",
        "dns1123LabelPrefix",
        "dns1123SubdomainPrefix",
        "dns1035LabelPrefix",
        "labelValue",
        "uri",
        "uuid",
        "byte",
        "date",
        "datetime",
    ];
    for a in names {
        let named = format!(
            "format.named('{a}').hasValue() && format.named('{a}').value() == format.{a}()"
        );
        assert_eq!(eval(&named), Cel::Bool(true), "{named}");
        for b in names.iter().filter(|b| **b != a) {
            let differ = format!("format.{a}() != format.{b}() && !(format.{a}() == format.{b}())");
            assert_eq!(eval(&differ), Cel::Bool(true), "{differ}");
        }
    }
    for holds in [
        "!format.named('nope').hasValue()",
        "format.named('nope') == optional.none()",
        "format.named('dns1123label') == optional.none()",
        "type(format.uri()) == type(format.named('byte').value())",
        "format.dns1123Label().validate('my-name') == optional.none()",
        "format.named('dns1123Label').value().validate('my-name') == optional.none()",
        "format.dns1123Label().validate('a b').hasValue()",
        "format.dns1123Label().validate('a b').value().size() == 1",
    ] {
        assert_eq!(eval(holds), Cel::Bool(true), "{holds}");
    }
}

#[test]
fn sets_compare_items_with_cels_equality() {
    for holds in [
        "sets.contains([], [])",
        "!sets.contains([], [1])",
        "sets.contains([1, 2, 3, 4], [2, 3])",
        "sets.contains([1], [])",
        "sets.contains([dyn(1), dyn(2.0), dyn(3u)], [dyn(1.0), dyn(2u), dyn(3)])",
        "!sets.contains([dyn(1)], [dyn('1')])",
        "sets.contains(dyn([1]), [1.0])",
        "sets.contains([dyn(null)], [dyn(null)])",
        "sets.contains([{'a': [1]}], [{'a': [dyn(1.0)]}])",
        "sets.equivalent([], [])",
        "!sets.equivalent([], [1])",
        "sets.equivalent([1], [1, 1])",
        "sets.equivalent([dyn(1)], [dyn(1u), dyn(1.0)])",
        "sets.equivalent([1, 2, 3], [3, 2, 1, 1])",
        "!sets.equivalent([1, 2], [1])",
        "!sets.intersects([1], [])",
        "!sets.intersects([], [])",
        "sets.intersects([1], [1, 2])",
        "!sets.intersects([1, 2], [3])",
        "sets.intersects([dyn([1]), dyn([2, 3])], [dyn([1, 2]), dyn([2.0, 3.0])])",
        "sets.contains(['a', 'b'], ['b']) && sets.intersects(['a'], ['b', 'a'])",
    ] {
        assert_eq!(eval(holds), Cel::Bool(true), "{holds}");
    }
}

/// A schema's rules using both libraries, with a `messageExpression` that lists what
/// `validate` finds.
#[test]
fn rules_of_objects_use_sets_and_formats() {
    let spec = json!({"type": "object", "properties": {
        "name": with_rules(json!({"type": "string", "maxLength": 64}), json!([{
            "rule": "!format.dns1123Label().validate(self).hasValue()",
            "messageExpression": "format.dns1123Label().validate(self).value().join(', ')"}])),
        "tags": with_rules(json!({"type": "array", "maxItems": 5,
                "items": {"type": "string", "maxLength": 10}}),
            json!([{"rule": "sets.contains(['a', 'b', 'c'], self)",
                "message": "tags must be a, b or c"}])),
        "weights": with_rules(json!({"type": "array", "maxItems": 5, "items": {"type": "number"}}),
            json!([{"rule": "sets.intersects(self, [dyn(1), dyn(2u)])",
                "message": "a weight must be 1 or 2"}])),
    }});
    let ok = json!({"name": "my-name", "tags": ["a", "c"], "weights": [0.5, 2.0]});
    assert_eq!(causes(spec.clone(), ok, None), Vec::<String>::new());
    let bad = json!({"name": "My.Name", "tags": ["a", "d"], "weights": [1.5]});
    let long = format!("{}.b", "a".repeat(62));
    assert_eq!(
        causes(spec.clone(), bad, None),
        [
            format!("spec.name: Invalid value: \"My.Name\": {LABEL}"),
            "spec.tags: Invalid value: tags must be a, b or c".to_string(),
            "spec.weights: Invalid value: a weight must be 1 or 2".to_string(),
        ]
    );
    let got = causes(spec, json!({"name": long}), None);
    assert_eq!(
        got,
        [format!(
            "spec.name: Invalid value: \"{long}\": must be no more than 63 characters, must not contain dots"
        )]
    );
}
