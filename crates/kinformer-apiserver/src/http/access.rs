//! Who is asking and what they ask, as kube-apiserver reads it before authorizing: a request
//! without a bearer token is anonymous (`system:anonymous`), one with a token that no
//! authenticator accepts is 401; a request's attributes (verb, group, resource, subresource,
//! namespace, name, or a path) are read from its path and query as kube's
//! `RequestInfoFactory` reads them, for any resource, served or not; and a request the
//! authorizer ([`crate::rbac`]) refuses is 403 Forbidden in its words.
//!
//! With RBAC off ([`crate::ServerConfig::rbac`]) an anonymous request may `GET` `/healthz`,
//! `/livez`, `/readyz`, `/version` and `/version/` (what the `system:public-info-viewer` role
//! allows) and nothing else.

use std::borrow::Cow;

use axum::http::Method;
use serde_json::{Map, Value};

use crate::rbac::Attributes;

use crate::options::{parse_query, percent_decode};
use crate::status::ApiError;

/// The bearer token of an `Authorization` header, as kube's bearer-token authenticator reads
/// it: the header trimmed, split on spaces into at most three parts, the first `bearer` in any
/// case, the second the token. `None` (no header, another scheme, an empty token) means the
/// request carries no credentials and is anonymous.
pub(crate) fn bearer_token(header: Option<&[u8]>) -> Option<&[u8]> {
    let h = header?.trim_ascii();
    let mut parts = h.splitn(3, |b| *b == b' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case(b"bearer") && !token.is_empty()).then_some(token)
}

/// Whether `system:anonymous` may make a request with these attributes when there is no RBAC
/// (what `system:public-info-viewer` allows: `GET` of its paths).
pub(crate) fn public_request(a: &Attributes) -> bool {
    !a.resource_request
        && a.verb == "get"
        && matches!(
            a.path.as_str(),
            "/healthz" | "/livez" | "/readyz" | "/version" | "/version/"
        )
}

/// [`public_request`] of a method and path.
#[cfg(test)]
fn public(method: &Method, path: &str) -> bool {
    public_request(&non_resource(method, path))
}

/// What kube-apiserver cannot read attributes from: a `watch` or `proxy` path verb with
/// nothing after it (`/api/v1/watch`). Its request-info filter, which runs before
/// authentication, answers every such request 500.
#[derive(Debug, PartialEq)]
struct NoKind;

/// A request for a path outside the API's resources: its verb is the HTTP method's.
fn non_resource(method: &Method, path: &str) -> Attributes {
    Attributes {
        verb: method.as_str().to_ascii_lowercase(),
        path: decode_segment(path).into_owned(),
        ..Attributes::default()
    }
}

/// A path's segments as Go splits the trimmed path (empty segments stay), each decoded as
/// `url.URL.Path` is; only a segment with a `%` is copied.
fn segments(path: &str) -> Vec<Cow<'_, str>> {
    path.trim_matches('/')
        .split('/')
        .map(decode_segment)
        .collect()
}

/// A path segment decoded as Go's `url.URL.Path` is (`+` stays a plus there).
fn decode_segment(s: &str) -> Cow<'_, str> {
    if s.contains('%') {
        Cow::Owned(percent_decode(&s.replace('+', "%2B")))
    } else {
        Cow::Borrowed(s)
    }
}

/// The group and the parts after the version of a resource request (`/api/{version}/...`,
/// `/apis/{group}/{version}/...` with at least one part after the version); `None` for any
/// other path.
fn resource_parts<'a>(segs: &'a [Cow<'a, str>]) -> Option<(&'a str, &'a [Cow<'a, str>])> {
    match segs {
        [prefix, _version, rest @ ..] if prefix == "api" && !rest.is_empty() => Some(("", rest)),
        [prefix, group, _version, rest @ ..] if prefix == "apis" && !rest.is_empty() => {
            Some((group, rest))
        }
        _ => None,
    }
}

