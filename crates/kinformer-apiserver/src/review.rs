//! The create-only review kinds: answered from the request, never stored. Access reviews are
//! answered by the authorizer ([`crate::rbac`]; with RBAC off every one is allowed); a token
//! review authenticates the server's own token and the service account tokens it issued
//! (`crate::token`).

use serde_json::{Map, Value, json};

use crate::resource::ResourceInfo;
use crate::status::ApiError;

/// The user every authenticated request acts as.
pub(crate) const USER: &str = "kinformer-admin";
pub(crate) const GROUPS: &[&str] = &["system:masters", "system:authenticated"];

/// Authenticates a service account token for the given audiences (see `crate::token`).
pub(crate) type ServiceAccountAuth<'a> =
    dyn Fn(&str, &[String]) -> Result<crate::token::User, String> + 'a;

/// Answers a review `body` of kind `res.kind`: the body with its `status` filled in (and an
/// empty `metadata` if it had none), as kube-apiserver answers a create of one. `requester` is
/// the user that sent it (a `SelfSubjectReview` describes it), `None` for the server's own
/// token; `rbac` the store access reviews are decided over (`None`: RBAC is off).
pub(crate) fn answer(
    res: &ResourceInfo,
    mut body: Map<String, Value>,
    token: Option<&str>,
    requester: Option<&crate::token::User>,
    service_account: &ServiceAccountAuth<'_>,
    rbac: Option<(&crate::api::Api, &crate::rbac::Cache)>,
    writer: Option<&crate::objects::Writer>,
) -> Result<Value, ApiError> {
    crate::objects::check_type_meta(res, &body)?;
    body.insert("apiVersion".into(), Value::String(res.api_version()));
    body.insert("kind".into(), Value::String(res.kind.clone()));
    let meta = body
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        return Err(ApiError::bad_request("metadata must be an object"));
    }
    // kube-apiserver's SelfSubjectReview storage stamps its answer (e2e/diff "token / whoami").
    if res.kind == "SelfSubjectReview"
        && let Some(Value::Object(m)) = body.get_mut("metadata")
    {
        m.insert(
            "creationTimestamp".into(),
            Value::String(crate::objects::now_rfc3339()),
        );
    }
    let spec = body.get("spec").cloned().unwrap_or(Value::Null);
    let status = match res.kind.as_str() {
        "SelfSubjectAccessReview" | "SubjectAccessReview" | "LocalSubjectAccessReview" => {
            let attrs = spec
                .get("resourceAttributes")
                .or(spec.get("nonResourceAttributes"));
            if attrs.is_none() {
                return Err(invalid(
                    res,
                    "spec.resourceAttributes",
                    "null",
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                ));
            }
            // what kube-apiserver decodes and answers: empty fields dropped (omitempty), the
            // requester's managedFields entry (a create's, by the field manager)
            let spec = without_empty(spec);
            body.insert("spec".into(), spec.clone());
            if let Some(w) = writer {
                crate::objects::managed_fields::update_managed_fields(res, None, &mut body, w);
            }
            match rbac {
                None => {
                    json!({"allowed": true, "reason": "kinformer-apiserver has no authorization: everything is allowed"})
                }
                Some(rbac) => access_review(res, &body, &spec, requester, rbac)?,
            }
        }
        "SelfSubjectRulesReview" => match rbac {
            None => json!({
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": false,
            }),
            Some((api, cache)) => {
                let ns = spec.get("namespace").and_then(Value::as_str).unwrap_or("");
                // kube-apiserver answers a new review: its spec empty
                body.insert("spec".into(), json!({}));
                let user = requester.cloned().unwrap_or_else(admin);
                let (resource, paths, errors) = crate::rbac::rules_for(api, cache, &user, ns);
                let mut status = json!({
                    "resourceRules": resource,
                    "nonResourceRules": paths,
                    "incomplete": !errors.is_empty(),
                });
                if !errors.is_empty() {
                    status["evaluationError"] = json!(errors.join(", "));
                }
                status
            }
        },
        "SelfSubjectReview" => {
            json!({"userInfo": requester.cloned().unwrap_or_else(admin).to_json()})
        }
        "TokenReview" => {
            let given = spec.get("token").and_then(|t| t.as_str()).unwrap_or("");
            let audiences: Vec<String> = match spec.get("audiences") {
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect(),
                _ => Vec::new(),
            };
            // A JWT is a service account token: it authenticates as its service account or
            // not at all. Anything else is the server's own token.
            let jwt = given.split('.').count() == 3;
            let sa = jwt.then(|| service_account(given, &audiences));
            if let Some(Ok(user)) = &sa {
                json!({"authenticated": true, "user": user.to_json(), "audiences": user.audiences})
            } else if let Some(Err(why)) = &sa {
                json!({"user": {}, "error": why})
            } else if token.is_none_or(|t| t == given) {
                json!({"authenticated": true, "user": {"username": USER, "groups": GROUPS}, "audiences": spec.get("audiences").cloned().unwrap_or(json!([]))})
            } else {
                json!({"user": {}, "error": "invalid bearer token"})
            }
        }
        other => {
            return Err(ApiError::internal(&format!("no review for kind {other}")));
        }
    };
    body.insert("status".into(), status);
    Ok(Value::Object(body))
}

