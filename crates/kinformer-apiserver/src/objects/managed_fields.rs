//! `metadata.managedFields` for Update operations (create, update, patch over HTTP), as
//! kube-apiserver's field manager maintains them.
//!
//! Contract (structured-merge-diff's `Updater.Update` plus kube-apiserver's wrappers):
//! - the writer's entry is identified by manager, operation (`Update`), apiVersion and
//!   subresource; its field set becomes (previous set − removed) ∪ modified ∪ added, where the
//!   comparison is between the stored object (Go's zero object of the kind on create) and the
//!   new one ([`super::fieldset::compare`]);
//! - fields the writer added or modified leave every other entry's set; removed fields leave
//!   every set; an entry whose set becomes empty is dropped;
//! - `apiVersion`, `kind`, `metadata` and the server-owned metadata fields (name, namespace,
//!   uid, resourceVersion, generation, creationTimestamp, managedFields, ...) are never owned;
//!   on a resource with a status subresource, main-resource writes own nothing under `status`
//!   and `/status` writes own only `status` (kube-apiserver's reset fields);
//! - the entry's `time` changes only when its set changes;
//! - past ten Update entries the oldest merge into `ancient-changes` ([`super::cap_managers`]);
//! - entries are sorted by operation, time, manager, apiVersion, subresource;
//! - managedFields sent by the client are the starting point when non-empty and well formed
//!   (and not a `/status` write), else the stored ones, as kube-apiserver does; an empty list
//!   (or one empty entry) resets them.
//!
//! Writes without a manager (the in-process Rust API: `seed`, `create`, ...) skip all of this
//! and store `managedFields` exactly as given.
//!
//! Server-side apply keeps `Apply` entries ([`super::apply`]); an Update takes the fields it
//! changes from them as from any entry.

use serde_json::{Map, Value};

use super::apply::schema::schema_for;
use super::fieldset::{FieldPath, FieldSet, compare};
pub(crate) use super::managed_entries::{Entry, decode, write_entries};
use super::now_rfc3339;
use crate::resource::ResourceInfo;

/// Who writes: the field manager (`fieldManager` parameter, else derived from the
/// User-Agent) and the subresource written (`status`), if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Writer {
    /// `managedFields[].manager`.
    pub manager: String,
    /// `managedFields[].subresource` (`status` for `/status` writes).
    pub subresource: Option<String>,
}

/// kube-apiserver's `FieldManagerMaxLength`.
const MANAGER_MAX_LEN: usize = 128;

/// The manager name kube-apiserver derives from a User-Agent (`prefixFromUserAgent`): the text
/// before the first `/`, without unprintable characters, cut to 128 bytes.
pub(crate) fn manager_from_user_agent(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars() {
        if c.is_control() {
            continue;
        }
        if out.len() + c.len_utf8() > MANAGER_MAX_LEN {
            break;
        }
        out.push(c);
    }
    out
}

/// Go's zero object of a kind, as kube-apiserver compares a create against it: fields without
/// `omitempty` (a pod's `spec.containers`, a deployment's `spec.template`) are present, so
/// they are never owned as nodes.
pub(crate) fn zero_object(res: &ResourceInfo) -> Map<String, Value> {
    let v = match (res.group.as_str(), res.plural.as_str()) {
        ("", "pods") => serde_json::json!({"spec": {"containers": null}, "status": {}}),
        ("apps", "deployments") => serde_json::json!({
            "spec": {"selector": null, "template": {"metadata": {}, "spec": {"containers": null}}, "strategy": {}},
            "status": {}
        }),
        ("", "services") => serde_json::json!({"spec": {}, "status": {"loadBalancer": {}}}),
        ("", "nodes") => {
            serde_json::json!({"spec": {}, "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}, "nodeInfo": {}}})
        }
        ("", "namespaces") => serde_json::json!({"spec": {}, "status": {}}),
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            serde_json::json!({"spec": {}, "status": {}})
        }
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicybindings"
            | "mutatingadmissionpolicies"
            | "mutatingadmissionpolicybindings",
        ) => serde_json::json!({"spec": {}}),
        ("authorization.k8s.io", _) => serde_json::json!({"spec": {}, "status": {}}),
        ("authentication.k8s.io", _) if res.kind == "TokenRequest" => {
            serde_json::json!({"spec": {"audiences": null}, "status": {}})
        }
        ("", "events") => serde_json::json!({
            "involvedObject": {}, "source": {}, "firstTimestamp": null, "lastTimestamp": null,
            "eventTime": null, "reportingComponent": "", "reportingInstance": ""
        }),
        _ => serde_json::json!({}),
    };
    let mut m = v.as_object().cloned().unwrap_or_default();
    m.insert(
        "metadata".into(),
        serde_json::json!({"creationTimestamp": null}),
    );
    m
}

