//! Asking one admission webhook about a write: matching it, its `matchConditions`, the
//! review sent and the verdict it answers with.

use serde_json::Value;

use crate::admission::webhook::call::Endpoint;
use crate::admission::webhook::{Hook, Review, Verdict};
use crate::api::Api;
use crate::context::Context;
use crate::status::ApiError;

/// What asking a webhook gave.
pub(super) struct Asked {
    /// Whether it was called (it matched the write).
    pub called: bool,
    /// The JSON patch it answered with (a mutating webhook's).
    pub patch: Option<json_patch::Patch>,
}

/// Asks `hook` about `review` when it matches the write: the JSON patch it answers with
/// (a mutating webhook's), or its refusal, or the failure to call it (passed over under
/// `failurePolicy: Ignore`).
pub(super) async fn ask(
    ctx: &Context,
    hook: &Hook,
    mut review: Review<'_>,
    namespace: Option<&Value>,
) -> Result<Asked, ApiError> {
    let skipped = Asked {
        called: false,
        patch: None,
    };
    let req = review.request();
    if !hook.matches(&req, review.operation, review.object, review.old, namespace) {
        return Ok(skipped);
    }
    match hook.conditions(
        &req,
        review.operation,
        review.object,
        review.old,
        review.user,
    ) {
        Ok(true) => {}
        Ok(false) => return Ok(skipped),
        Err(why) if hook.fails_closed() => {
            return Err(hook.failure(&format!("failed to evaluate match conditions: {why}")));
        }
        Err(_) => return Ok(skipped),
    }
    if review.dry_run && !hook.dry_run_safe() {
        return Err(ApiError::bad_request(format!(
            "admission webhook \"{}\" does not support dry run",
            hook.name()
        )));
    }
    let failed = |why: String| -> Result<Asked, ApiError> {
        if hook.fails_closed() {
            Err(hook.failure(&why))
        } else {
            tracing::warn!(
                configuration = hook.configuration,
                webhook = hook.name(),
                "failed calling webhook, failing open: {why}"
            );
            Ok(Asked {
                called: true,
                patch: None,
            })
        }
    };
    let Some(version) = hook.review_version() else {
        return failed("webhook does not accept v1 or v1beta1 AdmissionReview".into());
    };
    review.version = version;
    let at = match endpoint(&ctx.api, hook) {
        Ok(at) => at,
        Err(why) => return failed(why),
    };
    let body = serde_json::to_vec(&review.body()).unwrap_or_default();
    let answer = match ctx.webhooks.post(hook, &at, body).await {
        Ok(a) => a,
        Err(why) => return failed(why),
    };
    match hook.verdict(&review, &answer) {
        Ok(Verdict::Allowed { patch, warnings }) => {
            warnings.into_iter().for_each(crate::warnings::record);
            Ok(Asked {
                called: true,
                patch,
            })
        }
        Ok(Verdict::Denied { status, warnings }) => {
            warnings.into_iter().for_each(crate::warnings::record);
            Err(hook.denial(status.as_ref()))
        }
        Err(why) => failed(why),
    }
}

/// Where `hook` is reached: its URL, or its Service's first ready endpoint.
fn endpoint(api: &Api, hook: &Hook) -> Result<Endpoint, String> {
    crate::http::endpoints::endpoint_of(api, hook.client_config())
}
