//! Resource requests: classify (verb), apply faults, serve, record.

mod scale;
mod writes;

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use http::{Method, header};
use serde_json::{Value, json};

use super::partial::{self, metadata_request};
use super::path::{Target, parse_path};
use super::table::{IncludeObject, table, wants_table};
use super::watch::{WatchRequest, run_watch};
use super::{conversion, discovery, openapi, response};
use crate::context::{Context, RequestRecord};
use crate::faults::{Verb, WatchListFault};
use crate::metrics::{LongRunningLabels, RequestLabels};
use crate::objects::managed_fields::manager_from_user_agent;
use crate::objects::{UpdateMode, Writer, decode_body};
use crate::options::{ListOptions, parse_query};
use crate::patch::PatchType;
use crate::resource::ResourceInfo;
use crate::selector::SelectorError;
use crate::status::ApiError;
use crate::store::{COMMON_FIELDS, extra_fields};

/// The request log keeps at most this many entries.
const MAX_RECORDED_REQUESTS: usize = 100_000;

struct Classified {
    verb: Verb,
    resource: Arc<ResourceInfo>,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
}

fn classify(method: &Method, target: Target, watch: bool) -> Result<Classified, ApiError> {
    let Target::Resource {
        resource,
        namespace,
        name,
        subresource,
    } = target
    else {
        return Err(ApiError::not_found_path());
    };
    // `serviceaccounts/token`: create-only (a TokenRequest).
    let token_request = subresource.as_deref() == Some("token")
        && resource.group.is_empty()
        && resource.plural == "serviceaccounts";
    if let Some(sub) = &subresource
        && !(sub == "status" && resource.status_subresource
            || sub == "scale" && resource.scale.is_some()
            || sub == "finalize" && crate::objects::namespace::is_namespace(&resource)
            || token_request)
    {
        // a custom resource's handler answers an unknown subresource as its object not found,
        // whether it exists or not, for any verb
        return Err(match &name {
            Some(n) if resource.crd_name.is_some() => ApiError::not_found(&resource, n),
            _ => ApiError::not_found_path(),
        });
    }
    let collection = name.is_none();
    let verb = match (method.as_str(), collection) {
        ("POST", false) if token_request => Verb::Create,
        ("GET", true) if watch => Verb::Watch,
        ("GET", true) => Verb::List,
        ("GET", false) => Verb::Get,
        ("POST", true) => Verb::Create,
        ("PUT", false) => Verb::Update,
        ("PATCH", false) => Verb::Patch,
        ("DELETE", false) => Verb::Delete,
        ("DELETE", true) => Verb::DeleteCollection,
        _ => return Err(ApiError::method_not_allowed()),
    };
    if subresource.is_some()
        && !token_request
        && !matches!(verb, Verb::Get | Verb::Update | Verb::Patch)
        || token_request && verb != Verb::Create
    {
        return Err(ApiError::method_not_allowed());
    }
    // A namespace's `/finalize` only takes a PUT (kube-apiserver serves `update` alone).
    if subresource.as_deref() == Some("finalize") && verb != Verb::Update {
        return Err(ApiError::method_not_allowed());
    }
    if resource.create_only && verb != Verb::Create {
        return Err(ApiError::method_not_allowed());
    }
    // Creating needs the namespace in the path for namespaced resources.
    if verb == Verb::Create && resource.namespaced() && namespace.is_none() {
        return Err(ApiError::method_not_allowed());
    }
    Ok(Classified {
        verb,
        resource,
        namespace,
        name,
        subresource,
    })
}

