//! The create-only review kinds: answered from the request, never stored. The server has no
//! authorization, so every access review is allowed; a token review authenticates the server's
//! own token and the service account tokens it issued (`crate::token`).

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
/// the service account that sent it (a `SelfSubjectReview` describes it), `None` for the
/// server's own token.
pub(crate) fn answer(
    res: &ResourceInfo,
    mut body: Map<String, Value>,
    token: Option<&str>,
    requester: Option<&crate::token::User>,
    service_account: &ServiceAccountAuth<'_>,
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
                return Err(ApiError::invalid(
                    &res.kind,
                    &res.group,
                    "",
                    &[(
                        "spec.resourceAttributes".to_string(),
                        "FieldValueInvalid".to_string(),
                        "exactly one of nonResourceAttributes or resourceAttributes must be specified".to_string(),
                    )],
                ));
            }
            json!({"allowed": true, "reason": "kinformer-apiserver has no authorization: everything is allowed"})
        }
        "SelfSubjectRulesReview" => json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        }),
        "SelfSubjectReview" => match requester {
            Some(user) => json!({"userInfo": user.to_json()}),
            None => json!({"userInfo": {"username": USER, "groups": GROUPS}}),
        },
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
        )
        .unwrap();
        assert_eq!(out["status"]["allowed"], true);
        assert_eq!(out["kind"], "SelfSubjectAccessReview");
        assert_eq!(out["apiVersion"], "authorization.k8s.io/v1");
        let e = answer(&r, body(json!({"spec": {}})), None, None, &no_sa).unwrap_err();
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
        )
        .unwrap();
        assert_eq!(ok["status"]["authenticated"], true);
        let bad = answer(
            &r,
            body(json!({"spec": {"token": "x"}})),
            Some("t"),
            None,
            &no_sa,
        )
        .unwrap();
        assert_eq!(bad["status"].get("authenticated"), None);
    }
}
