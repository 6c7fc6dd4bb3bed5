//! PATCH (merge, JSON and strategic merge patches; an apply goes to [`Api::apply_by`]).

use std::sync::Arc;

use serde_json::Value;

use super::{Api, Stage, ns_of};
use crate::objects::fields::{FieldValidation, check_patched};
use crate::objects::{UpdateMode, Writer, prepare_update_by, storage_key};
use crate::patch::{PatchType, apply_patch};
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::StoredObject;

impl Api {
    /// Patches an object. Merge, JSON and strategic-merge patches need the object to exist
    /// (404); an apply patch is [`Api::apply_by`] without `force`. `managedFields` are
    /// maintained when `writer` (the field manager) is set.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn patch_by<'g>(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        patch_type: PatchType,
        patch: &[u8],
        mode: UpdateMode,
        writer: Option<&Writer>,
        stage: impl Into<Stage<'g>>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let stage = stage.into();
        if patch_type == PatchType::Apply {
            let fallback = Writer {
                manager: String::new(),
                subresource: None,
            };
            let w = writer.unwrap_or(&fallback);
            return self.apply_by(res, namespace, name, patch, mode, w, false, stage);
        }
        self.patch_checked(
            res,
            namespace,
            name,
            patch_type,
            patch,
            mode,
            writer,
            stage,
            FieldValidation::Ignore,
        )
    }

    /// [`Api::patch_by`] (not an apply) under a request's `fieldValidation`: the fields the
    /// patched object had that its kind does not declare (dropped) are recorded as the
    /// request's warnings ([`crate::warnings`]); a `Strict` request with any is 422.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn patch_checked<'g>(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        patch_type: PatchType,
        patch: &[u8],
        mode: UpdateMode,
        writer: Option<&Writer>,
        stage: impl Into<Stage<'g>>,
        fields: FieldValidation,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let ns = ns_of(res, namespace);
        let key = storage_key(res, ns, name);
        let write = super::Write::new(ns, name, Some(mode), stage.into());
        self.write(res, &key, write, |current, rev| {
            let Some(current) = current else {
                return Err(ApiError::not_found(res, name));
            };
            let mut value = current.to_value();
            crate::objects::in_served_version(res, &mut value);
            apply_patch(res, &mut value, patch_type, patch)?;
            let strategic = (patch_type == PatchType::StrategicMerge).then_some(patch);
            check_patched(res, fields, &value, strategic)?
                .into_iter()
                .for_each(crate::warnings::record);
            let Value::Object(body) = value else {
                return Err(ApiError::bad_request(
                    "the patched object is not a JSON object",
                ));
            };
            Self::outcome(
                prepare_update_by(res, current, body, rev, mode, writer)?,
                current,
            )
        })
    }
}
