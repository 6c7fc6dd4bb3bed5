//! List and watch query parameters (`ListOptions`), parsed defensively from the query string
//! and validated with the real server's messages.

use std::collections::HashMap;

use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RvMatch {
    /// `NotOlderThan`.
    NotOlderThan,
    /// `Exact`.
    Exact,
}

/// Parsed list/watch options.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
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
}

/// Decodes `application/x-www-form-urlencoded` text (`+` is a space, `%XX` a byte).
pub fn percent_decode(s: &str) -> String {
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
pub fn parse_query(q: Option<&str>) -> HashMap<String, String> {
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

fn list_options_invalid(field: &str, reason: &str, msg: &str) -> ApiError {
    ApiError::invalid(
        "ListOptions",
        "meta.k8s.io",
        "",
        &[(field.into(), reason.into(), msg.into())],
    )
}

impl ListOptions {
    /// Parses and validates the query parameters of a list or watch request.
    pub fn from_query(q: &HashMap<String, String>) -> Result<Self, ApiError> {
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
                .map_err(|e| ApiError::bad_request(format!("invalid limit {l:?}: {e}")))?
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
        let resource_version_match = match q.get("resourceVersionMatch").map(|s| s.as_str()) {
            None | Some("") => None,
            Some("NotOlderThan") => Some(RvMatch::NotOlderThan),
            Some("Exact") => Some(RvMatch::Exact),
            Some(other) => {
                return Err(list_options_invalid(
                    "resourceVersionMatch",
                    "FieldValueNotSupported",
                    &format!(
                        "Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\""
                    ),
                ));
            }
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
        };
        opts.validate()?;
        Ok(opts)
    }

    fn validate(&self) -> Result<(), ApiError> {
        if let Some(m) = self.resource_version_match {
            if self.watch && self.send_initial_events.is_none() {
                return Err(list_options_invalid(
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if self.resource_version.is_none()
                && !(self.watch && self.send_initial_events.is_some())
            {
                return Err(list_options_invalid(
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if self.continue_token.is_some() {
                return Err(list_options_invalid(
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    "Forbidden: resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if m == RvMatch::Exact && self.resource_version.as_deref() == Some("0") {
                return Err(list_options_invalid(
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if let Some(sie) = self.send_initial_events {
            if !self.watch {
                return Err(list_options_invalid(
                    "sendInitialEvents",
                    "FieldValueForbidden",
                    "Forbidden: sendInitialEvents is forbidden for list",
                ));
            }
            // kube-apiserver v1.35 accepts sendInitialEvents=true without allowWatchBookmarks
            // (observed, e2e/diff "initial-events-end / invalid-no-bookmarks"): the initial ADDED
            // events come, the end bookmark does not.
            if (sie || self.resource_version_match.is_some())
                && self.resource_version_match != Some(RvMatch::NotOlderThan)
            {
                return Err(list_options_invalid(
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
        }
        Ok(())
    }

    /// The numeric `resourceVersion`, if one other than "0" was given (400 if not a number).
    pub fn numeric_rv(&self) -> Result<Option<u64>, ApiError> {
        match self.resource_version.as_deref() {
            None | Some("0") => Ok(None),
            Some(s) => s
                .parse::<u64>()
                .map(Some)
                .map_err(|e| ApiError::bad_request(format!("invalid resource version: {e}"))),
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
        assert_eq!(q("limit=abc").unwrap_err().code, 400);
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
