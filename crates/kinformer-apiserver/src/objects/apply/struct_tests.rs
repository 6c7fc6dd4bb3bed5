//! Applies and updates of a nested struct (our versions of structured-merge-diff's
//! `TestUpdateNestedType` struct cases): what an applier that stops applying a struct, or
//! applies it empty or null, leaves behind.

use serde_json::json;

use super::tests::{Sim, widget, widgets};

fn base() -> Sim {
    let mut s = Sim::new(widgets());
    s.apply("default", widget(json!({"struct": {"name": "a"}})));
    s.update(
        "controller",
        json!({"spec": {"struct": {"name": "a", "scalarField": "1"}}}),
    );
    s
}

#[test]
fn applying_nothing_removes_everything_applied() {
    let mut s = Sim::new(widgets());
    s.apply(
        "default",
        widget(json!({"struct": {"name": "a", "scalarField": "1"}})),
    );
    s.apply(
        "default",
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
    );
    assert_eq!(s.content(), json!({}));
    assert!(s.managed().is_empty());
}

#[test]
fn a_null_struct_is_owned_and_its_old_fields_go() {
    let mut s = Sim::new(widgets());
    s.apply("default", widget(json!({"struct": {"name": "a"}})));
    s.apply("default", widget(json!({"struct": null})));
    // structured-merge-diff leaves `struct: null`, which Go's typed objects omit.
    assert_eq!(s.content(), json!({"spec": {}}));
    assert_eq!(
        s.fields_of("default", "Apply"),
        Some(json!({"f:spec": {"f:struct": {}}}))
    );
}

#[test]
fn what_an_updater_added_stays_when_the_applier_leaves() {
    let mut s = base();
    s.apply(
        "default",
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
    );
    assert_eq!(
        s.content(),
        json!({"spec": {"struct": {"scalarField": "1"}}})
    );
}

#[test]
fn an_empty_or_null_struct_applied_keeps_the_updaters_fields() {
    for applied in [json!({}), json!(null)] {
        let mut s = base();
        s.apply("default", widget(json!({"struct": applied})));
        assert_eq!(
            s.content(),
            json!({"spec": {"struct": {"scalarField": "1"}}})
        );
    }
}

#[test]
fn a_field_taken_over_by_an_updater_is_not_removed() {
    let mut s = Sim::new(widgets());
    s.apply("default", widget(json!({"struct": {"name": "a"}})));
    s.update(
        "controller",
        json!({"spec": {"struct": {"name": "b", "scalarField": "1"}}}),
    );
    assert_eq!(s.fields_of("default", "Apply"), None);
    s.apply("default", widget(json!({"struct": null})));
    assert_eq!(
        s.content(),
        json!({"spec": {"struct": {"name": "b", "scalarField": "1"}}})
    );
}