fn check_fields(res: &ResourceInfo, opts: &ListOptions) -> Result<(), ApiError> {
    let mut supported: Vec<&str> = COMMON_FIELDS.to_vec();
    supported.extend_from_slice(extra_fields(&res.group, &res.plural));
    opts.field_selector
        .check_supported(&supported)
        .map_err(|e| match e {
            // Kinds with their own field label conversion (pods, events, ...) answer
            // "field label not supported"; the others use apimachinery's default conversion
            // (e2e/diff "bad-request / list-bad-field-selector").
            SelectorError::UnsupportedField(f)
                if extra_fields(&res.group, &res.plural).is_empty() =>
            {
                ApiError::bad_request(format!(
                    "{f:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                ))
            }
            SelectorError::UnsupportedField(f) => {
                ApiError::bad_request(format!("field label not supported: {f}"))
            }
            other => ApiError::bad_request(other.to_string()),
        })
}

async fn read_body(ctx: &Context, req: Request) -> Result<bytes::Bytes, ApiError> {
    let limit = ctx.config.max_body_bytes;
    axum::body::to_bytes(req.into_body(), limit)
        .await
        .map_err(|_| ApiError::too_large_body(limit))
}

/// Create and update bodies that are not protobuf of a built-in kind must be JSON (the default
/// when no Content-Type is sent): any other media type (protobuf for a custom resource, YAML)
/// is 415 UnsupportedMediaType with kube-apiserver's message, not a decoding error.
fn check_body_media_type(req: &Request) -> Result<(), ApiError> {
    let ct = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = ct.split(';').next().unwrap_or("").trim();
    if media.is_empty() || media.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(ApiError::unsupported_body_media_type(&["application/json"]))
    }
}

/// The patch type a PATCH's Content-Type names; 415 for any other media type.
fn patch_type(req: &Request) -> Result<PatchType, ApiError> {
    let ct = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    PatchType::from_content_type(ct).ok_or_else(|| ApiError::unsupported_media_type(ct))
}

/// A create or update body: JSON (or no Content-Type), or protobuf for a kind that has a
/// protobuf form (client-go's typed clients and kubectl's generators send it).
async fn read_object(
    ctx: &Context,
    req: Request,
    res: &ResourceInfo,
) -> Result<(serde_json::Map<String, Value>, Vec<String>), ApiError> {
    let protobuf = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(crate::proto::is_protobuf)
        && crate::proto::decodable(res);
    if !protobuf {
        check_body_media_type(&req)?;
    }
    let body = read_body(ctx, req).await?;
    if protobuf {
        Ok((crate::proto::decode(res, &body)?, Vec::new()))
    } else {
        let obj = decode_body(res, &body)?;
        Ok((obj, crate::objects::fields::problems(res, &body)))
    }
}

/// `dryRun` of a request's query string (create, update, patch; a DELETE's is part of its
/// [`crate::objects::DeleteOptions`]).
fn query_dry_run(
    query: &std::collections::HashMap<String, String>,
    options_kind: &str,
) -> Result<bool, ApiError> {
    let values: Vec<String> = query.get("dryRun").cloned().into_iter().collect();
    crate::objects::dry_run(&values, options_kind)
}
/// What a resource request addressed, for the request log and the metrics.
struct Served {
    verb: Verb,
    resource: Arc<ResourceInfo>,
    /// `resource` (one object), `namespace` or `cluster` (collections), as kube-apiserver's
    /// metrics say.
    scope: &'static str,
    subresource: Option<String>,
}

/// The `verb` label of kube-apiserver's request metrics: the HTTP method, refined to LIST,
/// WATCH and APPLY.
fn metric_verb(verb: Verb, apply: bool) -> &'static str {
    match verb {
        Verb::Get => "GET",
        Verb::List => "LIST",
        Verb::Watch => "WATCH",
        Verb::Create => "POST",
        Verb::Update => "PUT",
        Verb::Patch if apply => "APPLY",
        Verb::Patch => "PATCH",
        Verb::Delete | Verb::DeleteCollection => "DELETE",
    }
}

/// Serves a (non-admin) request.
pub(super) async fn handle(ctx: Arc<Context>, req: Request) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let raw_query = req.uri().query().unwrap_or("").to_string();
    let apply = req
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/apply-patch"));
    let (code, served, resp) = serve(&ctx, req, &method, &path, &raw_query).await;
    if let Some(s) = &served {
        ctx.metrics.count(RequestLabels {
            verb: metric_verb(s.verb, apply),
            group: s.resource.group.clone(),
            version: s.resource.version.clone(),
            resource: s.resource.plural.clone(),
            subresource: s.subresource.clone().unwrap_or_default(),
            scope: s.scope,
            code,
        });
    }
    if ctx.config.record_requests {
        let mut log = ctx.requests.lock();
        if log.len() >= MAX_RECORDED_REQUESTS {
            // Bounded memory for long-running servers: forget the older half.
            log.drain(..MAX_RECORDED_REQUESTS / 2);
        }
        log.push(RequestRecord {
            method: method.to_string(),
            path,
            query: raw_query,
            verb: served.map(|s| s.verb.as_str().to_string()),
            code,
        });
    }
    resp
}

