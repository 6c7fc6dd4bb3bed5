//! The verbs that write (create, update, patch and apply, delete, deletecollection), each
//! seen by the admission webhooks when any is configured for the resource
//! (`crate::http::webhooks`).

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use serde_json::Value;

use super::super::patch_options::check_patch_options;
use super::super::{conversion, webhooks};
use super::{
    Classified, check_fields, patch_type, query_dry_run, read_body, read_object, response,
};
use crate::api::{Gate, Stage};
use crate::context::Context;
use crate::faults::Verb;
use crate::objects::fields::FieldValidation;
use crate::objects::{DeleteOptions, UpdateMode, Writer};
use crate::options::ListOptions;
use crate::patch::PatchType;
use crate::status::{ApiError, success_status};

/// Serves a write verb of `c` by `writer` through `mode` (`pb`: answer in protobuf).
pub(super) async fn serve_write(
    ctx: &Arc<Context>,
    req: Request,
    c: &Classified,
    query: &std::collections::HashMap<String, String>,
    writer: Writer,
    mode: UpdateMode,
    pb: bool,
) -> Result<(u16, Response), ApiError> {
    let api = &ctx.api;
    let res = &c.resource;
    let ns = c.namespace.as_deref();
    let name = c.name.as_deref().unwrap_or("");
    // what the admission webhooks are told of a write (see `webhooks`)
    let field_manager = query.get("fieldManager").map(String::as_str);
    let requester = req.extensions().get::<crate::token::User>().cloned();
    let call = |dry_run: bool, delete: bool| webhooks::Call {
        res,
        subresource: c.subresource.as_deref(),
        namespace: ns.unwrap_or(""),
        name,
        mode,
        dry_run,
        delete,
        user: webhooks::user_info(requester.as_ref()),
        field_manager,
        delete_options: None,
        scale: None,
    };
    match c.verb {
        Verb::Create => {
            let dry = query_dry_run(query, "CreateOptions")?;
            let fields = FieldValidation::from_query(query, "CreateOptions")?;
            let (obj, problems) = read_object(ctx, req, res).await?;
            fields
                .judge(res, problems)?
                .into_iter()
                .for_each(crate::warnings::record);
            if res.create_only {
                let sa = |t: &str, auds: &[String]| {
                    ctx.tokens
                        .authenticate(&ctx.api, t, auds, crate::token::now())
                };
                let rbac = ctx.config.rbac.then_some((&*ctx.api, &ctx.rbac_cache));
                let answer = crate::review::answer(
                    res,
                    obj,
                    ctx.token.as_deref(),
                    requester.as_ref(),
                    &sa,
                    rbac,
                    Some(&writer),
                )?;
                if pb && let Ok(b) = kinformer_proto::object_from_json(&answer) {
                    return Ok((201, response::protobuf(201, b)));
                }
                return Ok((201, response::json_value(201, &answer)));
            }
            let o = match webhooks::hooks_for(ctx, res, requester.as_ref()) {
                None => api.create_by(res, ns, obj, Some(&writer), dry)?,
                Some(hooks) => {
                    let named =
                        crate::admission::policy::name_of(&Value::Object(obj.clone())).to_string();
                    let call = webhooks::Call {
                        name: &named,
                        ..call(dry, false)
                    };
                    let plan = |g: &Gate| {
                        api.create_by(res, ns, obj.clone(), Some(&writer), Stage::Plan(g))
                            .map(drop)
                    };
                    webhooks::write(ctx, &call, &hooks, plan).await?.0
                }
            };
            let o = conversion::served_one(ctx, res, o).await?;
            Ok((201, response::object_as(201, res, &o, pb)))
        }
        Verb::Update => {
            let dry = query_dry_run(query, "UpdateOptions")?;
            let fields = FieldValidation::from_query(query, "UpdateOptions")?;
            let (obj, problems) = read_object(ctx, req, res).await?;
            fields
                .judge(res, problems)?
                .into_iter()
                .for_each(crate::warnings::record);
            let o = match webhooks::hooks_for(ctx, res, requester.as_ref()) {
                None => api.update_by(res, ns, name, obj, mode, Some(&writer), dry)?,
                Some(hooks) => {
                    let call = call(dry, false);
                    let plan = |g: &Gate| {
                        api.update_by(
                            res,
                            ns,
                            name,
                            obj.clone(),
                            mode,
                            Some(&writer),
                            Stage::Plan(g),
                        )
                        .map(drop)
                    };
                    webhooks::write(ctx, &call, &hooks, plan).await?.0
                }
            };
            let o = conversion::served_one(ctx, res, o).await?;
            Ok((200, response::object_as(200, res, &o, pb)))
        }
        Verb::Patch => {
            let pt = patch_type(&req)?;
            let force = check_patch_options(pt, query)?;
            let dry = query_dry_run(query, "PatchOptions")?;
            let fields = FieldValidation::from_query(query, "PatchOptions")?;
            let body = read_body(ctx, req).await?;
            let existed = api.get(res, ns, name).is_ok();
            // The applier is `fieldManager` itself (required), never the User-Agent.
            let applier = Writer {
                manager: query.get("fieldManager").cloned().unwrap_or_default(),
                subresource: c.subresource.clone(),
            };
            let patch = |stage: Stage<'_>| {
                if pt == PatchType::Apply {
                    api.apply_by(res, ns, name, &body, mode, &applier, force, stage)
                } else {
                    let w = Some(&writer);
                    api.patch_checked(res, ns, name, pt, &body, mode, w, stage, fields)
                }
            };
            let o = match webhooks::hooks_for(ctx, res, requester.as_ref()) {
                None => patch(Stage::from(dry))?,
                Some(hooks) => {
                    let call = call(dry, false);
                    let plan = |g: &Gate| patch(Stage::Plan(g)).map(drop);
                    webhooks::write(ctx, &call, &hooks, plan).await?.0
                }
            };
            let code = if existed { 200 } else { 201 };
            let o = conversion::served_one(ctx, res, o).await?;
            Ok((code, response::object_as(code, res, &o, pb)))
        }
        Verb::Delete => {
            let body = read_body(ctx, req).await?;
            let opts = DeleteOptions::parse(&body, query)?;
            let d = match webhooks::hooks_for(ctx, res, requester.as_ref()) {
                None => api.delete(res, ns, name, &opts)?,
                Some(hooks) => {
                    let call = webhooks::Call {
                        delete_options: serde_json::from_slice(&body).ok(),
                        ..call(opts.dry_run, true)
                    };
                    let plan =
                        |g: &Gate| api.delete_staged(res, ns, name, &opts, Some(g)).map(drop);
                    let (object, removed) = webhooks::write(ctx, &call, &hooks, plan).await?;
                    crate::api::Deleted { object, removed }
                }
            };
            if d.removed && !res.return_deleted_object {
                let s = success_status(res, name, &d.object.uid);
                Ok((200, response::json_value(200, &s)))
            } else {
                let o = conversion::served_one(ctx, res, d.object).await?;
                Ok((200, response::object_as(200, res, &o, pb)))
            }
        }
        Verb::DeleteCollection => {
            let mut opts = ListOptions::from_query(query)?;
            check_fields(res, &opts)?;
            opts.resolve_shard(ctx.config.sharded_list_and_watch)?;
            let body = read_body(ctx, req).await?;
            let delete = DeleteOptions::parse(&body, query)?;
            let (rv, listed) = match webhooks::hooks_for(ctx, res, requester.as_ref()) {
                None => api.delete_collection(res, ns, &opts, &delete)?,
                Some(hooks) => {
                    // each delete is seen by the webhooks, as kube-apiserver's are
                    let (rv, listed) = api.collection(res, ns, &opts)?;
                    for o in &listed {
                        let ns = (!o.namespace.is_empty()).then_some(o.namespace.as_str());
                        let call = webhooks::Call {
                            namespace: ns.unwrap_or(""),
                            name: &o.name,
                            delete_options: serde_json::from_slice(&body).ok(),
                            ..call(delete.dry_run, true)
                        };
                        let plan = |g: &Gate| {
                            api.delete_staged(res, ns, &o.name, &delete, Some(g))
                                .map(drop)
                        };
                        match webhooks::write(ctx, &call, &hooks, plan).await {
                            Ok(_) => {}
                            Err(e) if e.code == 404 => {}
                            Err(e) => return Err(e),
                        }
                    }
                    (rv, listed)
                }
            };
            let shard = opts.shard.as_ref().map(|s| s.canonical());
            let listed = conversion::served(ctx, res, listed).await?;
            Ok((200, response::deleted_list(res, rv, shard, listed, pb)))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}
