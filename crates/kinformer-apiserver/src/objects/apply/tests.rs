//! Apply sequences with the managedFields structured-merge-diff gives for them (our versions of
//! cases from its `merge/*_test.go`: leaf fields, sets, keyed lists, multiple appliers,
//! conflicts, forced applies, removal of fields an applier stops applying).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::apply;
use crate::objects::managed_fields::{Writer, update_managed_fields};
use crate::objects::test_util::res;
use crate::resource::{ResourceInfo, Scope};
use crate::status::ApiError;

fn writer(m: &str) -> Writer {
    Writer {
        manager: m.into(),
        subresource: None,
    }
}

/// One object and the writes to it, as the server would do them (without the API server's
/// defaulting and validation).
pub(super) struct Sim {
    res: ResourceInfo,
    obj: Option<Map<String, Value>>,
}

impl Sim {
    pub(super) fn new(res: ResourceInfo) -> Self {
        Sim { res, obj: None }
    }

    fn try_apply(&mut self, m: &str, config: Value, force: bool) -> Result<(), ApiError> {
        let config = config.as_object().unwrap().clone();
        self.obj = Some(apply(
            &self.res,
            self.obj.as_ref(),
            &config,
            &writer(m),
            force,
        )?);
        Ok(())
    }

    pub(super) fn apply(&mut self, m: &str, config: Value) {
        self.try_apply(m, config, false).unwrap();
    }

    /// An Update by `m` replacing the object's content with `body` (metadata kept).
    pub(super) fn update(&mut self, m: &str, body: Value) {
        let old = self.obj.clone();
        let mut new = body.as_object().unwrap().clone();
        let meta = old
            .as_ref()
            .map(|o| o["metadata"].clone())
            .unwrap_or(json!({"name": "x"}));
        new.insert("metadata".into(), meta);
        if let Some(Value::Object(meta)) = new.get_mut("metadata") {
            meta.remove("managedFields");
        }
        update_managed_fields(&self.res, old.as_ref(), &mut new, &writer(m));
        self.obj = Some(new);
    }

    pub(super) fn content(&self) -> Value {
        let mut o = self.obj.clone().unwrap();
        o.remove("metadata");
        o.remove("apiVersion");
        o.remove("kind");
        Value::Object(o)
    }

    /// `(manager, operation, fieldsV1)` of every entry, in stored order.
    pub(super) fn managed(&self) -> Vec<(String, String, Value)> {
        self.obj.as_ref().unwrap()["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                (
                    e["manager"].as_str().unwrap().to_string(),
                    e["operation"].as_str().unwrap().to_string(),
                    e["fieldsV1"].clone(),
                )
            })
            .collect()
    }

    pub(super) fn fields_of(&self, manager: &str, op: &str) -> Option<Value> {
        self.managed()
            .into_iter()
            .find(|(m, o, _)| m == manager && o == op)
            .map(|(_, _, f)| f)
    }
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data})
}

/// A custom resource whose schema has a keyed list, a set, an atomic list and an atomic map.
pub(super) fn widgets() -> ResourceInfo {
    let mut r = ResourceInfo::new("example.com", "v1", "Widget", "widgets", Scope::Namespaced);
    r.schema = Some(Arc::new(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {
                          "name": {"type": "string"}, "port": {"type": "integer"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                         "additionalProperties": {"type": "string"}},
            "replicas": {"type": "integer"},
            "struct": {"type": "object", "properties": {
                "name": {"type": "string"},
                "scalarField": {"type": "string"},
                "complexField": {"type": "object", "properties": {"name": {"type": "string"}}}
            }}
        }}
    }})));
    r
}

pub(super) fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
}

#[test]
fn applying_twice_owns_the_latest_configuration() {
    let mut s = Sim::new(res("configmaps"));
    s.apply("default", cm(json!({"a": "1", "b": "x"})));
    s.apply("default", cm(json!({"a": "2", "b": "x", "c": "false"})));
    assert_eq!(
        s.content(),
        json!({"data": {"a": "2", "b": "x", "c": "false"}})
    );
    // An Apply entry owns the configuration's fields: no "." for the struct field `data`.
    assert_eq!(
        s.managed(),
        vec![(
            "default".into(),
            "Apply".into(),
            json!({"f:data": {"f:a": {}, "f:b": {}, "f:c": {}}})
        )]
    );
}

