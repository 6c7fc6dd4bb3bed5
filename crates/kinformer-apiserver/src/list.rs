//! LIST: resourceVersion semantics, selectors, pagination with continue tokens.
//!
//! Semantics (as the real server, etcd3 store + watch cache):
//! - no `resourceVersion`: the latest state (a consistent read);
//! - `resourceVersion=0`: any state, served like the watch cache: the latest, and `limit` is
//!   ignored (the whole list is returned without `continue`);
//! - `resourceVersion=N` with `resourceVersionMatch=Exact` (or unset match with `limit`): the
//!   state at exactly N (410 Gone if compacted);
//! - `resourceVersion=N` with `NotOlderThan` (or unset match without `limit`): the latest
//!   state, after waiting (briefly) for the store to reach N; 504 "Too large resource version"
//!   if it does not.
//!
//! A page holds up to `limit` matching items in key order; `continue` encodes the list's
//! revision and the next key, so the next pages are read at the same revision. If that
//! revision has been compacted, 410 Gone with the real message and a fresh token that
//! continues at the latest revision (`rv: -1`), as the real server does.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::json;

use crate::go_text::go_json_error;
use crate::options::{ListOptions, RvMatch};
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::{ReadError, Store, StoredObject};

/// Real message for a list at a compacted resourceVersion.
pub(crate) const EXPIRED_LIST: &str = "The resourceVersion for the provided list is too old.";
/// Real message for an expired continue token (a new token is included).
pub(crate) const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// One page of a list.
#[derive(Debug, Clone)]
pub(crate) struct ListPage {
    /// `metadata.resourceVersion` of the list.
    pub resource_version: u64,
    /// The items, in key order.
    pub items: Vec<Arc<StoredObject>>,
    /// `metadata.continue`, when more items follow.
    pub continue_token: Option<String>,
    /// `metadata.remainingItemCount` (only without selectors, as the real server).
    pub remaining_item_count: Option<u64>,
    /// `metadata.shardInfo.selector`: the applied shard selector, written back as kube writes
    /// it (only when the `ShardedListAndWatch` gate is on and a selector was sent).
    pub shard_info: Option<String>,
}

/// Encodes a continue token: base64url (no padding) of `{"v":"meta.k8s.io/v1","rv":N,"start":K}`.
pub(crate) fn encode_continue(rv: i64, start: &str) -> String {
    let raw = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start}).to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

