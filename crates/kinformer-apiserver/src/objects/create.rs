//! CREATE: resolving the name, validating, setting server metadata.

use serde_json::{Map, Value};

use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::StoredObject;

use super::*;

/// A new object ready to be created: name resolved (or generated from `generateName`),
/// validated, with server-set metadata. Returns the storage key and the object.
/// `managedFields` are kept as given (an in-process write without a field manager). Tests
/// only: the server writes through [`prepare_create_by`].
#[cfg(test)]
pub(crate) fn prepare_create(
    res: &ResourceInfo,
    path_ns: &str,
    obj: Map<String, Value>,
    rev: u64,
) -> Result<(String, StoredObject), ApiError> {
    prepare_create_by(res, path_ns, obj, rev, None, Admission::default())
}

/// [`prepare_create`] by a field manager: with a `writer`, `metadata.managedFields` get its
/// Update entry ([`super::managed_fields`]); `admission` is what the store told about the
/// object's surroundings.
pub(crate) fn prepare_create_by(
    res: &ResourceInfo,
    path_ns: &str,
    obj: Map<String, Value>,
    rev: u64,
    writer: Option<&Writer>,
    admission: Admission,
) -> Result<(String, StoredObject), ApiError> {
    prepare_create_as(res, path_ns, obj, rev, writer, Created::Fresh(admission))
}

/// What admission needs to know beyond the object itself, read from the store before the
/// write.
#[derive(Debug, Default)]
pub(crate) struct Admission {
    /// For a Pod: what the ServiceAccount admission found of its account (the default: an
    /// account with nothing set, as the service account controller creates `default`).
    pub(crate) service_account: super::service_account::Account,
    /// For a Service: the cluster IPs and node ports the stored Services use, to allocate
    /// among the others (`None`: allocate nothing).
    pub(crate) services: Option<super::service::Used>,
    /// The create is a dry run: a Service's allocations are kube-apiserver's placeholders.
    pub(crate) dry_run: bool,
}

/// What kind of create an object is prepared for.
#[derive(Debug)]
pub(crate) enum Created {
    /// A create through the API: what admission adds, and the status the kind starts with.
    Fresh(Admission),
    /// Seeding an object a cluster already holds: its status kept, nothing admitted.
    Seeded,
}

