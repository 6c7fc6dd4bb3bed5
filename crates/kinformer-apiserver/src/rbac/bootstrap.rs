//! The roles and bindings kube-apiserver 1.36.3 creates at start (its RBAC bootstrap policy,
//! every object labelled `kubernetes.io/bootstrapping: rbac-defaults`): 69 ClusterRoles, 50
//! ClusterRoleBindings, 7 Roles and 7 RoleBindings in `kube-system` and `kube-public`, read
//! from a real kube-apiserver v1.36.3 (`bootstrap-v1.36.json`: the objects as it returned
//! them, without uid, resourceVersion, creationTimestamp and managedFields). The aggregated
//! roles (`admin`, `edit`, `view`) are stored without rules, as kube-apiserver stores them;
//! the aggregation controller ([`crate::controllers::aggregation`]) fills them, as
//! kube-controller-manager's does.

use serde_json::Value;

use crate::api::Api;
use crate::objects::Writer;
use crate::status::ApiError;

/// The objects, as JSON.
const OBJECTS: &str = include_str!("bootstrap-v1.36.json");

/// Creates the bootstrap roles and bindings, as kube-apiserver's `rbac/bootstrap-roles`
/// post-start hook does (by the `kube-apiserver` manager).
pub(crate) fn create(api: &Api) -> Result<(), ApiError> {
    let objects: Vec<Value> = serde_json::from_str(OBJECTS)
        .map_err(|e| ApiError::internal(&format!("bootstrap RBAC policy: {e}")))?;
    let writer = Writer {
        manager: "kube-apiserver".into(),
        subresource: None,
    };
    for o in objects {
        let Value::Object(body) = o else { continue };
        let plural = match body.get("kind").and_then(Value::as_str) {
            Some("ClusterRole") => "clusterroles",
            Some("ClusterRoleBinding") => "clusterrolebindings",
            Some("Role") => "roles",
            Some("RoleBinding") => "rolebindings",
            _ => continue,
        };
        let res = api
            .registry
            .find("rbac.authorization.k8s.io", "v1", plural)
            .ok_or_else(ApiError::not_found_path)?;
        let ns = body
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .map(str::to_string);
        api.create_by(&res, ns.as_deref(), body, Some(&writer), false)?;
    }
    Ok(())
}
