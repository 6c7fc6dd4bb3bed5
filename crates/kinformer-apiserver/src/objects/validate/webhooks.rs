//! Validation of `ValidatingWebhookConfiguration`s and `MutatingWebhookConfiguration`s as
//! kube-apiserver 1.36's `pkg/apis/admissionregistration/validation` does it on create and
//! update (the rules of each webhook in order, then its `admissionReviewVersions`, then its
//! name's uniqueness), so a chart that a real cluster refuses is refused here with the same
//! causes: a name that is not fully qualified, a rule without operations, groups, versions or
//! resources, unsupported policies, a missing or unsafe `sideEffects`, a timeout outside 1–30
//! seconds, a `clientConfig` with neither or both of `url` and `service`, a URL that is not
//! `https` (or has user information, a query or a fragment), a service without name,
//! namespace or a valid port, no `admissionReviewVersions` the server speaks.
//!
//! Not checked here: label selectors' syntax, `matchConditions`' expressions, the wildcard
//! combinations of a rule's lists.

use serde_json::{Map, Value};

use super::{Cause, dns1123_subdomain_errors};

fn required(field: &str, detail: &str) -> Cause {
    let message = if detail.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {detail}")
    };
    (field.into(), "FieldValueRequired".into(), message)
}

fn invalid(field: &str, value: &Value, detail: &str) -> Cause {
    let shown = match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    (
        field.into(),
        "FieldValueInvalid".into(),
        format!("Invalid value: {shown}: {detail}"),
    )
}