async fn serve(
    ctx: &Arc<Context>,
    req: Request,
    method: &Method,
    path: &str,
    raw_query: &str,
) -> (u16, Option<Served>, Response) {
    let target = parse_path(&ctx.api.registry, path);
    let discovery = match &target {
        Target::Root => Some(discovery::root_paths(&ctx.api.registry)),
        Target::CoreVersions => Some(discovery::core_versions(&ctx.address.lock())),
        Target::Groups => Some(discovery::group_list(&ctx.api.registry)),
        Target::Group(g) => Some(discovery::group(&ctx.api.registry, g)),
        Target::GroupVersion(g, v) => Some(discovery::resource_list(&ctx.api.registry, g, v)),
        Target::Version => Some(discovery::version()),
        Target::OpenApiV2 | Target::OpenApiV3(_) => {
            if method != Method::GET {
                let e = ApiError::method_not_allowed();
                return (e.code, None, response::error(&e));
            }
            let accept = super::accept(&req);
            let gv = match &target {
                Target::OpenApiV3(gv) => gv.as_deref(),
                _ => None,
            };
            let v2 = target == Target::OpenApiV2;
            let (code, r) =
                openapi::serve(&ctx.openapi, &ctx.api.registry, v2, gv, accept, raw_query);
            return (code, None, r);
        }
        Target::Health => return (200, None, response::plain_text(200, "ok")),
        Target::NoRoute => return (404, None, response::page_not_found()),
        _ => None,
    };
    if let Some(doc) = discovery {
        if method != Method::GET {
            let e = ApiError::method_not_allowed();
            return (e.code, None, response::error(&e));
        }
        return (200, None, response::json_value(200, &doc));
    }
    let query = parse_query(Some(raw_query));
    let watch_flag = matches!(
        query.get("watch").map(|s| s.as_str()),
        Some("true" | "1" | "True")
    );
    let c = match classify(method, target, watch_flag) {
        Ok(c) => c,
        Err(e) => return (e.code, None, response::error(&e)),
    };
    let served = Served {
        verb: c.verb,
        resource: c.resource.clone(),
        scope: if c.name.is_some() {
            "resource"
        } else if c.namespace.is_some() {
            "namespace"
        } else {
            "cluster"
        },
        subresource: c.subresource.clone(),
    };
    if let Some(e) = ctx
        .faults
        .take_failure(c.verb, &c.resource.group_resource())
    {
        return (e.code, Some(served), response::error(&e));
    }
    // the warnings recorded while serving (undeclared fields found decoding the body, a custom
    // resource's rules ratcheted while writing it) go with any answer, an error's too, as
    // kube-apiserver's go with it once recorded
    let (served_verb, warnings) = crate::warnings::recording(serve_verb(ctx, req, c, &query)).await;
    match served_verb {
        Ok((code, r)) => (code, Some(served), response::with_warnings(r, &warnings)),
        Err(e) => {
            let r = response::with_warnings(response::error(&e), &warnings);
            (e.code, Some(served), r)
        }
    }
}

