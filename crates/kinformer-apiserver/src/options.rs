//! List and watch query parameters (`ListOptions`), parsed defensively from the query string
//! and validated with the real server's messages.

use std::collections::HashMap;

use crate::go_text::go_parse_error;
use crate::selector::{FieldSelector, LabelSelector, ShardSelector};
use crate::status::ApiError;

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RvMatch {
    /// `NotOlderThan`.
    NotOlderThan,
    /// `Exact`.
    Exact,
}

/// Parsed list/watch options.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListOptions {
    /// `labelSelector`.
    pub label_selector: LabelSelector,
    /// `fieldSelector`.
    pub field_selector: FieldSelector,
    /// `limit` (0 = none).
    pub limit: u64,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `resourceVersion` (`None` when absent or empty).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<RvMatch>,
    /// `watch=true`.
    pub watch: bool,
    /// `allowWatchBookmarks=true`.
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<u64>,
    /// `shardSelector` as sent (not empty), parsed only when the `ShardedListAndWatch` gate
    /// is on ([`resolve_shard`](Self::resolve_shard)).
    pub shard_selector_raw: Option<String>,
    /// The parsed shard selector, when the gate is on and one was sent.
    pub shard: Option<std::sync::Arc<ShardSelector>>,
}

/// Decodes `application/x-www-form-urlencoded` text (`+` is a space, `%XX` a byte).
pub(crate) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Splits a query string into decoded key/value pairs (the last value of a repeated key wins).
pub(crate) fn parse_query(q: Option<&str>) -> HashMap<String, String> {
    let mut m = HashMap::new();
    for pair in q.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        m.insert(percent_decode(k), percent_decode(v));
    }
    m
}

fn parse_bool(q: &HashMap<String, String>, k: &str) -> Result<bool, ApiError> {
    match q.get(k).map(|s| s.as_str()) {
        None | Some("") | Some("false") | Some("0") | Some("False") => Ok(false),
        Some("true") | Some("1") | Some("True") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "invalid boolean value for {k}: {other:?}"
        ))),
    }
}

/// One violated ListOptions rule: `(field, reason, message)` as in apimachinery's
/// `field.Error` (`Forbidden: ...`, `Unsupported value: ...`).
type Violation = (String, String, String);

fn forbidden(field: &str, detail: &str) -> Violation {
    (
        field.into(),
        "FieldValueForbidden".into(),
        format!("Forbidden: {detail}"),
    )
}

fn not_supported(field: &str, value: &str, supported: &[&str]) -> Violation {
    let list: Vec<String> = supported.iter().map(|v| format!("{v:?}")).collect();
    (
        field.into(),
        "FieldValueNotSupported".into(),
        format!(
            "Unsupported value: {value:?}: supported values: {}",
            list.join(", ")
        ),
    )
}

