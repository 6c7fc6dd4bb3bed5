//! Label selector parsing and matching: ports of apimachinery's `pkg/labels/selector_test.go`
//! (the selector language listers take), named after the cases they port.

use std::collections::BTreeMap;

#[cfg(feature = "k8s")]
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
use kinformer_selector::{LabelSelector, LabelSelectorError, Operator, Requirement};

fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
    Requirement::new(key, op, values.iter().copied())
        .unwrap_or_else(|e| panic!("requirement {key} {op} {values:?}: {e}"))
}

fn selector(reqs: Vec<Requirement>) -> LabelSelector {
    reqs.into_iter()
        .fold(LabelSelector::everything(), LabelSelector::with)
}

#[test]
fn test_selector_parse() {
    let good = [
        "x=a,y=b,z=c",
        "",
        "x!=a,y=b",
        "x=",
        "x= ",
        "x=,z= ",
        "x= ,z= ",
        "!x",
        "x>1",
        "x>1,z<5",
    ];
    for s in good {
        let parsed = LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        assert_eq!(parsed.to_string(), s.replace(' ', ""), "{s:?} restring");
    }
    for s in ["x=a||y=b", "x==a==b", "!x=a", "x<a"] {
        assert!(LabelSelector::parse(s).is_err(), "{s:?} should not parse");
    }
}

#[test]
fn test_deterministic_parse() {
    let s1 = LabelSelector::parse("x=a,a=x").unwrap();
    let s2 = LabelSelector::parse("a=x,x=a").unwrap();
    assert_eq!(s1.to_string(), s2.to_string());
    assert_eq!(s1, s2);
}

#[test]
fn test_everything() {
    assert!(LabelSelector::everything().matches(&set(&[("x", "y")])));
    assert!(LabelSelector::everything().is_empty());
    assert_eq!(
        LabelSelector::parse("").unwrap(),
        LabelSelector::everything()
    );
}

fn expect_match(selector: &str, labels: &[(&str, &str)]) {
    let parsed = LabelSelector::parse(selector).unwrap();
    assert!(
        parsed.matches(&set(labels)),
        "{selector:?} should match {labels:?}"
    );
}

fn expect_no_match(selector: &str, labels: &[(&str, &str)]) {
    let parsed = LabelSelector::parse(selector).unwrap();
    assert!(
        !parsed.matches(&set(labels)),
        "{selector:?} should not match {labels:?}"
    );
}

#[test]
fn test_selector_matches() {
    expect_match("", &[("x", "y")]);
    expect_match("x=y", &[("x", "y")]);
    expect_match("x=y,z=w", &[("x", "y"), ("z", "w")]);
    expect_match("x!=y,z!=w", &[("x", "z"), ("z", "a")]);
    expect_match("notin=in", &[("notin", "in")]); // in and notin in exact match
    expect_match("x", &[("x", "z")]);
    expect_match("!x", &[("y", "z")]);
    expect_match("x>1", &[("x", "2")]);
    expect_match("x<1", &[("x", "0")]);
    expect_no_match("x=z", &[]);
    expect_no_match("x=y", &[("x", "z")]);
    expect_no_match("x=y,z=w", &[("x", "w"), ("z", "w")]);
    expect_no_match("x!=y,z!=w", &[("x", "z"), ("z", "w")]);
    expect_no_match("x", &[("y", "z")]);
    expect_no_match("!x", &[("x", "z")]);
    expect_no_match("x>1", &[("x", "0")]);
    expect_no_match("x<1", &[("x", "2")]);

    let labelset = [("foo", "bar"), ("baz", "blah")];
    expect_match("foo=bar", &labelset);
    expect_match("baz=blah", &labelset);
    expect_match("foo=bar,baz=blah", &labelset);
    expect_no_match("foo=blah", &labelset);
    expect_no_match("baz=bar", &labelset);
    expect_no_match("foo=bar,foobar=bar,baz=blah", &labelset);
}

#[test]
fn test_set_matches() {
    let labelset = set(&[("foo", "bar"), ("baz", "blah")]);
    for wanted in [
        vec![],
        vec![("foo", "bar")],
        vec![("baz", "blah")],
        vec![("foo", "bar"), ("baz", "blah")],
    ] {
        assert!(
            LabelSelector::from_labels(wanted.clone()).matches(&labelset),
            "{wanted:?}"
        );
    }
    assert!(!LabelSelector::from_labels([("foo", "blah")]).matches(&labelset));
}