#[test]
fn an_update_between_applies_keeps_its_fields_without_conflict() {
    let mut s = Sim::new(res("configmaps"));
    s.apply("default", cm(json!({"a": "1", "b": "x"})));
    s.update(
        "controller",
        json!({"data": {"a": "1", "b": "x", "c": "true"}}),
    );
    s.apply("default", cm(json!({"a": "2", "b": "x"})));
    assert_eq!(
        s.content(),
        json!({"data": {"a": "2", "b": "x", "c": "true"}})
    );
    assert_eq!(
        s.fields_of("default", "Apply"),
        Some(json!({"f:data": {"f:a": {}, "f:b": {}}}))
    );
    assert_eq!(
        s.fields_of("controller", "Update"),
        Some(json!({"f:data": {"f:c": {}}}))
    );
}

#[test]
fn a_changed_field_owned_by_an_updater_conflicts_until_forced() {
    let mut s = Sim::new(res("configmaps"));
    s.apply("default", cm(json!({"a": "1", "b": "x"})));
    s.update(
        "controller",
        json!({"data": {"a": "1", "b": "controller", "c": "true"}}),
    );
    let e = s
        .try_apply("default", cm(json!({"a": "2", "b": "user"})), false)
        .unwrap_err();
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        e.message,
        "Apply failed with 1 conflict: conflict with \"controller\" using v1: .data.b"
    );
    assert_eq!(
        e.details,
        Some(json!({"causes": [{"reason": "FieldManagerConflict",
            "message": "conflict with \"controller\" using v1", "field": ".data.b"}]}))
    );
    s.try_apply("default", cm(json!({"a": "2", "b": "user"})), true)
        .unwrap();
    assert_eq!(
        s.content(),
        json!({"data": {"a": "2", "b": "user", "c": "true"}})
    );
    assert_eq!(
        s.fields_of("default", "Apply"),
        Some(json!({"f:data": {"f:a": {}, "f:b": {}}}))
    );
    assert_eq!(
        s.fields_of("controller", "Update"),
        Some(json!({"f:data": {"f:c": {}}}))
    );
}

#[test]
fn two_appliers_of_one_value_share_it_and_a_change_conflicts() {
    let mut s = Sim::new(res("configmaps"));
    s.apply("a", cm(json!({"k": "1"})));
    s.apply("b", cm(json!({"k": "1", "j": "2"})));
    assert_eq!(
        s.fields_of("a", "Apply"),
        Some(json!({"f:data": {"f:k": {}}}))
    );
    assert_eq!(
        s.fields_of("b", "Apply"),
        Some(json!({"f:data": {"f:j": {}, "f:k": {}}}))
    );
    let e = s.try_apply("b", cm(json!({"k": "3"})), false).unwrap_err();
    // An Apply manager is named without its version.
    assert_eq!(
        e.message,
        "Apply failed with 1 conflict: conflict with \"a\": .data.k"
    );
    // b stopping to apply `j` (nobody else owns it) removes it; `k` stays, a still owns it.
    // An empty map is owned as such.
    s.apply("b", cm(json!({})));
    assert_eq!(s.content(), json!({"data": {"k": "1"}}));
    assert_eq!(s.fields_of("b", "Apply"), Some(json!({"f:data": {}})));
    // Applying nothing at all leaves b with no entry.
    s.apply(
        "b",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
    );
    assert_eq!(s.fields_of("b", "Apply"), None);
    assert_eq!(s.content(), json!({"data": {"k": "1"}}));
}

#[test]
fn a_field_no_longer_applied_stays_while_another_manager_owns_it() {
    let mut s = Sim::new(res("configmaps"));
    s.apply("a", cm(json!({"x": "1", "y": "1"})));
    s.apply("b", cm(json!({"y": "1"})));
    s.apply("a", cm(json!({"x": "1"})));
    assert_eq!(s.content(), json!({"data": {"x": "1", "y": "1"}}));
    s.apply("b", cm(json!({"z": "1"})));
    assert_eq!(s.content(), json!({"data": {"x": "1", "z": "1"}}));
}

