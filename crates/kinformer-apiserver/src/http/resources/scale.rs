//! The `/scale` subresource: an object's replicas as an `autoscaling/v1` `Scale`.

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use serde_json::Value;

use super::{Classified, check_body_media_type, patch_type, query_dry_run, read_body, response};
use crate::context::Context;
use crate::faults::Verb;
use crate::objects::{UpdateMode, Writer};
use crate::status::ApiError;

/// `GET`, `PUT` and `PATCH` of `/scale`: the object's replicas as an `autoscaling/v1` `Scale`.
pub(super) async fn serve_scale(
    ctx: &Arc<Context>,
    req: Request,
    c: &Classified,
    scale: &crate::resource::ScaleInfo,
    writer: &Writer,
    query: &std::collections::HashMap<String, String>,
) -> Result<(u16, Response), ApiError> {
    let (api, res) = (&ctx.api, &c.resource);
    let ns = c.namespace.as_deref();
    let name = c.name.as_deref().unwrap_or("");
    let current = super::super::conversion::served_one(ctx, res, api.get(res, ns, name)?)
        .await?
        .to_value();
    let requester = req.extensions().get::<crate::token::User>().cloned();
    let written = match c.verb {
        Verb::Get => {
            let v = crate::scale::to_scale(scale, &current);
            return Ok((200, response::json_value(200, &v)));
        }
        Verb::Update => {
            check_body_media_type(&req)?;
            let body = read_body(ctx, req).await?;
            serde_json::from_slice::<Value>(&body)
                .map_err(|e| ApiError::bad_request(format!("error decoding Scale: {e}")))?
        }
        Verb::Patch => {
            let pt = patch_type(&req)?;
            let body = read_body(ctx, req).await?;
            let mut v = crate::scale::to_scale(scale, &current);
            crate::patch::apply_patch(res, &mut v, pt, &body)?;
            v
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    let obj = crate::scale::apply_scale(res, scale, current, &written)?;
    let options_kind = if c.verb == Verb::Patch {
        "PatchOptions"
    } else {
        "UpdateOptions"
    };
    let dry = query_dry_run(query, options_kind)?;
    let o = match super::super::webhooks::hooks_for(ctx, res, requester.as_ref()) {
        None => api.update_by(res, ns, name, obj, UpdateMode::Scale, Some(writer), dry)?,
        Some(hooks) => {
            // the webhooks see the Scale (see `crate::http::webhooks`)
            let call = super::super::webhooks::Call {
                res,
                subresource: Some("scale"),
                namespace: ns.unwrap_or(""),
                name,
                mode: UpdateMode::Scale,
                dry_run: dry,
                delete: false,
                user: super::super::webhooks::user_info(requester.as_ref()),
                field_manager: query.get("fieldManager").map(String::as_str),
                delete_options: None,
                scale: Some(scale),
            };
            let plan = |g: &crate::api::Gate| {
                let stage = crate::api::Stage::Plan(g);
                api.update_by(
                    res,
                    ns,
                    name,
                    obj.clone(),
                    UpdateMode::Scale,
                    Some(writer),
                    stage,
                )
                .map(drop)
            };
            super::super::webhooks::write(ctx, &call, &hooks, plan)
                .await?
                .0
        }
    };
    let o = super::super::conversion::served_one(ctx, res, o).await?;
    let v = crate::scale::to_scale(scale, &o.to_value());
    Ok((200, response::json_value(200, &v)))
}