/// Every violated rule, in kube-apiserver's order (`ValidateListOptions` for lists,
/// `validateWatchOptions` for watches), so one 422 names them all.
fn violations(
    watch: bool,
    resource_version: Option<&str>,
    rv_match: Option<&str>,
    continue_token: bool,
    send_initial_events: Option<bool>,
) -> Vec<Violation> {
    const RVM: &str = "resourceVersionMatch";
    let mut errs = Vec::new();
    if watch {
        if send_initial_events.is_some() && rv_match != Some("NotOlderThan") {
            errs.push(forbidden(
                RVM,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if let Some(m) = rv_match {
            if send_initial_events.is_none() {
                errs.push(forbidden(
                    RVM,
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if m != "NotOlderThan" {
                errs.push(not_supported(RVM, m, &["NotOlderThan"]));
            }
            if continue_token {
                errs.push(forbidden(
                    RVM,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
        return errs;
    }
    if let Some(m) = rv_match {
        if resource_version.is_none() {
            errs.push(forbidden(
                RVM,
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if continue_token {
            errs.push(forbidden(
                RVM,
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if m != "Exact" && m != "NotOlderThan" {
            errs.push(not_supported(RVM, m, &["Exact", "NotOlderThan", ""]));
        }
        if m == "Exact" && resource_version == Some("0") {
            errs.push(forbidden(
                RVM,
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if send_initial_events.is_some() {
        errs.push(forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    errs
}

impl ListOptions {
    /// Parses and validates the query parameters of a list or watch request.
    pub(crate) fn from_query(q: &HashMap<String, String>) -> Result<Self, ApiError> {
        let label_selector =
            LabelSelector::parse(q.get("labelSelector").map(|s| s.as_str()).unwrap_or(""))
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let field_selector =
            FieldSelector::parse(q.get("fieldSelector").map(|s| s.as_str()).unwrap_or(""))
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let limit = match q.get("limit").map(|s| s.as_str()) {
            None | Some("") => 0,
            Some(l) => l
                .parse::<i64>()
                .map_err(|e| ApiError::bad_request(go_parse_error("ParseInt", l, &e)))?
                .max(0) as u64,
        };
        let timeout_seconds = match q.get("timeoutSeconds").map(|s| s.as_str()) {
            None | Some("") => None,
            Some(t) => Some(
                t.parse::<i64>()
                    .map_err(|e| {
                        ApiError::bad_request(format!("invalid timeoutSeconds {t:?}: {e}"))
                    })?
                    .max(0) as u64,
            ),
        };
        let resource_version = q.get("resourceVersion").filter(|s| !s.is_empty()).cloned();
        let raw_match = q
            .get("resourceVersionMatch")
            .map(|s| s.as_str())
            .filter(|s| !s.is_empty());
        let resource_version_match = match raw_match {
            Some("NotOlderThan") => Some(RvMatch::NotOlderThan),
            Some("Exact") => Some(RvMatch::Exact),
            _ => None,
        };
        let send_initial_events = match q.get("sendInitialEvents") {
            None => None,
            Some(_) => Some(parse_bool(q, "sendInitialEvents")?),
        };
        let opts = ListOptions {
            label_selector,
            field_selector,
            limit,
            continue_token: q.get("continue").filter(|s| !s.is_empty()).cloned(),
            resource_version,
            resource_version_match,
            watch: parse_bool(q, "watch")?,
            allow_watch_bookmarks: parse_bool(q, "allowWatchBookmarks")?,
            send_initial_events,
            timeout_seconds,
            shard_selector_raw: q.get("shardSelector").filter(|s| !s.is_empty()).cloned(),
            shard: None,
        };
        let errs = violations(
            opts.watch,
            opts.resource_version.as_deref(),
            raw_match,
            opts.continue_token.is_some(),
            opts.send_initial_events,
        );
        if !errs.is_empty() {
            return Err(ApiError::invalid("ListOptions", "meta.k8s.io", "", &errs));
        }
        Ok(opts)
    }

    /// Applies `shardSelector` when the `ShardedListAndWatch` gate is on, as kube-apiserver
    /// 1.36's registry does for list, watch and deletecollection; with the gate off the
    /// parameter is ignored (no filtering, no `shardInfo`). A selector that does not parse is
    /// kube's plain error: 500 with no reason and `invalid shard selector: <why>` (the registry
    /// returns a non-API error, which the handler turns into an internal error).
    pub(crate) fn resolve_shard(&mut self, gate: bool) -> Result<(), ApiError> {
        self.shard = None;
        if let (true, Some(raw)) = (gate, &self.shard_selector_raw) {
            let sel = ShardSelector::parse(raw)
                .map_err(|e| ApiError::new(500, "", format!("invalid shard selector: {e}")))?;
            self.shard = Some(std::sync::Arc::new(sel));
        }
        Ok(())
    }

    /// The numeric `resourceVersion`, if one other than "0" was given (400 if not a number).
    pub(crate) fn numeric_rv(&self) -> Result<Option<u64>, ApiError> {
        match self.resource_version.as_deref() {
            None | Some("0") => Ok(None),
            Some(s) => s.parse::<u64>().map(Some).map_err(|e| {
                ApiError::bad_request(format!(
                    "invalid resource version: resourceVersion: Invalid value: {s:?}: {}",
                    go_parse_error("ParseUint", s, &e)
                ))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Result<ListOptions, ApiError> {
        ListOptions::from_query(&parse_query(Some(s)))
    }

    #[test]
    fn decodes_percent_and_plus() {
        let m = parse_query(Some("labelSelector=app%3Dweb%2Ctier+in+(a)&limit=2&x"));
        assert_eq!(m["labelSelector"], "app=web,tier in (a)");
        assert_eq!(m["limit"], "2");
        assert_eq!(m["x"], "");
        assert_eq!(percent_decode("%zz%"), "%zz%");
    }

    /// kube-apiserver v1.35 reports every violated rule in one 422 (e2e/diff
    /// "initial-events-end / invalid-exact-match" and "invalid-on-list").
    #[test]
    fn every_violation_is_reported_in_one_status() {
        let e = q("watch=1&sendInitialEvents=true&resourceVersionMatch=Exact&allowWatchBookmarks=true&resourceVersion=5").unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]"
        );
        assert_eq!(
            e.details,
            Some(serde_json::json!({
                "group": "meta.k8s.io",
                "kind": "ListOptions",
                "causes": [
                    {"reason": "FieldValueForbidden", "message": "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan", "field": "resourceVersionMatch"},
                    {"reason": "FieldValueNotSupported", "message": "Unsupported value: \"Exact\": supported values: \"NotOlderThan\"", "field": "resourceVersionMatch"}
                ]
            }))
        );
        let e = q("sendInitialEvents=true&resourceVersionMatch=NotOlderThan").unwrap_err();
        assert_eq!(
            e.message,
            "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list]"
        );
        let e = q("resourceVersion=1&resourceVersionMatch=Foo").unwrap_err();
        assert_eq!(
            e.message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported value: \"Foo\": supported values: \"Exact\", \"NotOlderThan\", \"\""
        );
    }

    #[test]
    fn validation_messages() {
        let e = q("resourceVersionMatch=Exact").unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
        );
        let e = q("resourceVersion=0&resourceVersionMatch=Exact").unwrap_err();
        assert!(
            e.message
                .ends_with("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"")
        );
        let e = q("resourceVersion=1&resourceVersionMatch=Foo").unwrap_err();
        assert_eq!(e.reason, "Invalid");
        let e = q("sendInitialEvents=true").unwrap_err();
        assert!(
            e.message
                .contains("sendInitialEvents is forbidden for list")
        );
        // accepted without allowWatchBookmarks, as kube-apiserver v1.35 does
        assert!(q("watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan").is_ok());
        assert!(q("watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true").is_ok());
        // kube-apiserver v1.35 wording (e2e/diff "bad-request / list-bad-limit",
        // "list-bad-resource-version").
        assert_eq!(
            q("limit=abc").unwrap_err().message,
            "strconv.ParseInt: parsing \"abc\": invalid syntax"
        );
        assert_eq!(
            q("resourceVersion=abc")
                .unwrap()
                .numeric_rv()
                .unwrap_err()
                .message,
            "invalid resource version: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"
        );
        assert_eq!(
            q("limit=99999999999999999999").unwrap_err().message,
            "strconv.ParseInt: parsing \"99999999999999999999\": value out of range"
        );
        assert_eq!(q("labelSelector=a+in+(").unwrap_err().code, 400);
        assert_eq!(q("watch=maybe").unwrap_err().code, 400);
        assert_eq!(
            q("resourceVersion=abc")
                .unwrap()
                .numeric_rv()
                .unwrap_err()
                .code,
            400
        );
    }
}
