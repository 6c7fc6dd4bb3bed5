//! Admission: the NamespaceLifecycle plugin of kube-apiserver, ValidatingAdmissionPolicy
//! ([`policy`]), MutatingAdmissionPolicy ([`policy::mutating`]) and the admission webhooks
//! ([`webhook`]).
//!
//! NamespaceLifecycle
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

pub(crate) mod policy;
pub(crate) mod webhook;

use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::StoredObject;

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

/// Whether a create of `res` is subject to the namespace checks.
pub(crate) fn checks_namespace(res: &ResourceInfo, namespace: &str) -> bool {
    res.namespaced() && !namespace.is_empty() && res.plural != "localsubjectaccessreviews"
}

/// Admits the creation of `name` of `res` in `namespace`, given the namespaces resource and
/// the namespace as stored (`None`: absent); `enforce` refuses a missing namespace.
pub(crate) fn admit_create(
    res: &ResourceInfo,
    namespace: &str,
    name: &str,
    ns_res: &ResourceInfo,
    ns: Option<&StoredObject>,
    enforce: bool,
) -> Result<(), ApiError> {
    if !checks_namespace(res, namespace) {
        return Ok(());
    }
    let Some(ns) = ns else {
        if enforce {
            return Err(ApiError::not_found(ns_res, namespace));
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