/// [`prepare_create_by`] for a `stage` of create.
pub(crate) fn prepare_create_as(
    res: &ResourceInfo,
    path_ns: &str,
    mut obj: Map<String, Value>,
    rev: u64,
    writer: Option<&Writer>,
    stage: Created,
) -> Result<(String, StoredObject), ApiError> {
    check_type_meta(res, &obj)?;
    normalize::normalize_body(res, &mut obj);
    fields::drop_unknown(res, &mut obj);
    defaults::apply_defaults(res, &mut obj);
    let admission = match stage {
        Created::Fresh(a) => Some(a),
        Created::Seeded => None,
    };
    let fresh = admission.is_some();
    // kube-apiserver's field manager runs before mutating admission and the registry's
    // allocations: what admission adds to a Pod (its service account, priority, tolerations,
    // token volume) and what a Service is allocated (cluster IPs, families, node ports) is
    // owned by nobody
    let is_pod = super::pod_defaults::is_pod(res);
    let is_service = super::service::is_service(res);
    let mut owned_view = (fresh && (is_pod || is_service) && writer.is_some()).then(|| obj.clone());
    if let Some(admission) = admission {
        super::pod_defaults::admit_created(res, &mut obj);
        if is_pod {
            super::service_account::admit(&mut obj, &admission.service_account);
        }
        if let Some(used) = &admission.services {
            let name = obj
                .get("metadata")
                .and_then(Value::as_object)
                .map(|m| str_field(m, "name").to_string())
                .unwrap_or_default();
            super::service::allocate(res, &mut obj, &name, used, admission.dry_run)?;
        }
    }
    let fresh_status = fresh
        .then(|| super::pod_defaults::status_on_create(res, &obj))
        .flatten();
    if fresh_status.is_some() {
        obj.remove("status");
        if let Some(view) = owned_view.as_mut() {
            view.remove("status");
        }
    }
    if res.crd_name.is_some() && res.status_subresource {
        // A custom resource with a status subresource is created without its status, before
        // it is validated (apiextensions-apiserver's `PrepareForCreate`): clients that always
        // send one (Go structs' `"status":{"parents":null}`) are not refused for it.
        obj.remove("status");
    }
    if let Some(schema) = &res.schema {
        crate::crd::apply_schema(res, schema, &mut obj, None)?;
    }
    let meta = metadata_mut(res, &mut obj)?;
    let mut name = str_field(meta, "name").to_string();
    if name.is_empty() {
        let generate = str_field(meta, "generateName").to_string();
        if !generate.is_empty() {
            name = format!("{generate}{}", random_suffix());
            meta.insert("name".into(), Value::String(name.clone()));
        }
    }
    let ns = check_namespace(res, meta, path_ns)?;
    let uid = new_uid();
    meta.insert("uid".into(), Value::String(uid.clone()));
    meta.insert("resourceVersion".into(), Value::String(rev.to_string()));
    meta.insert("creationTimestamp".into(), Value::String(now_rfc3339()));
    meta.remove("deletionTimestamp");
    meta.remove("deletionGracePeriodSeconds");
    if res.tracks_generation {
        meta.insert("generation".into(), Value::from(1));
    } else {
        meta.remove("generation");
    }
    set_type_meta(res, &mut obj);
    let is_namespace = namespace::is_namespace(res);
    if is_namespace {
        // `SetDefaults_Namespace`'s name label is a default: the writer owns it. The
        // `kubernetes` finalizer and the `Active` phase come from `PrepareForCreate`, after
        // kube-apiserver's field manager has run: nobody owns them (e2e/diff
        // "namespace-lifecycle").
        namespace::set_name_label(&mut obj, &name);
        if let Some(w) = writer {
            managed_fields::update_managed_fields(res, None, &mut obj, w);
        }
        namespace::prepare_create(&mut obj, &name);
    }
    if crate::crd::is_crd(res) {
        obj.remove("status");
        crate::crd::prepare(&mut obj)?;
    }
    // After the server's metadata, as kube-apiserver validates after PrepareForCreate (the
    // namespace mismatch, a 400, comes first).
    validate::validate_object(res, &obj)?;
    if !is_namespace && let Some(w) = writer {
        match owned_view {
            Some(mut view) => {
                managed_fields::update_managed_fields(res, None, &mut view, w);
                let managed = view
                    .get_mut("metadata")
                    .and_then(Value::as_object_mut)
                    .and_then(|m| m.remove("managedFields"));
                if let (Some(managed), Some(Value::Object(meta))) =
                    (managed, obj.get_mut("metadata"))
                {
                    meta.insert("managedFields".into(), managed);
                }
            }
            None => managed_fields::update_managed_fields(res, None, &mut obj, w),
        }
    }
    // Converted to the storage version after the field manager, which records the fields
    // written in the version written through.
    super::prune_for_storage(res, &mut obj);
    // The status a built-in kind starts with (`PrepareForCreate`), after the field manager:
    // nobody owns it.
    if let Some(status) = fresh_status {
        obj.insert("status".into(), status);
    }
    if fresh {
        super::pod_defaults::after_uid(res, &mut obj, &name, &uid);
    }
    let key = storage_key(res, &ns, &name);
    Ok((key, finish(res, obj, &ns, &name, &uid, rev)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::test_util::{body, pods};
    use serde_json::json;

    #[test]
    fn create_sets_server_metadata() {
        let (key, o) = prepare_create(
            &pods(),
            "ns",
            body(json!({"metadata": {"name": "p"}, "spec": {}})),
            7,
        )
        .unwrap();
        assert_eq!(key, "ns/p");
        let v = o.to_value();
        assert_eq!(v["metadata"]["resourceVersion"], "7");
        assert_eq!(v["metadata"]["namespace"], "ns");
        assert_eq!(v["metadata"]["generation"], 1);
        assert_eq!(v["kind"], "Pod");
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["metadata"]["uid"].as_str().unwrap().len(), 36);
        assert!(
            v["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap()
                .ends_with('Z')
        );
    }

    #[test]
    fn generate_name_appends_five_characters() {
        let (_, o) = prepare_create(
            &pods(),
            "ns",
            body(json!({"metadata": {"generateName": "web-"}})),
            2,
        )
        .unwrap();
        assert!(o.name.starts_with("web-"));
        assert_eq!(o.name.len(), 9);
    }

    #[test]
    fn create_errors_have_real_shapes() {
        let e = prepare_create(&pods(), "ns", body(json!({"metadata": {}})), 2).unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "Pod \"\" is invalid: metadata.name: Required value: name or generateName is required"
        );
        let e = prepare_create(
            &pods(),
            "ns",
            body(json!({"metadata": {"name": "Bad_Name"}})),
            2,
        )
        .unwrap_err();
        assert_eq!(e.reason, "Invalid");
        assert!(e.message.starts_with("Pod \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"));
        let e = prepare_create(
            &pods(),
            "ns",
            body(json!({"metadata": {"name": "p", "namespace": "other"}})),
            2,
        )
        .unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (400, "BadRequest"));
        let e = prepare_create(
            &pods(),
            "ns",
            body(json!({"kind": "ConfigMap", "metadata": {"name": "p"}})),
            2,
        )
        .unwrap_err();
        assert_eq!(e.code, 400);
        let e = prepare_create(
            &pods(),
            "ns",
            body(json!({"metadata": {"name": "p", "labels": {"a": 1}}})),
            2,
        )
        .unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message
                .starts_with("Pod in version \"v1\" cannot be handled as a Pod:")
        );
        let e = decode_body(&pods(), b"{not json").unwrap_err();
        assert_eq!(e.code, 400);
        // kube-apiserver v1.35 (e2e/diff "bad-request / create-not-json").
        let e = decode_body(&pods(), b"\"this is not an object\"").unwrap_err();
        assert_eq!(
            e.message,
            "the object provided is unrecognized (must be of type Pod): couldn't get version/kind; json parse error: json: cannot unmarshal string into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" } (2274686973206973206e6f7420616e206f626a65637422)"
        );
    }
}