/// Paths no manager owns (kube-apiserver's strip set).
pub(crate) fn stripped(path: &[String]) -> bool {
    match path {
        [a] => a == "f:apiVersion" || a == "f:kind" || a == "f:metadata",
        [m, f] if m == "f:metadata" => matches!(
            f.as_str(),
            "f:name"
                | "f:namespace"
                | "f:creationTimestamp"
                | "f:selfLink"
                | "f:uid"
                | "f:clusterName"
                | "f:generation"
                | "f:managedFields"
                | "f:resourceVersion"
        ),
        _ => false,
    }
}

/// Whether `path` may be owned by a write of `writer` (kube-apiserver's reset fields): on a
/// resource with a status subresource, main-resource writes own nothing under `status` and
/// `/status` writes own only `status`; `/scale` writes own only the replicas field they set
/// (kube-apiserver's scale handler maps the Scale's `spec.replicas` to it).
pub(crate) fn ownable(res: &ResourceInfo, writer: &Writer, path: &FieldPath) -> bool {
    let status_path = path.first().is_some_and(|f| f == "f:status");
    match writer.subresource.as_deref() {
        Some("scale") => res.scale.as_ref().is_some_and(|s| {
            let want: Vec<String> = s
                .spec_replicas_path
                .trim_start_matches('.')
                .split('.')
                .map(|f| format!("f:{f}"))
                .collect();
            *path == want
        }),
        // A TokenRequest is its own kind, written whole through `serviceaccounts/x/token`.
        Some("token") => true,
        Some(_) => status_path,
        None => !(res.status_subresource && status_path),
    }
}

pub(crate) fn managed_of(obj: &Map<String, Value>) -> Option<&Value> {
    obj.get("metadata")?.get("managedFields")
}

pub(crate) fn without_managed(obj: &Map<String, Value>) -> Map<String, Value> {
    let mut o = obj.clone();
    if let Some(Value::Object(m)) = o.get_mut("metadata") {
        m.remove("managedFields");
    }
    o
}

