//! PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge
//! patch. Apply patches are server-side apply (`crate::objects::apply`); [`apply_patch`]
//! merges them only for `/scale`.
//!
//! Deliberate difference from the real server: strategic merge patch infers list merge keys
//! instead of reading them from type schemas (see [`strategic`]).

pub(crate) mod strategic;

use serde_json::Value;

use crate::resource::ResourceInfo;
use crate::status::ApiError;

/// The patch format, from the request's `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
    /// `application/strategic-merge-patch+json` (see [`strategic`]).
    StrategicMerge,
    /// `application/apply-patch+yaml` with a JSON body (server-side apply).
    Apply,
}

impl PatchType {
    /// Maps a content type to a patch type; `None` for unsupported types (415).
    pub(crate) fn from_content_type(ct: &str) -> Option<Self> {
        let base = ct.split(';').next().unwrap_or("").trim();
        match base {
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/json-patch+json" => Some(PatchType::Json),
            "application/strategic-merge-patch+json" => Some(PatchType::StrategicMerge),
            "application/apply-patch+yaml" | "application/apply-patch+json" => {
                Some(PatchType::Apply)
            }
            _ => None,
        }
    }
}

/// Applies `patch` to `doc`. A malformed patch is 400 BadRequest; a JSON patch whose operation
/// fails (missing path, failed `test`) is 422 Invalid, as the real server answers.
pub(crate) fn apply_patch(
    res: &ResourceInfo,
    doc: &mut Value,
    patch_type: PatchType,
    patch: &[u8],
) -> Result<(), ApiError> {
    match patch_type {
        PatchType::StrategicMerge => {
            let p: Value = serde_json::from_slice(patch)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            if !p.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding patch: a strategic merge patch must be a JSON object",
                ));
            }
            strategic::merge(doc, &p);
            Ok(())
        }
        PatchType::Merge | PatchType::Apply => {
            let p: Value = serde_json::from_slice(patch)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            if !p.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding patch: a merge patch must be a JSON object",
                ));
            }
            json_patch::merge(doc, &p);
            Ok(())
        }
        PatchType::Json => {
            let ops: json_patch::Patch = serde_json::from_slice(patch)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            json_patch::patch(doc, &ops).map_err(|e| {
                ApiError::new(
                    422,
                    "Invalid",
                    format!("{} \"\" is invalid: the server rejected our request due to an error in our request: {e}", res.kind),
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::builtin_resources;
    use serde_json::json;

    #[test]
    fn merge_and_json_patches() {
        let res = builtin_resources().remove(0);
        let mut doc = json!({"a": 1, "b": {"c": 2, "d": 3}, "l": [1, 2]});
        apply_patch(
            &res,
            &mut doc,
            PatchType::Merge,
            br#"{"b": {"c": null, "e": 4}, "l": [3]}"#,
        )
        .unwrap();
        assert_eq!(doc, json!({"a": 1, "b": {"d": 3, "e": 4}, "l": [3]}));
        apply_patch(&res, &mut doc, PatchType::Json, br#"[{"op": "replace", "path": "/a", "value": 9}, {"op": "add", "path": "/l/-", "value": 4}]"#).unwrap();
        assert_eq!(doc["a"], 9);
        assert_eq!(doc["l"], json!([3, 4]));
        let e = apply_patch(
            &res,
            &mut doc,
            PatchType::Json,
            br#"[{"op": "test", "path": "/a", "value": 1}]"#,
        )
        .unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            apply_patch(&res, &mut doc, PatchType::Merge, b"nope")
                .unwrap_err()
                .code,
            400
        );
        assert_eq!(
            apply_patch(&res, &mut doc, PatchType::Json, b"{}")
                .unwrap_err()
                .code,
            400
        );
        assert_eq!(
            PatchType::from_content_type("application/merge-patch+json; charset=utf-8"),
            Some(PatchType::Merge)
        );
        assert_eq!(PatchType::from_content_type("text/plain"), None);
    }
}
