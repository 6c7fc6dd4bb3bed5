//! Admission: the NamespaceLifecycle plugin of kube-apiserver
//! (`k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle`).
//!
//! - The immortal namespaces (`default`, `kube-system`, `kube-public`) cannot be deleted: 403
//!   Forbidden `namespaces "default" is forbidden: this namespace may not be deleted`.
//! - Nothing new may be created in a namespace being terminated: 403 Forbidden `configmaps "c"
//!   is forbidden: unable to create new content in namespace x because it is being
//!   terminated`, with a `NamespaceTerminating` cause on `metadata.namespace`.
//! - Creating in a namespace that does not exist is 404 `namespaces "x" not found` — only when
//!   [`ServerConfig::enforce_namespaces`](crate::ServerConfig::enforce_namespaces) is on (the
//!   standalone server's default; in process it is off so tests may use any namespace).

use serde_json::{Value, json};

use crate::api::Api;
use crate::resource::ResourceInfo;
use crate::status::ApiError;

/// Namespaces that cannot be deleted.
pub(crate) const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// Refuses the delete of an immortal namespace.
pub(crate) fn admit_delete(res: &ResourceInfo, name: &str) -> Result<(), ApiError> {
    if crate::objects::namespace::is_namespace(res) && IMMORTAL_NAMESPACES.contains(&name) {
        return Err(ApiError::forbidden(
            res,
            name,
            "this namespace may not be deleted",
        ));
    }
    Ok(())
}

/// Admits the creation of `name` (possibly empty: generated later) of `res` in `namespace`.
pub(crate) fn admit_create(
    api: &Api,
    res: &ResourceInfo,
    namespace: &str,
    name: &str,
) -> Result<(), ApiError> {
    if !res.namespaced() || namespace.is_empty() || res.plural == "localsubjectaccessreviews" {
        return Ok(());
    }
    let Some(ns_res) = api.registry.find("", "v1", "namespaces") else {
        return Ok(());
    };
    let Some(ns) = api.store.get(&ns_res.group_resource(), namespace) else {
        if api.enforce_namespaces {
            return Err(ApiError::not_found(&ns_res, namespace));
        }
        return Ok(());
    };
    let terminating = ns
        .to_value()
        .get("status")
        .and_then(|s| s.get("phase"))
        .and_then(Value::as_str)
        == Some("Terminating");
    if !terminating {
        return Ok(());
    }
    let mut e = ApiError::forbidden(
        res,
        name,
        &format!(
            "unable to create new content in namespace {namespace} because it is being terminated"
        ),
    );
    if let Some(Value::Object(d)) = e.details.as_mut() {
        d.insert(
            "causes".into(),
            json!([{
                "reason": "NamespaceTerminating",
                "message": format!("namespace {namespace} is being terminated"),
                "field": "metadata.namespace"
            }]),
        );
    }
    Err(e)
}