/// The server's own identity, as the authorizer sees it.
pub(crate) fn admin() -> crate::token::User {
    crate::token::User {
        username: USER.into(),
        uid: String::new(),
        groups: GROUPS.iter().map(|g| g.to_string()).collect(),
        extra: Map::new(),
        audiences: Vec::new(),
    }
}

/// A 422 of a review, one cause, as kube-apiserver words it: the review's kind is not set on
/// the object it validates (`.authorization.k8s.io "" is invalid: ...`); `value` as Go prints
/// it (`""`, `null`).
fn invalid(res: &ResourceInfo, field: &str, value: &str, message: &str) -> ApiError {
    ApiError::invalid(
        "",
        &res.group,
        "",
        &[(
            field.to_string(),
            "FieldValueInvalid".to_string(),
            format!("Invalid value: {value}: {message}"),
        )],
    )
}

/// An access review's spec as Go decodes and encodes it: empty strings, lists and maps
/// dropped (every field of it is `omitempty`), in its attributes too.
fn without_empty(spec: Value) -> Value {
    let Value::Object(m) = spec else { return spec };
    let out: Map<String, Value> = m
        .into_iter()
        .filter_map(|(k, v)| {
            let v = match v {
                Value::Object(inner) if k.ends_with("Attributes") => {
                    without_empty(Value::Object(inner))
                }
                other => other,
            };
            let empty = match &v {
                Value::String(s) => s.is_empty(),
                Value::Array(a) => a.is_empty(),
                Value::Object(o) => o.is_empty() && k == "extra",
                Value::Null => true,
                _ => false,
            };
            (!empty).then_some((k, v))
        })
        .collect();
    Value::Object(out)
}

/// The status of an access review: whether the user it asks about (the requester for
/// `SelfSubjectAccessReview`, `spec.user`/`spec.groups` otherwise) may do what it states,
/// decided by RBAC.
fn access_review(
    res: &ResourceInfo,
    body: &Map<String, Value>,
    spec: &Value,
    requester: Option<&crate::token::User>,
    (api, cache): (&crate::api::Api, &crate::rbac::Cache),
) -> Result<Value, ApiError> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let user = if res.kind == "SelfSubjectAccessReview" {
        requester.cloned().unwrap_or_else(admin)
    } else {
        let groups: Vec<String> = spec
            .get("groups")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|g| g.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let username = text(spec, "user");
        if username.is_empty() && groups.is_empty() {
            return Err(invalid(
                res,
                "spec.user",
                "\"\"",
                "at least one of user or group must be specified",
            ));
        }
        crate::token::User {
            username,
            uid: text(spec, "uid"),
            groups,
            extra: spec
                .get("extra")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            audiences: Vec::new(),
        }
    };
    let a = match spec.get("resourceAttributes") {
        Some(r) => {
            let namespace = text(r, "namespace");
            if res.kind == "LocalSubjectAccessReview" {
                let meta_ns = body
                    .get("metadata")
                    .map(|m| text(m, "namespace"))
                    .unwrap_or_default();
                if namespace != meta_ns {
                    return Err(invalid(
                        res,
                        "spec.resourceAttributes.namespace",
                        &format!("{namespace:?}"),
                        "must match metadata.namespace",
                    ));
                }
            }
            crate::rbac::Attributes {
                resource_request: true,
                verb: text(r, "verb"),
                group: text(r, "group"),
                namespace,
                resource: text(r, "resource"),
                subresource: text(r, "subresource"),
                name: text(r, "name"),
                path: String::new(),
            }
        }
        None => {
            let n = spec.get("nonResourceAttributes").unwrap_or(&Value::Null);
            crate::rbac::Attributes {
                verb: text(n, "verb"),
                path: text(n, "path"),
                ..Default::default()
            }
        }
    };
    let d = crate::rbac::authorize(api, cache, &user, &a);
    let mut status = json!({"allowed": d.allowed});
    if !d.reason.is_empty() {
        status["reason"] = json!(d.reason);
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::test_util::{body, res};

    fn no_sa(_: &str, _: &[String]) -> Result<crate::token::User, String> {
        Err("not a service account token".into())
    }

    #[test]
    fn access_reviews_are_allowed() {
        let r = res("selfsubjectaccessreviews");
        let out = answer(
            &r,
            body(json!({"spec": {"resourceAttributes": {"verb": "list", "resource": "pods"}}})),
            None,
            None,
            &no_sa,
            None,
            None,
        )
        .unwrap();
        assert_eq!(out["status"]["allowed"], true);
        assert_eq!(out["kind"], "SelfSubjectAccessReview");
        assert_eq!(out["apiVersion"], "authorization.k8s.io/v1");
        let e = answer(
            &r,
            body(json!({"spec": {}})),
            None,
            None,
            &no_sa,
            None,
            None,
        )
        .unwrap_err();
        assert_eq!(e.code, 422);
    }

    #[test]
    fn token_reviews_check_the_token() {
        let r = res("tokenreviews");
        let ok = answer(
            &r,
            body(json!({"spec": {"token": "t"}})),
            Some("t"),
            None,
            &no_sa,
            None,
            None,
        )
        .unwrap();
        assert_eq!(ok["status"]["authenticated"], true);
        let bad = answer(
            &r,
            body(json!({"spec": {"token": "x"}})),
            Some("t"),
            None,
            &no_sa,
            None,
            None,
        )
        .unwrap();
        assert_eq!(bad["status"].get("authenticated"), None);
    }
}