#[test]
fn several_conflicts_are_listed_by_manager() {
    let mut s = Sim::new(res("configmaps"));
    s.apply("a", cm(json!({"k1": "1", "k2": "1"})));
    s.update("u", json!({"data": {"k1": "1", "k2": "1", "k3": "1"}}));
    let e = s
        .try_apply("z", cm(json!({"k1": "2", "k2": "2", "k3": "2"})), false)
        .unwrap_err();
    assert_eq!(
        e.message,
        "Apply failed with 3 conflicts: conflicts with \"a\":\n- .data.k1\n- .data.k2\nconflicts with \"u\" using v1:\n- .data.k3"
    );
    let causes = e.details.unwrap()["causes"].clone();
    assert_eq!(causes.as_array().unwrap().len(), 3);
    assert_eq!(causes[2]["field"], ".data.k3");
    assert_eq!(causes[2]["message"], "conflict with \"u\" using v1");
    // Forced: the fields move to z, a and u are left with nothing and dropped.
    s.try_apply("z", cm(json!({"k1": "2", "k2": "2", "k3": "2"})), true)
        .unwrap();
    let managers: Vec<String> = s.managed().into_iter().map(|(m, _, _)| m).collect();
    assert_eq!(managers, vec!["z".to_string()]);
}

#[test]
fn set_lists_merge_items_in_structured_merge_diff_order() {
    let mut s = Sim::new(widgets());
    s.apply("default", widget(json!({"tags": ["a", "c"]})));
    s.update(
        "controller",
        json!({"spec": {"tags": ["a", "b", "c", "d"]}}),
    );
    s.apply(
        "default",
        widget(json!({"tags": ["a", "aprime", "c", "cprime"]})),
    );
    assert_eq!(
        s.content()["spec"]["tags"],
        json!(["a", "b", "aprime", "c", "d", "cprime"])
    );
    assert_eq!(
        s.fields_of("default", "Apply"),
        Some(json!({"f:spec": {"f:tags": {
            "v:\"a\"": {}, "v:\"aprime\"": {}, "v:\"c\"": {}, "v:\"cprime\"": {}}}}))
    );
    assert_eq!(
        s.fields_of("controller", "Update"),
        Some(json!({"f:spec": {"f:tags": {"v:\"b\"": {}, "v:\"d\"": {}}}}))
    );
}