async fn serve_verb(
    ctx: &Arc<Context>,
    req: Request,
    c: Classified,
    query: &std::collections::HashMap<String, String>,
) -> Result<(u16, Response), ApiError> {
    let api = &ctx.api;
    let res = &c.resource;
    // a deprecated version's warning goes with every request to it, first, as kube-apiserver
    // adds it before serving
    if let Some(w) = &res.deprecation {
        crate::warnings::record(w.clone());
    }
    let ns = c.namespace.as_deref();
    let name = c.name.as_deref().unwrap_or("");
    let accept = super::accept(&req);
    let pb = crate::proto::wants_protobuf(accept, res);
    let metadata_only = metadata_request(accept, c.verb == Verb::List).is_some();
    crate::proto::check_acceptable(accept, res, metadata_only)?;
    let as_table = wants_table(accept)
        .then(|| IncludeObject::parse(query.get("includeObject").map(|s| s.as_str())));
    let mode = match c.subresource.as_deref() {
        Some("status") => UpdateMode::Status,
        Some("finalize") => UpdateMode::Finalize,
        _ => UpdateMode::Main,
    };
    // The field manager of writes: `fieldManager`, else the User-Agent's prefix, as
    // kube-apiserver derives it (managedFields, Update operation).
    let writer = Writer {
        manager: match query.get("fieldManager").filter(|m| !m.is_empty()) {
            Some(m) => m.clone(),
            None => manager_from_user_agent(
                req.headers()
                    .get(header::USER_AGENT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or(""),
            ),
        },
        subresource: c.subresource.clone(),
    };
    if c.subresource.as_deref() == Some("scale")
        && let Some(scale) = &res.scale
    {
        return scale::serve_scale(ctx, req, &c, scale, &writer, query).await;
    }
    if c.subresource.as_deref() == Some("token") {
        let info = crate::token::token_request_info();
        let (obj, _) = read_object(ctx, req, &info).await?;
        let ns = ns.unwrap_or("");
        let answer = crate::token::request(
            api,
            &ctx.tokens,
            ns,
            name,
            obj,
            crate::token::now(),
            Some(&writer),
        )?;
        if pb && let Ok(b) = kinformer_proto::object_from_json(&answer) {
            return Ok((201, response::protobuf(201, b)));
        }
        return Ok((201, response::json_value(201, &answer)));
    }
    match c.verb {
        Verb::Get => {
            // A GET at a resourceVersion the server has not reached waits briefly, then answers
            // 504 "Too large resource version" like a list does (kube-apiserver v1.35; e2e/diff
            // "too-large-rv / get-future"). Older or unparsable versions read the current state.
            if let Some(n) = query
                .get("resourceVersion")
                .and_then(|s| s.parse::<u64>().ok())
                && n > api.store.revision()
                && !api
                    .store
                    .wait_for_revision(n, ctx.config.too_large_wait)
                    .await
            {
                return Err(ApiError::too_large_resource_version(
                    n,
                    api.store.revision(),
                ));
            }
            let o = conversion::served_one(ctx, res, api.get(res, ns, name)?).await?;
            if let Some(pb) = metadata_request(accept, false) {
                return Ok((200, partial::object_response(&o, pb)));
            }
            if let Some(inc) = as_table {
                let meta = json!({"resourceVersion": o.resource_version.to_string()});
                let t = table(res, &[o.to_value()], meta, inc);
                return Ok((200, response::json_value(200, &t)));
            }
            Ok((200, response::object_as(200, res, &o, pb)))
        }
        Verb::List => {
            let mut opts = ListOptions::from_query(query)?;
            check_fields(res, &opts)?;
            opts.resolve_shard(ctx.config.sharded_list_and_watch)?;
            let mut page = api.list(res, ns, &opts, ctx.config.too_large_wait).await?;
            page.items = conversion::served(ctx, res, page.items).await?;
            if let Some(inc) = as_table {
                let mut meta = serde_json::Map::new();
                meta.insert(
                    "resourceVersion".into(),
                    page.resource_version.to_string().into(),
                );
                if let Some(c) = &page.continue_token {
                    meta.insert("continue".into(), c.clone().into());
                }
                if let Some(n) = page.remaining_item_count {
                    meta.insert("remainingItemCount".into(), n.into());
                }
                let objs: Vec<Value> = page.items.iter().map(|o| o.to_value()).collect();
                let t = table(res, &objs, Value::Object(meta), inc);
                return Ok((200, response::json_value(200, &t)));
            }
            if let Some(pb) = metadata_request(accept, true) {
                return Ok((200, partial::list_response(page, pb)));
            }
            Ok((200, response::list(res, page, pb)))
        }
        Verb::Watch => {
            let mut opts = ListOptions::from_query(query)?;
            check_fields(res, &opts)?;
            opts.resolve_shard(ctx.config.sharded_list_and_watch)?;
            opts.numeric_rv()?;
            if opts.send_initial_events == Some(true)
                && ctx.faults.watch_list_fault(&res.group) == Some(WatchListFault::Refuse)
            {
                return Err(ApiError::watch_list_disabled());
            }
            let (tx, rx) = tokio::sync::mpsc::channel(16);
            let metadata = metadata_request(accept, false);
            let metadata_only = metadata.is_some();
            let pb = metadata.unwrap_or(pb);
            let wreq = WatchRequest {
                resource: res.clone(),
                namespace: c.namespace.clone(),
                opts,
                table: as_table,
                metadata_only,
                protobuf: pb,
            };
            let open = ctx.metrics.watch_opened(LongRunningLabels {
                verb: "WATCH",
                group: res.group.clone(),
                version: res.version.clone(),
                resource: res.plural.clone(),
                subresource: c.subresource.clone().unwrap_or_default(),
                scope: if c.namespace.is_some() {
                    "namespace"
                } else {
                    "cluster"
                },
                component: "apiserver",
            });
            tokio::spawn(run_watch(ctx.clone(), wreq, tx));
            Ok((200, response::watch(rx, pb, open)))
        }
        Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection => {
            writes::serve_write(ctx, req, &c, query, writer, mode, pb).await
        }
    }
}
