//! Who a request acts as, and whether it may: authentication (the server's own token, a
//! service account token, or none: `system:anonymous`), then kube-apiserver's impersonation
//! filter (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`, `Impersonate-Extra-*`:
//! each thing impersonated must be allowed the `impersonate` verb), then the authorizer
//! ([`crate::rbac`]).

use axum::extract::Request;
use http::HeaderMap;
use serde_json::{Map, Value};

use super::access;
use crate::context::Context;
use crate::rbac::{self, Attributes};
use crate::status::ApiError;
use crate::token::User;

/// The user a request acts as: `None` for the server's own identity (`system:masters`), which
/// may do everything.
pub(crate) type Acting = Option<User>;

/// Who `req` acts as, once authenticated, impersonation applied and the request authorized;
/// else the error to answer.
pub(crate) fn admit(ctx: &Context, req: &Request) -> Result<Acting, ApiError> {
    let requester = authenticate(ctx, req)?;
    let wanted = wanted(req.headers())?;
    if requester.is_none() && wanted.is_none() {
        // the server's own identity, as itself (the usual case): nothing to read or check
        return Ok(None);
    }
    let a = access::request_attributes(req.method(), req.uri().path(), req.uri().query());
    let acting = match wanted {
        None => requester,
        Some(w) => Some(impersonate(ctx, &w, requester, &a)?),
    };
    if let Some(user) = &acting {
        check(ctx, user, &a, None)?;
    }
    Ok(acting)
}

/// The requester its credentials say: `None` for the server's own token (and for every
/// request when the server takes no token), a service account for its token, `system:anonymous`
/// without credentials; 401 for a token nobody accepts.
fn authenticate(ctx: &Context, req: &Request) -> Result<Acting, ApiError> {
    let Some(token) = &ctx.token else {
        return Ok(None);
    };
    let header = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    match access::bearer_token(header) {
        None => Ok(Some(rbac::anonymous())),
        Some(given) if crate::tls::token_matches(given, token) => Ok(None),
        Some(given) => std::str::from_utf8(given)
            .ok()
            .and_then(|t| {
                ctx.tokens
                    .authenticate(&ctx.api, t, &[], crate::token::now())
                    .ok()
            })
            .map(Some)
            .ok_or_else(|| ApiError::new(401, "Unauthorized", "Unauthorized")),
    }
}

/// Who the impersonation headers ask to act as (`processImpersonationHeaders`).
#[derive(Debug, Default)]
struct Wanted {
    name: String,
    uid: String,
    groups: Vec<String>,
    /// Keys in the order first given, each with its values.
    extra: Vec<(String, Vec<String>)>,
}

impl Wanted {
    /// Go's `%#v` of the `*user.DefaultInfo`.
    fn go_syntax(&self) -> String {
        let strings = |l: &[String]| -> String {
            let quoted: Vec<String> = l.iter().map(|s| format!("{s:?}")).collect();
            format!("[]string{{{}}}", quoted.join(", "))
        };
        let groups = if self.groups.is_empty() {
            "[]string(nil)".to_string()
        } else {
            strings(&self.groups)
        };
        let extra = if self.extra.is_empty() {
            "map[string][]string(nil)".to_string()
        } else {
            let mut keys: Vec<&(String, Vec<String>)> = self.extra.iter().collect();
            keys.sort_by(|a, b| a.0.cmp(&b.0));
            let entries: Vec<String> = keys
                .iter()
                .map(|(k, v)| format!("{k:?}:{}", strings(v)))
                .collect();
            format!("map[string][]string{{{}}}", entries.join(", "))
        };
        format!(
            "&user.DefaultInfo{{Name:{:?}, UID:{:?}, Groups:{groups}, Extra:{extra}}}",
            self.name, self.uid
        )
    }

    fn only_username(&self) -> bool {
        self.uid.is_empty() && self.groups.is_empty() && self.extra.is_empty()
    }
}

/// The service account a username names (`system:serviceaccount:<ns>:<name>`).
fn service_account(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

/// The node a username names (`system:node:<name>`, a DNS subdomain).
fn node(username: &str) -> Option<&str> {
    let name = username.strip_prefix("system:node:")?;
    crate::objects::validate::dns1123_subdomain_errors(name)
        .is_empty()
        .then_some(name)
}

/// What the impersonation headers ask for; `None` when they ask for nothing.
fn wanted(headers: &HeaderMap) -> Result<Option<Wanted>, ApiError> {
    let first = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let mut w = Wanted {
        name: first("impersonate-user"),
        uid: first("impersonate-uid"),
        groups: headers
            .get_all("impersonate-group")
            .iter()
            .filter_map(|v| v.to_str().ok().map(String::from))
            .collect(),
        extra: Vec::new(),
    };
    for (name, value) in headers {
        let Some(key) = name.as_str().strip_prefix("impersonate-extra-") else {
            continue;
        };
        let key = crate::options::percent_decode(key);
        let Ok(v) = value.to_str() else { continue };
        match w.extra.iter_mut().find(|(k, _)| *k == key) {
            Some((_, values)) => values.push(v.to_string()),
            None => w.extra.push((key, vec![v.to_string()])),
        }
    }
    if w.name.is_empty() {
        if w.only_username() {
            return Ok(None);
        }
        return Err(ApiError::bad_request(format!(
            "requested {} without impersonating a user name",
            w.go_syntax()
        )));
    }
    Ok(Some(w))
}

/// One impersonation mode of kube-apiserver 1.36's filter: the constrained ones
/// (`impersonate-on:<mode>:<verb>` on the request, then `impersonate:<mode>` on each thing
/// impersonated, in `authentication.k8s.io`) or the legacy one (`impersonate`).
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    ArbitraryNode,
    ServiceAccount,
    UserInfo,
    Legacy,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::ArbitraryNode => "arbitrary-node",
            Mode::ServiceAccount => "serviceaccount",
            Mode::UserInfo => "user-info",
            Mode::Legacy => "",
        }
    }

    /// Whether the mode may impersonate `w` at all (its filter).
    fn applies(self, w: &Wanted) -> bool {
        match self {
            Mode::ArbitraryNode => w.only_username() && node(&w.name).is_some(),
            Mode::ServiceAccount => w.only_username() && service_account(&w.name).is_some(),
            Mode::UserInfo => node(&w.name).is_none() && service_account(&w.name).is_none(),
            Mode::Legacy => true,
        }
    }
}