#[test]
fn keyed_list_items_belong_to_their_appliers() {
    let mut s = Sim::new(widgets());
    s.apply(
        "a",
        widget(json!({"ports": [{"name": "http", "port": 80}]})),
    );
    s.apply(
        "b",
        widget(json!({"ports": [{"name": "metrics", "port": 9090}]})),
    );
    assert_eq!(
        s.content()["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}])
    );
    assert_eq!(
        s.fields_of("b", "Apply"),
        Some(json!({"f:spec": {"f:ports": {"k:{\"name\":\"metrics\"}": {
            ".": {}, "f:name": {}, "f:port": {}}}}}))
    );
    let e = s
        .try_apply(
            "b",
            widget(json!({"ports": [{"name": "http", "port": 81}]})),
            false,
        )
        .unwrap_err();
    assert_eq!(
        e.message,
        "Apply failed with 1 conflict: conflict with \"a\": .spec.ports[name=\"http\"].port"
    );
    // a stops applying its item: it goes, b's stays.
    s.apply("a", widget(json!({"replicas": 1})));
    assert_eq!(
        s.content()["spec"]["ports"],
        json!([{"name": "metrics", "port": 9090}])
    );
}

#[test]
fn atomic_lists_and_maps_are_owned_whole() {
    let mut s = Sim::new(widgets());
    s.apply(
        "a",
        widget(json!({"args": ["x", "y"], "selector": {"app": "w"}})),
    );
    assert_eq!(
        s.fields_of("a", "Apply"),
        Some(json!({"f:spec": {"f:args": {}, "f:selector": {}}}))
    );
    let e = s
        .try_apply("b", widget(json!({"args": ["z"]})), false)
        .unwrap_err();
    assert_eq!(
        e.message,
        "Apply failed with 1 conflict: conflict with \"a\": .spec.args"
    );
    s.try_apply("b", widget(json!({"selector": {"tier": "x"}})), true)
        .unwrap();
    assert_eq!(s.content()["spec"]["selector"], json!({"tier": "x"}));
    assert_eq!(
        s.fields_of("a", "Apply"),
        Some(json!({"f:spec": {"f:args": {}}}))
    );
}

#[test]
fn objects_without_managed_fields_are_owned_before_the_first_apply() {
    let mut s = Sim::new(res("configmaps"));
    s.obj = Some(cm(json!({"old": "1"})).as_object().unwrap().clone());
    let e = s
        .try_apply("a", cm(json!({"old": "2"})), false)
        .unwrap_err();
    assert_eq!(
        e.message,
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.old"
    );
    s.apply("a", cm(json!({"new": "1"})));
    assert_eq!(
        s.fields_of("before-first-apply", "Update"),
        Some(json!({"f:data": {".": {}, "f:old": {}}}))
    );
}

#[test]
fn a_no_op_apply_keeps_the_time_and_a_change_sets_it() {
    let mut s = Sim::new(res("configmaps"));
    s.apply("a", cm(json!({"k": "1"})));
    let entry = |s: &Sim| s.obj.as_ref().unwrap()["metadata"]["managedFields"][0].clone();
    let mut stale = entry(&s);
    stale["time"] = json!("2000-01-01T00:00:00Z");
    s.obj.as_mut().unwrap()["metadata"]["managedFields"] = json!([stale]);
    s.apply("a", cm(json!({"k": "1"})));
    assert_eq!(entry(&s)["time"], "2000-01-01T00:00:00Z");
    s.apply("a", cm(json!({"k": "2"})));
    assert_ne!(entry(&s)["time"], "2000-01-01T00:00:00Z");
}

#[test]
fn pod_ports_are_keyed_with_the_default_protocol() {
    let mut s = Sim::new(res("pods"));
    let pod = |port: Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "i", "ports": [port]}]}})
    };
    s.apply("a", pod(json!({"containerPort": 80})));
    assert_eq!(
        s.fields_of("a", "Apply"),
        Some(json!({"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {
            ".": {}, "f:image": {}, "f:name": {},
            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
        }}}}))
    );
}

#[test]
fn a_struct_no_longer_applied_goes_with_its_fields() {
    let mut s = Sim::new(widgets());
    s.apply(
        "apply-one",
        widget(json!({"struct": {"name": "a", "complexField": {"name": "b"}}})),
    );
    s.apply("apply-one", widget(json!({"struct": {"name": "a"}})));
    assert_eq!(s.content(), json!({"spec": {"struct": {"name": "a"}}}));
    assert_eq!(
        s.managed(),
        vec![(
            "apply-one".into(),
            "Apply".into(),
            json!({"f:spec": {"f:struct": {"f:name": {}}}})
        )]
    );
}

#[test]
fn a_struct_shared_with_another_applier_keeps_its_part() {
    let mut s = Sim::new(widgets());
    s.apply(
        "apply-one",
        widget(json!({"struct": {"name": "a", "complexField": {"name": "b"}}})),
    );
    s.apply(
        "apply-two",
        widget(json!({"struct": {"complexField": {"name": "b"}}})),
    );
    s.apply("apply-one", widget(json!({"struct": {"name": "a"}})));
    assert_eq!(
        s.content(),
        json!({"spec": {"struct": {"name": "a", "complexField": {"name": "b"}}}})
    );
    assert_eq!(
        s.fields_of("apply-two", "Apply"),
        Some(json!({"f:spec": {"f:struct": {"f:complexField": {"f:name": {}}}}}))
    );
}

#[test]
fn a_field_shared_with_an_updater_stays_when_no_longer_applied() {
    let mut s = Sim::new(widgets());
    s.update(
        "updater",
        json!({"spec": {"struct": {"name": "a", "scalarField": "a"}}}),
    );
    s.apply(
        "applier",
        widget(json!({"struct": {"name": "a", "scalarField": "a"}})),
    );
    s.apply("applier", widget(json!({"struct": {"name": "a"}})));
    assert_eq!(
        s.content()["spec"],
        json!({"struct": {"name": "a", "scalarField": "a"}})
    );
    // The updater created the struct: it owns the node too.
    assert_eq!(
        s.fields_of("updater", "Update"),
        Some(
            json!({"f:spec": {".": {}, "f:struct": {".": {}, "f:name": {}, "f:scalarField": {}}}})
        )
    );
    assert_eq!(
        s.fields_of("applier", "Apply"),
        Some(json!({"f:spec": {"f:struct": {"f:name": {}}}}))
    );
}