fn not_supported(field: &str, value: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    (
        field.into(),
        "FieldValueNotSupported".into(),
        format!(
            "Unsupported value: {value:?}: supported values: {}",
            list.join(", ")
        ),
    )
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The causes of a webhook configuration's invalidity (`mutating`: a
/// `MutatingWebhookConfiguration`), metadata aside.
pub(crate) fn causes(obj: &Map<String, Value>, mutating: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    let hooks = obj.get("webhooks").and_then(Value::as_array);
    let mut names = std::collections::HashSet::new();
    for (i, hook) in hooks.into_iter().flatten().enumerate() {
        let at = format!("webhooks[{i}]");
        let empty = Map::new();
        let hook = hook.as_object().unwrap_or(&empty);
        out.extend(webhook(hook, &at, mutating));
        out.extend(review_versions(hook.get("admissionReviewVersions"), &at));
        let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
        if !name.is_empty() && !names.insert(name.to_string()) {
            out.push((
                format!("{at}.name"),
                "FieldValueDuplicate".into(),
                format!("Duplicate value: {name:?}"),
            ));
        }
    }
    out
}

fn webhook(hook: &Map<String, Value>, at: &str, mutating: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    let s = |k: &str| hook.get(k).and_then(Value::as_str);
    // the name must be fully qualified
    let name = s("name").unwrap_or("");
    if name.is_empty() {
        out.push(required(&format!("{at}.name"), ""));
    } else {
        let errs = dns1123_subdomain_errors(name);
        if !errs.is_empty() {
            out.push(invalid(
                &format!("{at}.name"),
                &name.into(),
                &errs.join(","),
            ));
        } else if name.split('.').count() < 3 {
            out.push(invalid(
                &format!("{at}.name"),
                &name.into(),
                "should be a domain with at least three segments separated by dots",
            ));
        }
    }
    let rules = hook.get("rules").and_then(Value::as_array);
    for (j, rule) in rules.into_iter().flatten().enumerate() {
        out.extend(rule_causes(rule, &format!("{at}.rules[{j}]")));
    }
    if let Some(p) = s("failurePolicy").filter(|p| !["Fail", "Ignore"].contains(p)) {
        out.push(not_supported(
            &format!("{at}.failurePolicy"),
            p,
            &["Fail", "Ignore"],
        ));
    }
    if let Some(p) = s("matchPolicy").filter(|p| !["Equivalent", "Exact"].contains(p)) {
        out.push(not_supported(
            &format!("{at}.matchPolicy"),
            p,
            &["Equivalent", "Exact"],
        ));
    }
    match s("sideEffects") {
        None => out.push(required(
            &format!("{at}.sideEffects"),
            "must specify one of None, NoneOnDryRun",
        )),
        Some(e) if !["None", "NoneOnDryRun"].contains(&e) => out.push(not_supported(
            &format!("{at}.sideEffects"),
            e,
            &["None", "NoneOnDryRun"],
        )),
        Some(_) => {}
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64)
        && !(1..=30).contains(&t)
    {
        out.push(invalid(
            &format!("{at}.timeoutSeconds"),
            &t.into(),
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    if mutating
        && let Some(p) = s("reinvocationPolicy").filter(|p| !["IfNeeded", "Never"].contains(p))
    {
        out.push(not_supported(
            &format!("{at}.reinvocationPolicy"),
            p,
            &["IfNeeded", "Never"],
        ));
    }
    let cc = hook.get("clientConfig");
    let url = cc.and_then(|c| c.get("url")).and_then(Value::as_str);
    let service = cc.and_then(|c| c.get("service")).filter(|v| v.is_object());
    match (url, service) {
        (Some(u), None) => out.extend(url_causes(u, &format!("{at}.clientConfig.url"))),
        (None, Some(svc)) => out.extend(service_causes(svc, &format!("{at}.clientConfig.service"))),
        _ => out.push(required(
            &format!("{at}.clientConfig"),
            "exactly one of url or service is required",
        )),
    }
    out
}

fn rule_causes(rule: &Value, at: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let operations = strings(rule.get("operations"));
    if operations.is_empty() {
        out.push(required(&format!("{at}.operations"), ""));
    }
    const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    for (k, op) in operations.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            out.push(not_supported(
                &format!("{at}.operations[{k}]"),
                op,
                &OPERATIONS,
            ));
        }
    }
    if rule
        .get("apiGroups")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        out.push(required(&format!("{at}.apiGroups"), ""));
    }
    let versions = strings(rule.get("apiVersions"));
    if versions.is_empty() {
        out.push(required(&format!("{at}.apiVersions"), ""));
    }
    for (k, v) in versions.iter().enumerate() {
        if v.is_empty() {
            out.push(required(&format!("{at}.apiVersions[{k}]"), ""));
        }
    }
    let resources = strings(rule.get("resources"));
    if resources.is_empty() {
        out.push(required(&format!("{at}.resources"), ""));
    }
    for (k, r) in resources.iter().enumerate() {
        if r.is_empty() {
            out.push(required(&format!("{at}.resources[{k}]"), ""));
        }
    }
    const SCOPES: [&str; 3] = ["*", "Cluster", "Namespaced"];
    if let Some(scope) = rule.get("scope").and_then(Value::as_str)
        && !SCOPES.contains(&scope)
    {
        out.push(not_supported(&format!("{at}.scope"), scope, &SCOPES));
    }
    out
}

/// `webhook.ValidateWebhookURL` with https forced.
fn url_causes(url: &str, at: &str) -> Vec<Cause> {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut out = Vec::new();
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (s, r),
        None => ("", url),
    };
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = if url.contains("://") {
        rest.split('/').next().unwrap_or("")
    } else {
        ""
    };
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if scheme != "https" {
        out.push(invalid(
            at,
            &scheme.into(),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() {
        out.push(invalid(
            at,
            &"".into(),
            &format!("host must be specified{FORM}"),
        ));
    }
    if let Some(u) = user {
        out.push(invalid(
            at,
            &u.into(),
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        out.push(invalid(
            at,
            &fragment.into(),
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        out.push(invalid(
            at,
            &query.into(),
            "query parameters are not permitted in the URL",
        ));
    }
    out
}

/// `webhook.ValidateWebhookService`.
fn service_causes(svc: &Value, at: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let s = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("");
    if s("name").is_empty() {
        out.push(required(&format!("{at}.name"), ""));
    }
    if s("namespace").is_empty() {
        out.push(required(&format!("{at}.namespace"), ""));
    }
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
    if !(1..=65535).contains(&port) {
        out.push(invalid(
            &format!("{at}.port"),
            &port.into(),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(path) = svc.get("path").and_then(Value::as_str) else {
        return out;
    };
    if path.is_empty() || path == "/" {
        return out;
    }
    let field = format!("{at}.path");
    if path == "//" {
        out.push(invalid(&field, &path.into(), "segment[0] may not be empty"));
        return out;
    }
    if !path.starts_with('/') {
        out.push(invalid(&field, &path.into(), "must start with a '/'"));
    }
    let trimmed = path.get(1..).unwrap_or("");
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (i, step) in trimmed.split('/').enumerate() {
        if step.is_empty() {
            out.push(invalid(
                &field,
                &path.into(),
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for e in dns1123_subdomain_errors(step) {
            out.push(invalid(&field, &path.into(), &format!("segment[{i}]: {e}")));
        }
    }
    out
}

/// `validateAdmissionReviewVersions` (a recognized version required).
fn review_versions(v: Option<&Value>, at: &str) -> Vec<Cause> {
    let field = format!("{at}.admissionReviewVersions");
    let versions = strings(v);
    if versions.is_empty() {
        return vec![required(&field, "must specify one of v1, v1beta1")];
    }
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, version) in versions.iter().enumerate() {
        if !seen.insert(*version) {
            out.push(invalid(
                &format!("{field}[{i}]"),
                &(*version).into(),
                "duplicate version",
            ));
        }
    }
    if !versions.iter().any(|v| matches!(*v, "v1" | "v1beta1")) {
        out.push(invalid(
            &field,
            &Value::from(versions.iter().map(|s| Value::from(*s)).collect::<Vec<_>>()),
            "must include at least one of v1, v1beta1",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(v: Value, mutating: bool) -> Vec<String> {
        causes(v.as_object().unwrap(), mutating)
            .into_iter()
            .map(|(f, _, m)| format!("{f}: {m}"))
            .collect()
    }

    #[test]
    fn a_valid_configuration_has_no_causes() {
        let v = json!({"webhooks": [{"name": "a.example.com", "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "clientConfig": {"url": "https://h:1/p"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"], "scope": "*"}],
            "failurePolicy": "Fail", "timeoutSeconds": 10, "reinvocationPolicy": "Never"}]});
        assert!(messages(v, true).is_empty());
    }

    #[test]
    fn every_rule_is_reported_in_kube_apiservers_words() {
        let v = json!({"webhooks": [
            {"name": "short.com", "sideEffects": "Some", "admissionReviewVersions": ["v2"],
             "clientConfig": {"url": "http://h/p?x=1"}, "timeoutSeconds": 31,
             "failurePolicy": "Maybe",
             "rules": [{"operations": ["PATCH"], "apiGroups": [], "apiVersions": ["v1"],
                        "resources": ["configmaps"], "scope": "Everywhere"}]},
            {"name": "short.com", "admissionReviewVersions": ["v1"], "clientConfig": {}}
        ]});
        assert_eq!(
            messages(v, false),
            vec![
                "webhooks[0].name: Invalid value: \"short.com\": should be a domain with at least three segments separated by dots",
                "webhooks[0].rules[0].operations[0]: Unsupported value: \"PATCH\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
                "webhooks[0].rules[0].apiGroups: Required value",
                "webhooks[0].rules[0].scope: Unsupported value: \"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
                "webhooks[0].failurePolicy: Unsupported value: \"Maybe\": supported values: \"Fail\", \"Ignore\"",
                "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
                "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "webhooks[0].clientConfig.url: Invalid value: \"x=1\": query parameters are not permitted in the URL",
                "webhooks[0].admissionReviewVersions: Invalid value: [\"v2\"]: must include at least one of v1, v1beta1",
                "webhooks[1].name: Invalid value: \"short.com\": should be a domain with at least three segments separated by dots",
                "webhooks[1].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[1].clientConfig: Required value: exactly one of url or service is required",
                "webhooks[1].name: Duplicate value: \"short.com\"",
            ]
        );
    }

    #[test]
    fn services_need_a_name_a_namespace_a_port_and_a_clean_path() {
        let v = json!({"webhooks": [{"name": "a.b.c", "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"port": 0, "path": "/a//b"}}}]});
        assert_eq!(
            messages(v, false),
            vec![
                "webhooks[0].clientConfig.service.name: Required value",
                "webhooks[0].clientConfig.service.namespace: Required value",
                "webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
                "webhooks[0].clientConfig.service.path: Invalid value: \"/a//b\": segment[1] may not be empty",
            ]
        );
    }
}