/// Whether `parts` (after the version) begin with a path verb.
fn path_verb(parts: &[Cow<'_, str>]) -> bool {
    matches!(parts.first().map(|p| p.as_ref()), Some("watch" | "proxy"))
}

/// kube-apiserver's answer to a path it cannot read attributes from (see [`NoKind`]), for
/// every client, with credentials or without: its text, or `None` for any other path. Runs on
/// every request: one split of the path, nothing more.
pub(crate) fn request_info_error(path: &str, request_uri: &str) -> Option<String> {
    if !path.starts_with("/api") {
        return None;
    }
    let segs = segments(path);
    let (_, parts) = resource_parts(&segs)?;
    (path_verb(parts) && parts.len() < 2).then(|| {
        format!(
            "Internal Server Error: {request_uri:?}: failed to create RequestInfo: unable to \
             determine kind and namespace from url, {request_uri}\n"
        )
    })
}

fn attributes(method: &Method, path: &str, query: Option<&str>) -> Result<Attributes, NoKind> {
    let segs = segments(path);
    let Some((group, mut parts)) = resource_parts(&segs) else {
        return Ok(non_resource(method, path));
    };
    let mut a = Attributes {
        resource_request: true,
        group: group.to_string(),
        ..Attributes::default()
    };
    if path_verb(parts) {
        if parts.len() < 2 {
            return Err(NoKind);
        }
        a.verb = parts[0].to_string();
        parts = &parts[1..];
    } else {
        a.verb = match *method {
            Method::POST => "create",
            Method::GET | Method::HEAD => "get",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE => "delete",
            _ => "",
        }
        .to_string();
    }
    if parts[0] == "namespaces" && parts.len() > 1 {
        a.namespace = parts[1].to_string();
        if parts.len() > 2 && !matches!(parts[2].as_ref(), "status" | "finalize") {
            parts = &parts[2..];
        }
    }
    a.resource = parts[0].to_string();
    if let Some(name) = parts.get(1) {
        a.name = name.to_string();
    }
    // a proxy path's third part is where to, not a subresource
    if let (Some(sub), false) = (parts.get(2), a.verb == "proxy") {
        a.subresource = sub.to_string();
    }
    if a.name.is_empty() && a.verb == "get" {
        let q = parse_query(query);
        a.verb = match q.get("watch").map(String::as_str) {
            Some(v) if v != "0" && !v.eq_ignore_ascii_case("false") => "watch",
            _ => "list",
        }
        .to_string();
        // a field selector that requires one name names the object (when the name could be a
        // path segment)
        let selected = q.get("fieldSelector").and_then(|s| {
            s.split(',').find_map(|term| {
                let v = term.trim().strip_prefix("metadata.name")?.trim_start();
                let v = v.strip_prefix("==").or_else(|| v.strip_prefix('='))?;
                Some(v.trim())
            })
        });
        if let Some(name) = selected
            .filter(|n| !n.is_empty() && !n.contains(['/', '%']) && !matches!(*n, "." | ".."))
        {
            a.name = name.to_string();
        }
    }
    if a.name.is_empty() && a.verb == "delete" {
        a.verb = "deletecollection".into();
    }
    Ok(a)
}

/// A request's attributes; a path kube cannot read attributes from is answered before anyone
/// is authenticated (`request_info_error`), and is a path like any other were it asked.
pub(crate) fn request_attributes(method: &Method, path: &str, query: Option<&str>) -> Attributes {
    attributes(method, path, query).unwrap_or_else(|NoKind| non_resource(method, path))
}

/// The 403 kube-apiserver answers when the authorizer does not allow `user` a request with
/// attributes `a`: `pods "x" is forbidden: User "system:anonymous" cannot get resource "pods"
/// in API group "" in the namespace "default"`, or `forbidden: User "system:anonymous" cannot
/// get path "/api"`; the authorizer's `reason`, if any, after a colon.
pub(crate) fn forbidden(user: &str, a: &Attributes, reason: &str) -> ApiError {
    let because = |m: String| {
        if reason.is_empty() {
            m
        } else {
            format!("{m}: {reason}")
        }
    };
    let a = a.clone();
    if !a.resource_request {
        let mut e = ApiError::new(
            403,
            "Forbidden",
            format!(
                "forbidden: {}",
                because(format!("User {user:?} cannot {} path {:?}", a.verb, a.path))
            ),
        );
        e.details = Some(Value::Object(Map::new()));
        return e;
    }
    let resource = if a.subresource.is_empty() {
        a.resource.clone()
    } else {
        format!("{}/{}", a.resource, a.subresource)
    };
    let scope = if a.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace {:?}", a.namespace)
    };
    let why = because(format!(
        "User {user:?} cannot {} resource {resource:?} in API group {:?} {scope}",
        a.verb, a.group
    ));
    let group_resource = if a.group.is_empty() {
        a.resource.clone()
    } else {
        format!("{}.{}", a.resource, a.group)
    };
    // apimachinery's NewForbidden leaves out a resource without a name and a group, and the
    // object's name with it
    let message = if a.resource.is_empty() && a.group.is_empty() {
        format!("forbidden: {why}")
    } else if a.name.is_empty() {
        format!("{group_resource} is forbidden: {why}")
    } else {
        format!("{group_resource} {:?} is forbidden: {why}", a.name)
    };
    let mut details = Map::new();
    if !a.name.is_empty() {
        details.insert("name".into(), Value::String(a.name));
    }
    if !a.group.is_empty() {
        details.insert("group".into(), Value::String(a.group));
    }
    if !a.resource.is_empty() {
        details.insert("kind".into(), Value::String(a.resource));
    }
    let mut e = ApiError::new(403, "Forbidden", message);
    e.details = Some(Value::Object(details));
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every message here is what kube-apiserver v1.36.3 (the e2e harness: RBAC, anonymous
    /// authentication on) answered a request without credentials, on 2026-11-27.
    #[test]
    fn forbidden_messages_are_kube_apiservers() {
        let cases: &[(&str, &str, Option<&str>, &str)] = &[
            (
                "GET",
                "/api/v1/pods",
                None,
                r#"pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" at the cluster scope"#,
            ),
            (
                "GET",
                "/api/v1/namespaces/default/pods/x",
                None,
                r#"pods "x" is forbidden: User "system:anonymous" cannot get resource "pods" in API group "" in the namespace "default""#,
            ),
            (
                "GET",
                "/api/v1/namespaces/default/pods",
                Some("watch=1"),
                r#"pods is forbidden: User "system:anonymous" cannot watch resource "pods" in API group "" in the namespace "default""#,
            ),
            (
                "GET",
                "/api/v1/namespaces/default/pods/x/status",
                None,
                r#"pods "x" is forbidden: User "system:anonymous" cannot get resource "pods/status" in API group "" in the namespace "default""#,
            ),
            (
                "GET",
                "/apis/apps/v1/deployments",
                None,
                r#"deployments.apps is forbidden: User "system:anonymous" cannot list resource "deployments" in API group "apps" at the cluster scope"#,
            ),
            (
                "GET",
                "/api",
                None,
                r#"forbidden: User "system:anonymous" cannot get path "/api""#,
            ),
            (
                "GET",
                "/apis/apps/v1",
                None,
                r#"forbidden: User "system:anonymous" cannot get path "/apis/apps/v1""#,
            ),
            (
                "GET",
                "/api/v1",
                None,
                r#"forbidden: User "system:anonymous" cannot get path "/api/v1""#,
            ),
            (
                "GET",
                "/metrics",
                None,
                r#"forbidden: User "system:anonymous" cannot get path "/metrics""#,
            ),
            (
                "POST",
                "/api",
                None,
                r#"forbidden: User "system:anonymous" cannot post path "/api""#,
            ),
            (
                "GET",
                "/apis/nope.example.com/v1/foos",
                None,
                r#"foos.nope.example.com is forbidden: User "system:anonymous" cannot list resource "foos" in API group "nope.example.com" at the cluster scope"#,
            ),
            (
                "GET",
                "/api/v1/namespaces",
                None,
                r#"namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope"#,
            ),
            (
                "GET",
                "/api/v1/namespaces/default",
                None,
                r#"namespaces "default" is forbidden: User "system:anonymous" cannot get resource "namespaces" in API group "" in the namespace "default""#,
            ),
            (
                "GET",
                "/api/v1/namespaces/default/status",
                None,
                r#"namespaces "default" is forbidden: User "system:anonymous" cannot get resource "namespaces/status" in API group "" in the namespace "default""#,
            ),
            (
                "GET",
                "/api/v1/watch/pods",
                None,
                r#"pods is forbidden: User "system:anonymous" cannot watch resource "pods" in API group "" at the cluster scope"#,
            ),
            (
                "GET",
                "/api/v1/watch/namespaces/default/pods/x",
                None,
                r#"pods "x" is forbidden: User "system:anonymous" cannot watch resource "pods" in API group "" in the namespace "default""#,
            ),
            (
                "GET",
                "/api/v1/namespaces/default/pods/x",
                Some("watch=true"),
                r#"pods "x" is forbidden: User "system:anonymous" cannot get resource "pods" in API group "" in the namespace "default""#,
            ),
            (
                "GET",
                "/api/v1/nodes/n1/proxy/foo",
                None,
                r#"nodes "n1" is forbidden: User "system:anonymous" cannot get resource "nodes/proxy" in API group "" at the cluster scope"#,
            ),
            (
                "GET",
                "/apis/apps/v1/namespaces/default/deployments/d/scale",
                None,
                r#"deployments.apps "d" is forbidden: User "system:anonymous" cannot get resource "deployments/scale" in API group "apps" in the namespace "default""#,
            ),
            (
                "GET",
                "/api/v2/pods",
                None,
                r#"pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" at the cluster scope"#,
            ),
            (
                "GET",
                "/api/v1/namespaces/default/pods/x/y/z",
                None,
                r#"pods "x" is forbidden: User "system:anonymous" cannot get resource "pods/y" in API group "" in the namespace "default""#,
            ),
            (
                "POST",
                "/api/v1/namespaces/default/configmaps",
                None,
                r#"configmaps is forbidden: User "system:anonymous" cannot create resource "configmaps" in API group "" in the namespace "default""#,
            ),
            (
                "DELETE",
                "/api/v1/namespaces/default/configmaps",
                None,
                r#"configmaps is forbidden: User "system:anonymous" cannot deletecollection resource "configmaps" in API group "" in the namespace "default""#,
            ),
            (
                "PATCH",
                "/api/v1/namespaces/default/configmaps/a",
                None,
                r#"configmaps "a" is forbidden: User "system:anonymous" cannot patch resource "configmaps" in API group "" in the namespace "default""#,
            ),
            // paths with empty segments and path verbs, found by sending random paths to both
            (
                "GET",
                "/api//v1/binding/serviceaccounts",
                Some("watch="),
                r#"v1 "binding" is forbidden: User "system:anonymous" cannot get resource "v1/serviceaccounts" in API group "" at the cluster scope"#,
            ),
            (
                "GET",
                "/apis/token//namespaces",
                None,
                r#"namespaces.token is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "token" at the cluster scope"#,
            ),
            (
                "GET",
                "/api/proxy//x/status/n1/proxy",
                None,
                r#"forbidden: User "system:anonymous" cannot get resource "/status" in API group "" at the cluster scope"#,
            ),
            (
                "GET",
                "/api/openapi/watch/finalize//binding/watch/v2",
                None,
                r#"finalize is forbidden: User "system:anonymous" cannot watch resource "finalize/binding" in API group "" at the cluster scope"#,
            ),
            (
                "POST",
                "/apis/eviction/namespaces//proxy/metrics/n1/status",
                None,
                r#".eviction "proxy" is forbidden: User "system:anonymous" cannot create resource "/metrics" in API group "eviction" at the cluster scope"#,
            ),
            (
                "PUT",
                "/api/proxy/kube-system//configmaps/apis",
                Some("watch=0"),
                r#"kube-system is forbidden: User "system:anonymous" cannot update resource "kube-system/configmaps" in API group "" at the cluster scope"#,
            ),
        ];
        for (method, path, query, message) in cases {
            let a = request_attributes(&method.parse().unwrap(), path, *query);
            let e = forbidden(crate::rbac::ANONYMOUS, &a, "");
            assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"), "{path}");
            assert_eq!(e.message, *message, "{method} {path}");
        }
        let details = |path: &str| {
            let a = request_attributes(&Method::GET, path, None);
            forbidden(crate::rbac::ANONYMOUS, &a, "").details.unwrap()
        };
        assert_eq!(
            details("/api/v1/namespaces/default/pods/x"),
            serde_json::json!({"name": "x", "kind": "pods"})
        );
        assert_eq!(
            details("/apis/apps/v1/deployments"),
            serde_json::json!({"group": "apps", "kind": "deployments"})
        );
        assert_eq!(details("/api"), serde_json::json!({}));
    }

    fn attrs(method: &Method, path: &str, query: Option<&str>) -> Attributes {
        attributes(method, path, query).unwrap()
    }

    #[test]
    fn a_list_by_one_name_and_odd_paths() {
        let a = attrs(
            &Method::GET,
            "/api/v1/namespaces/ns/pods",
            Some("fieldSelector=metadata.name%3Dweb-1"),
        );
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("list", "web-1"));
        let a = attrs(
            &Method::GET,
            "/api/v1/pods",
            Some("watch=1&fieldSelector=metadata.namespace%3Dns,metadata.name%3D%3Dweb-2"),
        );
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("watch", "web-2"));
        let a = attrs(
            &Method::GET,
            "/api/v1/pods",
            Some("fieldSelector=metadata.name!%3Dweb-3"),
        );
        assert_eq!(a.name, "");
        let a = attrs(&Method::GET, "/api/v1/pods", Some("watch=false"));
        assert_eq!(a.verb, "list");
        let a = attrs(&Method::HEAD, "/api/v1/pods", None);
        assert_eq!(a.verb, "list");
        assert_eq!(attributes(&Method::GET, "/api/v1/watch", None), Err(NoKind));
        assert_eq!(
            request_info_error("/api/v1/watch", "/api/v1/watch?x=1").as_deref(),
            Some(
                "Internal Server Error: \"/api/v1/watch?x=1\": failed to create RequestInfo: \
                 unable to determine kind and namespace from url, /api/v1/watch?x=1\n"
            )
        );
        assert_eq!(
            request_info_error("/api/v1/watch/pods", "/api/v1/watch/pods"),
            None
        );
        assert_eq!(request_info_error("/version", "/version"), None);
        let a = attrs(&Method::GET, "/api/v1/namespaces/ns/pods/a%20b", None);
        assert_eq!(a.name, "a b");
    }

    #[test]
    fn bearer_tokens_as_kube_reads_them() {
        assert_eq!(bearer_token(Some(b"Bearer abc")), Some(&b"abc"[..]));
        assert_eq!(bearer_token(Some(b"  bearer abc  ")), Some(&b"abc"[..]));
        assert_eq!(bearer_token(Some(b"Bearer abc def")), Some(&b"abc"[..]));
        for anonymous in [
            &b""[..],
            b"Bearer",
            b"Bearer ",
            b"Bearer  abc",
            b"Basic YTpi",
        ] {
            assert_eq!(bearer_token(Some(anonymous)), None, "{anonymous:?}");
        }
        assert_eq!(bearer_token(None), None);
    }

    #[test]
    fn only_public_info_is_open_to_anonymous() {
        for p in ["/healthz", "/livez", "/readyz", "/version", "/version/"] {
            assert!(public(&Method::GET, p), "{p}");
            assert!(!public(&Method::POST, p), "{p}");
        }
        for p in ["/readyz/ping", "/healthz/etcd", "/api", "/metrics", "/"] {
            assert!(!public(&Method::GET, p), "{p}");
        }
    }
}
