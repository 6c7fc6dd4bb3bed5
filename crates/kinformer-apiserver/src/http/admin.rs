//! Admin endpoints under `/__kinformer/` (fault injection, request log, ground-truth state).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::response::Response;
use http::Method;
use serde_json::{Value, json};

use super::response;
use crate::context::Context;
use crate::faults::{FailureRule, Faults, WatchListFault};
use crate::options::parse_query;
use crate::status::ApiError;

/// Serves an admin request.
pub(super) async fn handle(ctx: Arc<Context>, req: Request) -> Response {
    match serve(ctx, req).await {
        Ok(v) => response::json_value(200, &v),
        Err(e) => response::error(&e),
    }
}

async fn serve(ctx: Arc<Context>, req: Request) -> Result<Value, ApiError> {
    let faults = Faults::new(ctx.faults.clone(), ctx.api.clone());
    let path = req
        .uri()
        .path()
        .trim_start_matches("/__kinformer/")
        .to_string();
    let query = parse_query(req.uri().query());
    let method = req.method().clone();
    let body = axum::body::to_bytes(req.into_body(), 1 << 20)
        .await
        .map_err(|_| ApiError::too_large_body(1 << 20))?;
    let post = method == Method::POST;
    match (path.as_str(), post) {
        ("faults/drop-watches", true) => faults.drop_watches(),
        ("faults/fail", true) => {
            let rule: FailureRule = serde_json::from_slice(&body)
                .map_err(|e| ApiError::bad_request(format!("invalid failure rule: {e}")))?;
            faults.fail_next(rule);
        }
        ("faults/latency", true) => faults.set_latency(millis(&body, "latency")?),
        ("faults/watch-delay", true) => faults.set_watch_delay(millis(&body, "watch delay")?),
        ("faults/compact", true) => return Ok(json!({"compacted": faults.compact_now()})),
        ("faults/forget-history", true) => faults.forget_history(),
        ("faults/pause-watches", true) => faults.pause_watches(),
        ("faults/resume-watches", true) => faults.resume_watches(),
        ("faults/watch-list", true) => {
            #[derive(serde::Deserialize)]
            #[serde(rename_all = "camelCase", deny_unknown_fields)]
            struct Body {
                fault: Option<WatchListFault>,
                #[serde(default)]
                api_group: Option<String>,
            }
            let b: Body = serde_json::from_slice(&body)
                .map_err(|e| ApiError::bad_request(format!("invalid watch-list fault: {e}")))?;
            match b.fault {
                Some(f) => faults.set_watch_list_fault(f, b.api_group.as_deref()),
                None => faults.clear_watch_list_fault(),
            }
        }
        ("faults/clear", true) => faults.clear(),
        ("requests", false) if method == Method::GET => {
            let log = ctx.requests.lock().clone();
            return serde_json::to_value(log).map_err(|e| ApiError::internal(&e.to_string()));
        }
        ("requests", false) if method == Method::DELETE => ctx.requests.lock().clear(),
        (p, false) if p.starts_with("state/") && method == Method::GET => {
            let name = &p["state/".len()..];
            let res = ctx
                .api
                .registry
                .find_by_name(name)
                .ok_or_else(ApiError::not_found_path)?;
            let ns = query
                .get("namespace")
                .filter(|s| !s.is_empty())
                .map(|s| format!("{s}/"));
            let (rv, objs) = ctx
                .api
                .store
                .list(&res.group_resource(), None, ns.as_deref().unwrap_or(""), "")
                .map_err(|e| ApiError::internal(&e.to_string()))?;
            let items: Vec<Value> = objs.iter().map(|o| o.to_value()).collect();
            return Ok(json!({"resourceVersion": rv.to_string(), "items": items}));
        }
        _ => return Err(ApiError::not_found_path()),
    }
    Ok(json!({"ok": true}))
}

/// The duration of a `{"millis": N}` body.
fn millis(body: &[u8], what: &str) -> Result<Duration, ApiError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid {what}: {e}")))?;
    let ms = v
        .get("millis")
        .and_then(|m| m.as_u64())
        .ok_or_else(|| ApiError::bad_request("expected {\"millis\": N}"))?;
    Ok(Duration::from_millis(ms))
}