/// Sets `new.metadata.managedFields` for an Update-operation write by `writer`: `old` is the
/// stored object (`None` for a create), `new` the object about to be stored.
pub(crate) fn update_managed_fields(
    res: &ResourceInfo,
    old: Option<&Map<String, Value>>,
    new: &mut Map<String, Value>,
    writer: &Writer,
) {
    let status_write = writer.subresource.is_some();
    // `managedFields: []` (or one empty entry) from the client resets the ownership.
    let reset = !status_write
        && matches!(managed_of(new), Some(Value::Array(a))
            if a.is_empty() || (a.len() == 1 && a[0] == Value::Object(Map::new())));
    let from_client = if status_write {
        None
    } else {
        decode(managed_of(new))
    };
    let mut entries = if reset {
        Vec::new()
    } else {
        from_client
            .or_else(|| old.and_then(|o| decode(managed_of(o))))
            .unwrap_or_default()
    };
    let live = match old {
        Some(o) => without_managed(o),
        None => zero_object(res),
    };
    let candidate = without_managed(new);
    let cmp = compare(&*schema_for(res), &live, &candidate);
    let me = Entry {
        manager: writer.manager.clone(),
        operation: "Update".into(),
        api_version: res.api_version(),
        subresource: writer.subresource.clone().unwrap_or_default(),
        time: None,
        set: FieldSet::new(),
    };
    let previous = entries.iter().position(|e| e.same_owner(&me));
    let prev = previous.map(|i| entries.remove(i));
    let changed = cmp.modified.union(&cmp.added);
    for e in &mut entries {
        e.set = e.set.difference(&changed).difference(&cmp.removed);
    }
    entries.retain(|e| !e.set.is_empty());
    // What this write took (kube-apiserver's "current-operation" manager): its entry's time
    // changes only when it took something.
    let current = changed.filter(|p| !stripped(p) && ownable(res, writer, p));
    let (prev_set, prev_time) = match prev {
        Some(p) => (p.set, p.time),
        None => (FieldSet::new(), None),
    };
    let mine = prev_set.difference(&cmp.removed).union(&current);
    if !mine.is_empty() {
        let time = if current.is_empty() {
            prev_time
        } else {
            Some(now_rfc3339())
        };
        entries.push(Entry {
            time,
            set: mine,
            ..me
        });
    }
    super::cap_managers::cap_update_managers(&mut entries);
    write_entries(new, entries);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::test_util::res;
    use serde_json::json;

    #[test]
    fn manager_is_the_user_agent_before_the_first_slash() {
        assert_eq!(
            manager_from_user_agent("kubectl/v1.35.0 (linux/amd64) kubernetes/abc"),
            "kubectl"
        );
    }

    fn writer(m: &str) -> Writer {
        Writer {
            manager: m.into(),
            subresource: None,
        }
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn entries(o: &Map<String, Value>) -> Vec<Value> {
        o["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|mut e| {
                e.as_object_mut().unwrap().remove("time");
                e
            })
            .collect()
    }

    #[test]
    fn manager_is_the_user_agent_prefix() {
        assert_eq!(
            manager_from_user_agent("kinformer-e2e-diff/v0 (linux)"),
            "kinformer-e2e-diff"
        );
        assert_eq!(manager_from_user_agent(""), "");
        assert_eq!(manager_from_user_agent(&"x".repeat(200)).len(), 128);
        assert_eq!(manager_from_user_agent("a\u{7}b/1"), "ab");
    }

    /// The recorded kube-apiserver v1.35 entries for a config map created with data, labels
    /// and a finalizer (e2e/diff "already-exists", "initial-events-end", "finalizers").
    #[test]
    fn create_owns_what_the_manager_set() {
        let mut o = obj(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u", "resourceVersion": "5",
                         "creationTimestamp": "2026-01-01T00:00:00Z",
                         "labels": {"app": "a"}, "finalizers": ["kinformer.dev/hold"]},
            "data": {"k": "1"}
        }));
        update_managed_fields(
            &res("configmaps"),
            None,
            &mut o,
            &writer("kinformer-e2e-diff"),
        );
        assert_eq!(
            entries(&o),
            vec![json!({
                "apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kinformer-e2e-diff",
                "operation": "Update",
                "fieldsV1": {
                    "f:data": {".": {}, "f:k": {}},
                    "f:metadata": {
                        "f:finalizers": {".": {}, "v:\"kinformer.dev/hold\"": {}},
                        "f:labels": {".": {}, "f:app": {}}
                    }
                }
            })]
        );
        assert!(o["metadata"]["managedFields"][0]["time"].is_string());
    }

    /// Removing the last finalizer (e2e/diff "finalizers / remove-finalizer"): the finalizer
    /// paths leave the set.
    #[test]
    fn update_by_the_same_manager_drops_removed_fields() {
        let r = res("configmaps");
        let mut old =
            obj(json!({"metadata": {"name": "a", "finalizers": ["x"]}, "data": {"k": "1"}}));
        update_managed_fields(&r, None, &mut old, &writer("m"));
        let mut new = obj(json!({"metadata": {"name": "a"}, "data": {"k": "1"}}));
        update_managed_fields(&r, Some(&old), &mut new, &writer("m"));
        assert_eq!(
            entries(&new)[0]["fieldsV1"],
            json!({"f:data": {".": {}, "f:k": {}}})
        );
    }

    #[test]
    fn another_manager_takes_the_fields_it_changes() {
        let r = res("configmaps");
        let mut old = obj(json!({"metadata": {"name": "a"}, "data": {"a": "1", "b": "1"}}));
        update_managed_fields(&r, None, &mut old, &writer("first"));
        let mut new = old.clone();
        new["data"]["b"] = json!("2");
        new["data"]["c"] = json!("3");
        update_managed_fields(&r, Some(&old), &mut new, &writer("second"));
        let e = entries(&new);
        let by = |m: &str| {
            e.iter()
                .find(|x| x["manager"] == m)
                .map(|x| x["fieldsV1"].clone())
                .unwrap()
        };
        assert_eq!(by("first"), json!({"f:data": {".": {}, "f:a": {}}}));
        assert_eq!(by("second"), json!({"f:data": {"f:b": {}, "f:c": {}}}));
        // A no-op write by a third manager adds no entry and changes nothing.
        let mut same = new.clone();
        update_managed_fields(&r, Some(&new), &mut same, &writer("third"));
        assert_eq!(same, new);
    }

    #[test]
    fn client_sent_managed_fields_are_the_base_when_valid() {
        let r = res("configmaps");
        let sent = json!([{"manager": "elsewhere", "operation": "Update", "apiVersion": "v1",
                           "time": "2020-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:data": {"f:x": {}}}}]);
        let mut o =
            obj(json!({"metadata": {"name": "a", "managedFields": sent}, "data": {"x": "1"}}));
        update_managed_fields(&r, None, &mut o, &writer("me"));
        let e = entries(&o);
        // "me" added data.x too, so it takes it from "elsewhere", whose set empties.
        assert_eq!(e.len(), 1);
        assert_eq!(e[0]["manager"], "me");
        // Malformed managedFields are ignored (the stored ones are the base).
        let mut bad =
            obj(json!({"metadata": {"name": "a", "managedFields": [1]}, "data": {"x": "1"}}));
        update_managed_fields(&r, None, &mut bad, &writer("me"));
        assert_eq!(entries(&bad).len(), 1);
    }

    #[test]
    fn an_empty_managed_fields_list_resets_ownership() {
        let r = res("configmaps");
        let mut old = obj(json!({"metadata": {"name": "a"}, "data": {"a": "1"}}));
        update_managed_fields(&r, None, &mut old, &writer("first"));
        let mut new = obj(
            json!({"metadata": {"name": "a", "managedFields": []}, "data": {"a": "1", "b": "2"}}),
        );
        update_managed_fields(&r, Some(&old), &mut new, &writer("second"));
        let e = entries(&new);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0]["manager"], "second");
        assert_eq!(e[0]["fieldsV1"], json!({"f:data": {"f:b": {}}}));
    }

    #[test]
    fn an_update_of_owned_fields_refreshes_the_time() {
        let r = res("configmaps");
        let mut old = obj(json!({"metadata": {"name": "a"}, "data": {"a": "1"}}));
        update_managed_fields(&r, None, &mut old, &writer("m"));
        old["metadata"]["managedFields"][0]["time"] = json!("2000-01-01T00:00:00Z");
        let mut same = old.clone();
        update_managed_fields(&r, Some(&old), &mut same, &writer("m"));
        assert_eq!(
            same["metadata"]["managedFields"][0]["time"],
            "2000-01-01T00:00:00Z"
        );
        let mut new = old.clone();
        new["data"]["a"] = json!("2");
        update_managed_fields(&r, Some(&old), &mut new, &writer("m"));
        assert_ne!(
            new["metadata"]["managedFields"][0]["time"],
            "2000-01-01T00:00:00Z"
        );
    }

    #[test]
    fn status_writes_own_only_status_and_main_writes_no_status() {
        let r = res("pods");
        let mut o = obj(
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Pending"}}),
        );
        update_managed_fields(&r, None, &mut o, &writer("kubectl"));
        let fields = entries(&o)[0]["fieldsV1"].clone();
        assert!(fields.get("f:status").is_none(), "{fields}");
        let mut s = o.clone();
        s["status"]["phase"] = json!("Running");
        let w = Writer {
            manager: "kubelet".into(),
            subresource: Some("status".into()),
        };
        update_managed_fields(&r, Some(&o), &mut s, &w);
        let e = entries(&s);
        let kubelet = e.iter().find(|x| x["manager"] == "kubelet").unwrap();
        assert_eq!(kubelet["subresource"], "status");
        assert_eq!(kubelet["fieldsV1"], json!({"f:status": {"f:phase": {}}}));
    }
}
