//! The label selector cases kinformer-apiserver's list/watch filtering was tested with when it
//! had a parser of its own (`labelSelector=` query parameters): the server now parses with this
//! crate, so they test the shared grammar.

use std::collections::BTreeMap;

use kinformer_selector::LabelSelector;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn equality_operators() {
    let l = labels(&[("app", "web"), ("tier", "front")]);
    assert!(LabelSelector::parse("app=web").unwrap().matches(&l));
    assert!(LabelSelector::parse("app==web").unwrap().matches(&l));
    assert!(!LabelSelector::parse("app=api").unwrap().matches(&l));
    assert!(LabelSelector::parse("app!=api").unwrap().matches(&l));
    assert!(!LabelSelector::parse("app!=web").unwrap().matches(&l));
    // != matches objects without the key, as in Kubernetes.
    assert!(LabelSelector::parse("missing!=x").unwrap().matches(&l));
    assert!(
        LabelSelector::parse("app=web, tier = front")
            .unwrap()
            .matches(&l)
    );
    assert!(
        !LabelSelector::parse("app=web,tier=back")
            .unwrap()
            .matches(&l)
    );
}

#[test]
fn set_operators() {
    let l = labels(&[("env", "prod")]);
    assert!(
        LabelSelector::parse("env in (prod, staging)")
            .unwrap()
            .matches(&l)
    );
    assert!(!LabelSelector::parse("env in (dev)").unwrap().matches(&l));
    assert!(LabelSelector::parse("env notin (dev)").unwrap().matches(&l));
    assert!(
        !LabelSelector::parse("env notin (prod)")
            .unwrap()
            .matches(&l)
    );
    assert!(
        LabelSelector::parse("other notin (prod)")
            .unwrap()
            .matches(&l)
    );
    assert!(!LabelSelector::parse("other in (prod)").unwrap().matches(&l));
}

#[test]
fn existence_operators() {
    let l = labels(&[("env", "prod")]);
    assert!(LabelSelector::parse("env").unwrap().matches(&l));
    assert!(!LabelSelector::parse("!env").unwrap().matches(&l));
    assert!(LabelSelector::parse("!other").unwrap().matches(&l));
    assert!(!LabelSelector::parse("other").unwrap().matches(&l));
}

#[test]
fn numeric_operators() {
    let l = labels(&[("n", "5")]);
    assert!(LabelSelector::parse("n>3").unwrap().matches(&l));
    assert!(!LabelSelector::parse("n<3").unwrap().matches(&l));
    assert!(LabelSelector::parse("n>x").is_err());
}

#[test]
fn empty_matches_everything() {
    let s = LabelSelector::parse("  ").unwrap();
    assert!(s.is_empty());
    assert!(s.matches(&labels(&[])));
}

#[test]
fn open_parenthesis_at_the_end_names_every_expected_token() {
    // kube-apiserver v1.35 (e2e/diff "bad-request / list-bad-label-selector").
    assert_eq!(
        LabelSelector::parse("a in (").unwrap_err().to_string(),
        "unable to parse requirement: found '', expected: ',', ')' or identifier"
    );
}

#[test]
fn malformed_selectors_are_errors() {
    for bad in [
        "app in (web",
        "app in web",
        "=web",
        "app=we b",
        "app=%%",
        "a,,b",
        "!",
        "app ~ x",
        "-bad=x",
        "app=(",
        "env in (a,",
    ] {
        assert!(
            LabelSelector::parse(bad).is_err(),
            "{bad:?} should not parse"
        );
    }
}

#[test]
fn prefixed_keys() {
    let l = labels(&[("app.kubernetes.io/name", "web")]);
    assert!(
        LabelSelector::parse("app.kubernetes.io/name=web")
            .unwrap()
            .matches(&l)
    );
}