/// Whether `requester` may do `a`, or the 403 that says why not.
fn check(
    ctx: &Context,
    requester: &User,
    a: &Attributes,
    reason: Option<&str>,
) -> Result<(), ApiError> {
    if let Some(reason) = reason {
        return Err(access::forbidden(&requester.username, a, reason));
    }
    let d = if ctx.config.rbac {
        rbac::authorize(&ctx.api, &ctx.rbac_cache, requester, a)
    } else {
        rbac::Decision {
            allowed: requester.username != rbac::ANONYMOUS || access::public_request(a),
            reason: String::new(),
        }
    };
    if d.allowed {
        Ok(())
    } else {
        Err(access::forbidden(&requester.username, a, &d.reason))
    }
}

/// The user `w` becomes through `mode`, if `requester` may impersonate it so.
fn try_mode(
    ctx: &Context,
    requester: &User,
    request: &Attributes,
    w: &Wanted,
    mode: Mode,
) -> Result<User, ApiError> {
    let constrained = mode != Mode::Legacy;
    if constrained {
        let on = Attributes {
            verb: format!("impersonate-on:{}:{}", mode.name(), request.verb),
            ..request.clone()
        };
        check(ctx, requester, &on, None)?;
    }
    let (verb, group) = if constrained {
        (
            format!("impersonate:{}", mode.name()),
            "authentication.k8s.io",
        )
    } else {
        ("impersonate".to_string(), "")
    };
    let attrs = |group: &str, resource: &str, name: &str| Attributes {
        resource_request: true,
        verb: verb.clone(),
        group: group.to_string(),
        resource: resource.to_string(),
        name: name.to_string(),
        ..Attributes::default()
    };
    let mut groups = w.groups.clone();
    let mut user = attrs(group, "users", &w.name);
    if let (true, Some(n)) = (constrained, node(&w.name)) {
        user.resource = "nodes".into();
        user.name = n.to_string();
        groups = vec!["system:nodes".to_string()];
    }
    if let Some((ns, name)) = service_account(&w.name) {
        user.resource = "serviceaccounts".into();
        user.namespace = ns.to_string();
        user.name = name.to_string();
        if groups.is_empty() {
            groups = vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{ns}"),
            ];
        }
    }
    check(ctx, requester, &user, None)?;
    if !w.uid.is_empty() {
        check(
            ctx,
            requester,
            &attrs("authentication.k8s.io", "uids", &w.uid),
            None,
        )?;
    }
    if !w.groups.is_empty() {
        let mut g = attrs(group, "groups", "");
        if constrained && w.groups.iter().any(String::is_empty) {
            let why = "impersonating the empty string group is not allowed";
            check(ctx, requester, &g, Some(why))?;
        }
        if constrained && w.groups.iter().any(|x| x == rbac::MASTERS) {
            g.name = rbac::MASTERS.into();
            let why = "impersonating the system:masters group is not allowed";
            check(ctx, requester, &g, Some(why))?;
        }
        for name in &w.groups {
            g.name = name.clone();
            check(ctx, requester, &g, None)?;
        }
    }
    let mut extra = Map::new();
    for (key, values) in &w.extra {
        for v in values {
            let mut e = attrs("authentication.k8s.io", "userextras", v);
            e.subresource = key.clone();
            check(ctx, requester, &e, None)?;
        }
        extra.insert(key.clone(), Value::from(values.clone()));
    }
    if w.name == rbac::ANONYMOUS {
        if !groups.iter().any(|g| g == rbac::UNAUTHENTICATED) {
            groups.push(rbac::UNAUTHENTICATED.into());
        }
    } else if !groups
        .iter()
        .any(|g| g == rbac::UNAUTHENTICATED || g == rbac::AUTHENTICATED)
    {
        groups.push(rbac::AUTHENTICATED.into());
    }
    Ok(User {
        username: w.name.clone(),
        uid: w.uid.clone(),
        groups,
        extra,
        audiences: Vec::new(),
    })
}

/// The user `requester` acts as when it impersonates `w` (kube-apiserver
/// 1.36's impersonation filter with constrained impersonation): the modes that apply are tried
/// in order (arbitrary node, service account, user info, then the legacy `impersonate` verb)
/// and the first that allows it wins; else the first refusal is the answer. Not tried: the
/// associated-node mode (a node agent's service account impersonating its own node).
fn impersonate(
    ctx: &Context,
    w: &Wanted,
    requester: Acting,
    request: &Attributes,
) -> Result<User, ApiError> {
    let Some(requester) = requester else {
        // the server's own identity may impersonate anyone
        return try_mode(ctx, &crate::review::admin(), request, w, Mode::Legacy);
    };
    let mut first_error = None;
    for mode in [
        Mode::ArbitraryNode,
        Mode::ServiceAccount,
        Mode::UserInfo,
        Mode::Legacy,
    ] {
        if !mode.applies(w) {
            continue;
        }
        match try_mode(ctx, &requester, request, w, mode) {
            Ok(user) => return Ok(user),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| ApiError::internal("all impersonation modes failed")))
}