#[test]
fn test_set_is_empty() {
    assert!(LabelSelector::from_labels(Vec::<(String, String)>::new()).is_empty());
    assert!(LabelSelector::default().is_empty());
}

/// apimachinery's `TestParseOperator`, through the parser: anything but a binary operator after
/// a key is rejected with the list of operators.
#[test]
fn test_parse_operator() {
    for op in ["in (a)", "=a", "==a", ">1", "<1", "notin (a)", "!=a"] {
        let s = format!("x {op}");
        assert!(LabelSelector::parse(&s).is_ok(), "{s:?}");
    }
    for (op, found) in [("! a", "!"), ("exists", "exists"), ("( a", "(")] {
        let s = format!("x {op}");
        assert_eq!(
            LabelSelector::parse(&s),
            Err(LabelSelectorError::Syntax(format!(
                "found '{found}', expected: in, notin, =, ==, !=, gt, lt"
            ))),
            "{s:?}"
        );
    }
}

#[test]
fn test_requirement_constructor() {
    let long = "a".repeat(254);
    let cases: Vec<(&str, Operator, Vec<&str>, bool)> = vec![
        ("x1", Operator::In, vec![], false),
        ("x2", Operator::NotIn, vec![], false),
        ("x3", Operator::In, vec!["foo"], true),
        ("x4", Operator::NotIn, vec!["foo"], true),
        ("x5", Operator::Equals, vec!["foo", "bar"], false),
        ("x6", Operator::Exists, vec![], true),
        ("x7", Operator::DoesNotExist, vec![], true),
        ("x8", Operator::Exists, vec!["foo"], false),
        ("x9", Operator::In, vec!["bar"], true),
        ("x10", Operator::In, vec!["bar"], true),
        ("x11", Operator::GreaterThan, vec!["1"], true),
        ("x12", Operator::LessThan, vec!["6"], true),
        ("x13", Operator::GreaterThan, vec![], false),
        ("x14", Operator::GreaterThan, vec!["bar"], false),
        ("x15", Operator::LessThan, vec!["bar"], false),
        (&long, Operator::Exists, vec![], false),
        ("x16", Operator::Equals, vec![&long], false),
        ("x17", Operator::Equals, vec!["a b"], false),
    ];
    for (key, op, values, ok) in cases {
        let got = Requirement::new(key, op, values.clone());
        assert_eq!(got.is_ok(), ok, "{key} {op} {values:?}: {got:?}");
    }
    // The error kinds name the problem.
    assert!(matches!(
        Requirement::new(&long, Operator::Exists, Vec::<String>::new()),
        Err(LabelSelectorError::InvalidKey { .. })
    ));
    assert!(matches!(
        Requirement::new("x17", Operator::Equals, ["a b"]),
        Err(LabelSelectorError::InvalidValue { .. })
    ));
    assert!(matches!(
        Requirement::new("x14", Operator::GreaterThan, ["bar"]),
        Err(LabelSelectorError::InvalidValues { .. })
    ));
}

#[test]
fn test_to_string() {
    let cases = [
        (
            selector(vec![
                req("x", Operator::In, &["abc", "def"]),
                req("y", Operator::NotIn, &["jkl"]),
                req("z", Operator::Exists, &[]),
            ]),
            "x in (abc,def),y notin (jkl),z",
        ),
        (
            selector(vec![
                req("x", Operator::NotIn, &["abc", "def"]),
                req("y", Operator::NotEquals, &["jkl"]),
                req("z", Operator::DoesNotExist, &[]),
            ]),
            "x notin (abc,def),y!=jkl,!z",
        ),
        (
            selector(vec![
                req("x", Operator::NotIn, &["abc"]),
                req("y", Operator::In, &["jkl", "mno"]),
                req("z", Operator::NotIn, &[""]),
            ]),
            "x notin (abc),y in (jkl,mno),z notin ()",
        ),
        (
            selector(vec![
                req("x", Operator::Equals, &["abc"]),
                req("y", Operator::DoubleEquals, &["jkl"]),
                req("z", Operator::NotEquals, &["a"]),
                req("z", Operator::Exists, &[]),
            ]),
            "x=abc,y==jkl,z!=a,z",
        ),
        (
            selector(vec![
                req("x", Operator::GreaterThan, &["2"]),
                req("y", Operator::LessThan, &["8"]),
                req("z", Operator::Exists, &[]),
            ]),
            "x>2,y<8,z",
        ),
    ];
    for (sel, want) in cases {
        assert_eq!(sel.to_string(), want);
    }
}

