//! The options of a PATCH that kube-apiserver checks before the body (`PatchOptions`).

use crate::patch::PatchType;
use crate::status::ApiError;

/// kube-apiserver's `ValidatePatchOptions` (422 `PatchOptions.meta.k8s.io "" is invalid`): an
/// apply needs a `fieldManager`, `force` is for applies only, a manager is at most 128 bytes
/// of printable characters. Returns `force`.
pub(super) fn check_patch_options(
    pt: PatchType,
    query: &std::collections::HashMap<String, String>,
) -> Result<bool, ApiError> {
    let manager = query.get("fieldManager").map(|s| s.as_str()).unwrap_or("");
    let force = query.get("force");
    let mut causes = Vec::new();
    let cause = |f: &str, r: &str, m: String| (f.to_string(), r.to_string(), m);
    if pt == PatchType::Apply {
        if manager.is_empty() {
            causes.push(cause(
                "fieldManager",
                "FieldValueRequired",
                "Required value: is required for apply patch".into(),
            ));
        }
    } else if force.is_some() {
        causes.push(cause(
            "force",
            "FieldValueForbidden",
            "Forbidden: may not be specified for non-apply patch".into(),
        ));
    }
    if manager.len() > 128 {
        causes.push(cause(
            "fieldManager",
            "FieldValueTooLong",
            "Too long: may not be more than 128 bytes".into(),
        ));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            &causes,
        ));
    }
    Ok(matches!(
        force.map(|s| s.as_str()),
        Some("true" | "True" | "TRUE" | "1" | "t" | "T")
    ))
}