#[test]
fn an_updater_claims_the_field_it_changes() {
    let mut s = Sim::new(widgets());
    s.apply(
        "applier",
        widget(json!({"struct": {"name": "a", "scalarField": "a"}})),
    );
    s.update(
        "updater",
        json!({"spec": {"struct": {"name": "a", "scalarField": "b"}}}),
    );
    assert_eq!(
        s.fields_of("updater", "Update"),
        Some(json!({"f:spec": {"f:struct": {"f:scalarField": {}}}}))
    );
    assert_eq!(
        s.fields_of("applier", "Apply"),
        Some(json!({"f:spec": {"f:struct": {"f:name": {}}}}))
    );
}

#[test]
fn keyed_items_shared_by_two_appliers_survive_one_of_them() {
    let mut s = Sim::new(widgets());
    let ports = |names: &[&str]| {
        widget(json!({"ports": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}))
    };
    s.apply("apply-one", ports(&["a", "b", "c"]));
    s.apply("apply-two", ports(&["c", "d"]));
    s.apply("apply-one", ports(&["a"]));
    assert_eq!(
        s.content()["spec"]["ports"],
        json!([{"name": "a"}, {"name": "c"}, {"name": "d"}])
    );
    assert_eq!(
        s.fields_of("apply-one", "Apply"),
        Some(json!({"f:spec": {"f:ports": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}}}}}))
    );
    assert_eq!(
        s.fields_of("apply-two", "Apply"),
        Some(json!({"f:spec": {"f:ports": {
            "k:{\"name\":\"c\"}": {".": {}, "f:name": {}},
            "k:{\"name\":\"d\"}": {".": {}, "f:name": {}}}}}))
    );
}

#[test]
fn kubectl_moves_from_client_side_apply_without_conflicts() {
    let last = "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"1\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"}}\n";
    let csa = |s: &mut Sim| {
        s.obj = None;
        s.update(
            "kubectl-client-side-apply",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "1"}}),
        );
        s.obj.as_mut().unwrap()["metadata"]["annotations"] =
            json!({(super::last_applied::ANNOTATION): last});
    };
    let mut s = Sim::new(res("configmaps"));
    csa(&mut s);
    // Another manager conflicts with the client-side applier...
    let e = s
        .try_apply("other", cm(json!({"k": "2"})), false)
        .unwrap_err();
    assert_eq!(
        e.message,
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.k"
    );
    // ...kubectl does not for what the annotation recorded, and rewrites the annotation.
    s.apply("kubectl", cm(json!({"k": "2"})));
    assert_eq!(s.content()["data"], json!({"k": "2"}));
    assert_eq!(
        s.obj.as_ref().unwrap()["metadata"]["annotations"][super::last_applied::ANNOTATION],
        "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"2\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"}}\n"
    );
    assert_eq!(
        s.fields_of("kubectl", "Apply"),
        Some(json!({"f:data": {"f:k": {}}}))
    );
}

#[test]
fn duplicate_keys_in_an_applied_configuration_are_refused() {
    let mut s = Sim::new(widgets());
    let e = s
        .try_apply(
            "a",
            widget(json!({"ports": [{"name": "x"}, {"name": "x", "port": 1}]})),
            false,
        )
        .unwrap_err();
    assert_eq!((e.code, e.reason.as_str()), (500, ""));
    assert_eq!(
        e.message,
        "failed to create typed patch object (/w; example.com/v1, Kind=Widget): .spec.ports: duplicate entries for key [name=\"x\"]"
    );
    let e = s
        .try_apply("a", widget(json!({"ports": [{"port": 1}]})), false)
        .unwrap_err();
    assert_eq!(
        e.message,
        "failed to create typed patch object (/w; example.com/v1, Kind=Widget): .spec.ports: element 0: associative list with keys has an element that omits all key fields [\"name\"] (and doesn't have default values for any key fields)"
    );
    assert!(s.obj.is_none());
}