#[test]
fn test_requirement_selector_matching() {
    let cases = [
        (
            set(&[("x", "foo"), ("y", "baz")]),
            selector(vec![
                req("x", Operator::In, &["foo"]),
                req("y", Operator::NotIn, &["alpha"]),
            ]),
            true,
        ),
        (
            set(&[("x", "foo"), ("y", "baz")]),
            selector(vec![
                req("x", Operator::In, &["foo"]),
                req("y", Operator::In, &["alpha"]),
            ]),
            false,
        ),
        (
            set(&[("y", "")]),
            selector(vec![
                req("x", Operator::NotIn, &[""]),
                req("y", Operator::Exists, &[]),
            ]),
            true,
        ),
        (
            set(&[("y", "")]),
            selector(vec![
                req("x", Operator::DoesNotExist, &[]),
                req("y", Operator::Exists, &[]),
            ]),
            true,
        ),
        (
            set(&[("y", "")]),
            selector(vec![
                req("x", Operator::NotIn, &[""]),
                req("y", Operator::DoesNotExist, &[]),
            ]),
            false,
        ),
        (
            set(&[("y", "baz")]),
            selector(vec![req("x", Operator::In, &[""])]),
            false,
        ),
        (
            set(&[("z", "2")]),
            selector(vec![req("z", Operator::GreaterThan, &["1"])]),
            true,
        ),
        (
            set(&[("z", "v2")]),
            selector(vec![req("z", Operator::GreaterThan, &["1"])]),
            false,
        ),
    ];
    for (labels, sel, want) in cases {
        assert_eq!(sel.matches(&labels), want, "{sel} on {labels:?}");
    }
}

#[test]
fn test_set_selector_parser() {
    use Operator::*;
    // (input, expected selector when it is compared, valid)
    let cases: Vec<(&str, Option<LabelSelector>, bool)> = vec![
        ("", Some(LabelSelector::everything()), true),
        ("\rx", Some(selector(vec![req("x", Exists, &[])])), true),
        (
            "this-is-a-dns.domain.com/key-with-dash",
            Some(selector(vec![req(
                "this-is-a-dns.domain.com/key-with-dash",
                Exists,
                &[],
            )])),
            true,
        ),
        (
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
            Some(selector(vec![req(
                "this-is-another-dns.domain.com/key-with-dash",
                In,
                &["so", "what"],
            )])),
            true,
        ),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            Some(selector(vec![req(
                "0.1.2.domain/99",
                NotIn,
                &["10.10.100.1", "tick.tack.clock"],
            )])),
            true,
        ),
        (
            "foo  in\t (abc)",
            Some(selector(vec![req("foo", In, &["abc"])])),
            true,
        ),
        (
            "x notin\n (abc)",
            Some(selector(vec![req("x", NotIn, &["abc"])])),
            true,
        ),
        (
            "x  notin\t\t\t(abc,def)",
            Some(selector(vec![req("x", NotIn, &["abc", "def"])])),
            true,
        ),
        (
            "x in (abc,def)",
            Some(selector(vec![req("x", In, &["abc", "def"])])),
            true,
        ),
        (
            "x in (abc,)",
            Some(selector(vec![req("x", In, &["abc", ""])])),
            true,
        ),
        (
            "x in (abc,abc)",
            Some(selector(vec![req("x", In, &["abc"])])),
            true,
        ),
        ("x in ()", Some(selector(vec![req("x", In, &[""])])), true),
        (
            "x in (a,,)",
            Some(selector(vec![req("x", In, &["a", ""])])),
            true,
        ),
        (
            "x in (a,,,)",
            Some(selector(vec![req("x", In, &["a", ""])])),
            true,
        ),
        (
            "x in (a,,,,,,)",
            Some(selector(vec![req("x", In, &["a", ""])])),
            true,
        ),
        (
            "x in (a,,a,,a,,a,,)",
            Some(selector(vec![req("x", In, &["a", ""])])),
            true,
        ),
        (
            "x notin (abc,,def),bar,z in (),w",
            Some(selector(vec![
                req("bar", Exists, &[]),
                req("w", Exists, &[]),
                req("x", NotIn, &["abc", "", "def"]),
                req("z", In, &[""]),
            ])),
            true,
        ),
        ("x,y in (a)", None, true),
        ("x=a", Some(selector(vec![req("x", Equals, &["a"])])), true),
        (
            "x>1",
            Some(selector(vec![req("x", GreaterThan, &["1"])])),
            true,
        ),
        (
            "x<7",
            Some(selector(vec![req("x", LessThan, &["7"])])),
            true,
        ),
        (
            "x=a,y!=b",
            Some(selector(vec![
                req("x", Equals, &["a"]),
                req("y", NotEquals, &["b"]),
            ])),
            true,
        ),
        (
            "x=a,y!=b,z in (h,i,j)",
            Some(selector(vec![
                req("x", Equals, &["a"]),
                req("y", NotEquals, &["b"]),
                req("z", In, &["h", "i", "j"]),
            ])),
            true,
        ),
        ("x=a||y=b", None, false),
        ("x,,y", None, false),
        (",x,y", None, false),
        ("x nott in (y)", None, false),
        (
            "x notin ( )",
            Some(selector(vec![req("x", NotIn, &[""])])),
            true,
        ),
        (
            "x notin (, a)",
            Some(selector(vec![req("x", NotIn, &["", "a"])])),
            true,
        ),
        ("a in (xyz),", None, false),
        ("a in (xyz)b notin ()", None, false),
        ("a ", Some(selector(vec![req("a", Exists, &[])])), true),
        (
            "a in (x,y,notin, z,in)",
            Some(selector(vec![req(
                "a",
                In,
                &["in", "notin", "x", "y", "z"],
            )])),
            true,
        ), // operator 'in' inside a list of identifiers
        ("a in (xyz abc)", None, false), // no comma
        ("a notin(", None, false),       // badly formed
        ("a (", None, false),            // cpar
        ("(", None, false),              // opar
    ];
    for (input, want, valid) in cases {
        let got = LabelSelector::parse(input);
        assert_eq!(got.is_ok(), valid, "{input:?}: {got:?}");
        if let (Ok(got), Some(want)) = (got, want) {
            assert_eq!(got, want, "{input:?}");
        }
    }
}