/// Decodes a continue token into `(rv, start)`; 400 BadRequest when malformed, with
/// kube-apiserver's messages (`invalid continue token: continue key is not valid: ...`; the
/// base64 is decoded leniently like Go's `RawURLEncoding`, which ignores trailing bits).
pub(crate) fn decode_continue(token: &str) -> Result<(i64, String), ApiError> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::RequireNone),
    );
    let bad = |why: &str| {
        ApiError::bad_request(format!(
            "invalid continue token: continue key is not valid{why}"
        ))
    };
    let raw = LENIENT.decode(token.trim_end_matches('=')).map_err(|e| {
        let at = match e {
            base64::DecodeError::InvalidByte(i, _)
            | base64::DecodeError::InvalidLastSymbol(i, _) => i,
            base64::DecodeError::InvalidLength(n) => n.saturating_sub(1),
            base64::DecodeError::InvalidPadding => token.len(),
        };
        bad(&format!(": illegal base64 data at input byte {at}"))
    })?;
    let v: serde_json::Value =
        serde_json::from_slice(&raw).map_err(|e| bad(&format!(": {}", go_json_error(&raw, &e))))?;
    let version = v.get("v").and_then(|v| v.as_str()).unwrap_or("");
    if version != "meta.k8s.io/v1" {
        return Err(bad(&format!(
            ": server does not recognize this encoded version {version}"
        )));
    }
    let rv = v.get("rv").and_then(|r| r.as_i64()).unwrap_or(0);
    let start = v.get("start").and_then(|s| s.as_str()).unwrap_or("");
    if rv == 0 || rv < -1 {
        return Err(bad(
            ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    if start.is_empty() {
        return Err(bad(": encoded start key empty (version meta.k8s.io/v1)"));
    }
    // Path traversal defence, as path.Clean: a start key that cleaning would change is refused.
    if start.starts_with('/')
        || start
            .split('/')
            .any(|seg| seg.is_empty() || seg == "." || seg == "..")
    {
        return Err(bad(&format!(": {start}")));
    }
    Ok((rv, start.to_string()))
}

/// Whether an object passes the label and field selectors.
pub(crate) fn matches(opts: &ListOptions, obj: &StoredObject) -> bool {
    opts.shard
        .as_ref()
        .is_none_or(|s| s.matches(&obj.uid, &obj.namespace))
        && opts.label_selector.matches(&obj.labels)
        && opts.field_selector.matches(|f| obj.field(f))
}

fn read_error(e: ReadError) -> ApiError {
    match e {
        ReadError::Compacted { .. } => ApiError::resource_expired(EXPIRED_LIST),
        ReadError::Future { requested, current } => {
            ApiError::too_large_resource_version(requested, current)
        }
    }
}

/// Serves one LIST request (after option validation) from `store`.
pub(crate) async fn list(
    store: &Store,
    res: &ResourceInfo,
    namespace: Option<&str>,
    opts: &ListOptions,
    too_large_wait: Duration,
) -> Result<ListPage, ApiError> {
    let prefix = match namespace {
        Some(ns) if res.namespaced() => format!("{ns}/"),
        _ => String::new(),
    };
    let resource = res.group_resource();
    let rv_num = opts.numeric_rv()?;
    let any = opts.resource_version.as_deref() == Some("0");
    let (at, start) = if let Some(token) = &opts.continue_token {
        if opts.resource_version.is_some() && !any {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let (rv, start) = decode_continue(token)?;
        let at = if rv == -1 { None } else { Some(rv as u64) };
        (at, format!("{prefix}{start}"))
    } else {
        let exact = opts.resource_version_match == Some(RvMatch::Exact)
            || (opts.resource_version_match.is_none() && opts.limit > 0);
        let at = match rv_num {
            Some(n) if exact => {
                if n > store.revision() {
                    store.wait_for_revision(n, too_large_wait).await;
                }
                Some(n)
            }
            Some(n) => {
                if n > store.revision() && !store.wait_for_revision(n, too_large_wait).await {
                    return Err(ApiError::too_large_resource_version(n, store.revision()));
                }
                None
            }
            None => None,
        };
        (at, prefix.clone())
    };
    // A continuation at the latest revision ("rv": -1) reports the revision it read.
    let limit = if any && opts.continue_token.is_none() {
        0
    } else {
        opts.limit
    };
    // Deliberate difference: with only a shard selector, kube-apiserver still reports a
    // remainingItemCount, counted over every object after the page, not only the shard's
    // (its predicate's `Empty()` ignores the shard selector); here a sharded page reports
    // none, as for label and field selectors, rather than a count known to be wrong.
    let selecting =
        !opts.label_selector.is_empty() || !opts.field_selector.is_empty() || opts.shard.is_some();
    let keep = |o: &StoredObject| matches(opts, o);
    let keep: Option<&dyn Fn(&StoredObject) -> bool> = if selecting { Some(&keep) } else { None };
    let page = store.list_page(&resource, at, &prefix, &start, limit as usize, keep);
    let (read_rv, items, rest) = match page {
        Ok(r) => r,
        Err(ReadError::Compacted { .. }) if opts.continue_token.is_some() => {
            let mut e = ApiError::resource_expired(INCONSISTENT_CONTINUE);
            e.continue_token = Some(encode_continue(-1, &start[prefix.len()..]));
            return Err(e);
        }
        Err(e) => return Err(read_error(e)),
    };
    let mut continue_token = None;
    let mut remaining_item_count = None;
    if rest > 0 {
        if let Some(last) = items.last() {
            let next = format!("{}\u{0}", &last.key[prefix.len()..]);
            continue_token = Some(encode_continue(read_rv as i64, &next));
        }
        if !selecting {
            remaining_item_count = Some(rest as u64);
        }
    }
    Ok(ListPage {
        resource_version: read_rv,
        items,
        continue_token,
        remaining_item_count,
        shard_info: opts.shard.as_ref().map(|s| s.canonical()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let t = encode_continue(42, "ns/p\u{0}");
        assert_eq!(decode_continue(&t).unwrap(), (42, "ns/p\u{0}".to_string()));
        for bad in [
            "!!!",
            "e30",
            &encode_continue(0, "x"),
            &encode_continue(5, "../x"),
        ] {
            let e = decode_continue(bad).unwrap_err();
            assert_eq!(e.code, 400);
            assert!(
                e.message
                    .starts_with("invalid continue token: continue key is not valid: "),
                "{}",
                e.message
            );
        }
    }

    /// kube-apiserver v1.35 (e2e/diff "bad-request / list-bad-continue"): Go's lenient base64
    /// decodes "not-a-token" and encoding/json rejects the first byte.
    #[test]
    fn continue_errors_use_kube_apiserver_wording() {
        assert_eq!(
            decode_continue("not-a-token").unwrap_err().message,
            "invalid continue token: continue key is not valid: invalid character '\\u009e' looking for beginning of value"
        );
        assert_eq!(
            decode_continue("!!!").unwrap_err().message,
            "invalid continue token: continue key is not valid: illegal base64 data at input byte 0"
        );
        assert_eq!(
            decode_continue(&encode_continue(0, "x"))
                .unwrap_err()
                .message,
            "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        );
    }
}