#[test]
fn test_add() {
    let sel = LabelSelector::everything().with(req("key", Operator::In, &["value"]));
    assert_eq!(sel.requirements(), [req("key", Operator::In, &["value"])]);
    let sel = sel.with(req("key2", Operator::Equals, &["value2"]));
    assert_eq!(
        sel.requirements(),
        [
            req("key", Operator::In, &["value"]),
            req("key2", Operator::Equals, &["value2"])
        ]
    );
}

/// Syntax errors carry apimachinery's wording.
#[test]
fn syntax_errors_say_what_was_found_and_expected() {
    assert_eq!(
        LabelSelector::parse("x=a,").unwrap_err(),
        LabelSelectorError::Syntax("found '', expected: identifier after ','".into())
    );
    assert_eq!(
        LabelSelector::parse("x in (a").unwrap_err(),
        LabelSelectorError::Syntax("found '', expected: ',' or ')'".into())
    );
    assert_eq!(
        "x=a b".parse::<LabelSelector>().unwrap_err().to_string(),
        "unable to parse requirement: found 'b', expected: ',' or 'end of string'"
    );
}

/// apimachinery's `LabelSelectorAsSelector` (the `k8s` feature).
#[cfg(feature = "k8s")]
#[test]
fn kubernetes_label_selector_converts() {
    let k8s = metav1::LabelSelector {
        match_labels: Some(BTreeMap::from([("app".into(), "web".into())])),
        match_expressions: Some(vec![
            metav1::LabelSelectorRequirement {
                key: "tier".into(),
                operator: "In".into(),
                values: Some(vec!["front".into(), "back".into()]),
            },
            metav1::LabelSelectorRequirement {
                key: "canary".into(),
                operator: "DoesNotExist".into(),
                values: None,
            },
        ]),
    };
    let sel = LabelSelector::try_from(&k8s).unwrap();
    assert_eq!(sel.to_string(), "app=web,!canary,tier in (back,front)");
    assert!(sel.matches(&set(&[("app", "web"), ("tier", "back")])));
    assert!(!sel.matches(&set(&[("app", "web"), ("tier", "back"), ("canary", "1")])));

    assert!(
        LabelSelector::try_from(&metav1::LabelSelector::default())
            .unwrap()
            .is_empty()
    );
    let bad = metav1::LabelSelector {
        match_expressions: Some(vec![metav1::LabelSelectorRequirement {
            key: "x".into(),
            operator: "Gt".into(),
            values: Some(vec!["1".into()]),
        }]),
        ..Default::default()
    };
    assert_eq!(
        LabelSelector::try_from(&bad),
        Err(LabelSelectorError::UnsupportedOperator("Gt".into()))
    );
}
