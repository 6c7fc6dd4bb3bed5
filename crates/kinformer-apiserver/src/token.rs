//! Service account tokens: `POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token`
//! (an `authentication.k8s.io/v1` `TokenRequest`) answers a JWT that the server itself accepts
//! as a bearer token and in a `TokenReview`, as kube-apiserver's TokenRequest and service
//! account authenticator do.
//!
//! The token is signed with an ECDSA P-256 key the server generates at start (ES256; kube-apiserver
//! signs with whichever key `--service-account-signing-key-file` holds, RSA or EC). Its claims
//! are the ones kube-apiserver's token generator writes: `iss`, `sub`
//! (`system:serviceaccount:<ns>:<name>`), `aud`, `exp`, `iat`, `nbf`, `jti`, and the
//! `kubernetes.io` private claim (namespace, service account name and uid, the bound pod, secret
//! or node). Validation is kube's: signature, issuer, expiry (a minute's leeway, as go-jose's),
//! an audience the server accepts, the service account still existing with the same uid, a
//! bound object still existing with the same uid.
//!
//! Deliberate differences from kube-apiserver: no JWKS / OIDC discovery endpoints, and no
//! extended expiration for pod-bound tokens of 3607 seconds (`warnafter`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use serde_json::{Map, Value, json};

use crate::api::Api;
use crate::resource::{ResourceInfo, Scope};
use crate::status::ApiError;

/// The issuer (and the one audience the API accepts), kube-apiserver's usual
/// `--service-account-issuer`.
pub(crate) const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The smallest `spec.expirationSeconds` (ten minutes).
const MIN_EXPIRATION: i64 = 600;
/// The largest `spec.expirationSeconds` (2^32).
const MAX_EXPIRATION: i64 = 1 << 32;
/// `spec.expirationSeconds` when none is given.
const DEFAULT_EXPIRATION: i64 = 3600;
/// go-jose's `DefaultLeeway`: how far `exp`, `nbf` and `iat` may be off.
const LEEWAY: i64 = 60;
/// The DER prefix of a P-256 `SubjectPublicKeyInfo` (the key id hashes the whole structure).
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The server's token signing key.
pub(crate) struct Issuer {
    key: EcdsaKeyPair,
    kid: String,
    rng: SystemRandom,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issuer")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// An authenticated service account, as a `TokenReview` reports it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct User {
    /// `system:serviceaccount:<ns>:<name>`.
    pub(crate) username: String,
    /// The service account's uid.
    pub(crate) uid: String,
    /// `system:serviceaccounts`, `system:serviceaccounts:<ns>`, `system:authenticated`.
    pub(crate) groups: Vec<String>,
    /// `authentication.kubernetes.io/credential-id` and the bound pod / node.
    pub(crate) extra: Map<String, Value>,
    /// The token's audiences that were accepted.
    pub(crate) audiences: Vec<String>,
}

impl User {
    /// The `status.user` of a `TokenReview` (a `UserInfo`: an empty uid or extra left out).
    pub(crate) fn to_json(&self) -> Value {
        let mut v = json!({"username": self.username, "groups": self.groups});
        if !self.uid.is_empty() {
            v["uid"] = json!(self.uid);
        }
        if !self.extra.is_empty() {
            v["extra"] = Value::Object(self.extra.clone());
        }
        v
    }
}

impl Issuer {
    /// A fresh P-256 key.
    pub(crate) fn generate() -> Result<Self, String> {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).map_err(|e| e.to_string())?;
        let key = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).map_err(|e| e.to_string())?;
        // kube-apiserver's key id: base64url(SHA-256(DER SubjectPublicKeyInfo)).
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(key.public_key().as_ref());
        let kid = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, &spki));
        Ok(Issuer { key, kid, rng })
    }

    /// A signed compact JWS of `claims`.
    pub(crate) fn sign(&self, claims: &Value) -> Result<String, ApiError> {
        let header = json!({"alg": "ES256", "kid": self.kid});
        let mut out = URL_SAFE_NO_PAD.encode(header.to_string());
        out.push('.');
        out.push_str(&URL_SAFE_NO_PAD.encode(claims.to_string()));
        let sig = self
            .key
            .sign(&self.rng, out.as_bytes())
            .map_err(|_| ApiError::internal("failed to generate token: signing failed"))?;
        out.push('.');
        out.push_str(&URL_SAFE_NO_PAD.encode(sig.as_ref()));
        Ok(out)
    }

    /// The claims of `token` if it is a JWS this key signed, issued by [`ISSUER`], and valid
    /// at `now` (seconds since the epoch); why not otherwise.
    pub(crate) fn verify(&self, token: &str, now: i64) -> Result<Map<String, Value>, String> {
        let mut parts = token.split('.');
        let (Some(h), Some(p), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err("not a compact JWS".into());
        };
        let decode = |x: &str| {
            URL_SAFE_NO_PAD
                .decode(x)
                .map_err(|_| "malformed token".to_string())
        };
        let header: Value = serde_json::from_slice(&decode(h)?).map_err(|_| "malformed header")?;
        if header.get("alg").and_then(Value::as_str) != Some("ES256") {
            return Err("unexpected signing algorithm".into());
        }
        let public = signature::UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            self.key.public_key().as_ref(),
        );
        let signed = &token[..h.len() + 1 + p.len()];
        public
            .verify(signed.as_bytes(), &decode(s)?)
            .map_err(|_| "invalid signature".to_string())?;
        let Ok(Value::Object(claims)) = serde_json::from_slice(&decode(p)?) else {
            return Err("malformed claims".into());
        };
        if claims.get("iss").and_then(Value::as_str) != Some(ISSUER) {
            return Err("token issuer is not this server".into());
        }
        let time = |k: &str| claims.get(k).and_then(Value::as_i64);
        if time("exp").is_none_or(|exp| now > exp + LEEWAY) {
            return Err("service account token has expired".into());
        }
        if time("nbf").is_some_and(|nbf| now + LEEWAY < nbf) {
            return Err("service account token is not valid yet".into());
        }
        if time("iat").is_some_and(|iat| now + LEEWAY < iat) {
            return Err("service account token is issued in the future".into());
        }
        Ok(claims)
    }

    /// Authenticates a bearer `token` for the API (its audiences must include the API's,
    /// [`ISSUER`], or one of `audiences` when given, as a `TokenReview` asks) at `now`.
    pub(crate) fn authenticate(
        &self,
        api: &Api,
        token: &str,
        audiences: &[String],
        now: i64,
    ) -> Result<User, String> {
        let claims = self.verify(token, now)?;
        let wanted: Vec<String> = if audiences.is_empty() {
            vec![ISSUER.to_string()]
        } else {
            audiences.to_vec()
        };
        let token_auds: Vec<&str> = match claims.get("aud") {
            Some(Value::String(a)) => vec![a.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let accepted: Vec<String> = wanted
            .into_iter()
            .filter(|w| token_auds.contains(&w.as_str()))
            .collect();
        if accepted.is_empty() {
            return Err("token audiences is invalid for the target audiences".into());
        }
        let k8s = claims.get("kubernetes.io").cloned().unwrap_or(Value::Null);
        let s = |v: &Value, p: &str| {
            v.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let ns = s(&k8s, "/namespace");
        let (name, uid) = (
            s(&k8s, "/serviceaccount/name"),
            s(&k8s, "/serviceaccount/uid"),
        );
        let sub = claims.get("sub").and_then(Value::as_str).unwrap_or("");
        if ns.is_empty() || name.is_empty() || sub != service_account_user(&ns, &name) {
            return Err("service account token claims are malformed".into());
        }
        let current = lookup(api, "serviceaccounts", Some(&ns), &name)
            .map_err(|_| format!("service account {ns}/{name} has been deleted"))?;
        if current.0 != uid {
            return Err(format!(
                "service account UID ({}) does not match claim ({uid})",
                current.0
            ));
        }
        if current.1 {
            return Err(format!("service account {ns}/{name} has been deleted"));
        }
        let mut extra = Map::new();
        if let Some(jti) = claims.get("jti").and_then(Value::as_str) {
            extra.insert(
                "authentication.kubernetes.io/credential-id".into(),
                json!([format!("JTI={jti}")]),
            );
        }
        for (claim, plural, namespaced) in [
            ("pod", "pods", true),
            ("secret", "secrets", true),
            ("node", "nodes", false),
        ] {
            let (bound, bound_uid) = (
                s(&k8s, &format!("/{claim}/name")),
                s(&k8s, &format!("/{claim}/uid")),
            );
            if bound.is_empty() {
                continue;
            }
            // A pod's node is informational (it may be gone); bound objects must still exist.
            let informational = claim == "node" && k8s.get("pod").is_some();
            if !informational {
                let found = lookup(api, plural, namespaced.then_some(ns.as_str()), &bound);
                if found.is_err() || found.is_ok_and(|(u, _)| u != bound_uid) {
                    return Err("service account token has been invalidated".into());
                }
            }
            if claim != "secret" {
                extra.insert(
                    format!("authentication.kubernetes.io/{claim}-name"),
                    json!([bound]),
                );
                extra.insert(
                    format!("authentication.kubernetes.io/{claim}-uid"),
                    json!([bound_uid]),
                );
            }
        }
        Ok(User {
            username: service_account_user(&ns, &name),
            uid,
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{ns}"),
                "system:authenticated".into(),
            ],
            extra,
            audiences: accepted,
        })
    }
}

/// `system:serviceaccount:<ns>:<name>`.
fn service_account_user(ns: &str, name: &str) -> String {
    format!("system:serviceaccount:{ns}:{name}")
}

/// The uid of a stored object and whether it is being deleted.
fn lookup(
    api: &Api,
    plural: &str,
    ns: Option<&str>,
    name: &str,
) -> Result<(String, bool), ApiError> {
    let res = api
        .registry
        .find("", "v1", plural)
        .ok_or_else(ApiError::not_found_path)?;
    let o = api.get(&res, ns, name)?;
    let v = o.to_value();
    let deleting = v.pointer("/metadata/deletionTimestamp").is_some();
    Ok((o.uid.clone(), deleting))
}

/// The `TokenRequest` kind (for decoding protobuf bodies and naming errors).
pub(crate) fn token_request_info() -> ResourceInfo {
    let mut r = ResourceInfo::new(
        "authentication.k8s.io",
        "v1",
        "TokenRequest",
        "token",
        Scope::Namespaced,
    );
    r.status_subresource = false;
    r.create_only = true;
    r
}

fn invalid(name: &str, field: &str, value: &Value, why: &str) -> ApiError {
    ApiError::invalid(
        "TokenRequest",
        "authentication.k8s.io",
        name,
        &[(
            field.to_string(),
            "FieldValueInvalid".to_string(),
            format!(
                "Invalid value: {}: {why}",
                match value {
                    Value::String(s) => format!("{s:?}"),
                    other => other.to_string(),
                }
            ),
        )],
    )
}

/// Answers a `TokenRequest` `body` for the service account `ns`/`name` at `now` (seconds since
/// the epoch): the request with its defaults and `status` (token, expiration), as
/// kube-apiserver's token REST does.
pub(crate) fn request(
    api: &Api,
    issuer: &Issuer,
    ns: &str,
    name: &str,
    mut body: Map<String, Value>,
    now: i64,
    writer: Option<&crate::objects::Writer>,
) -> Result<Value, ApiError> {
    let info = token_request_info();
    crate::objects::check_type_meta(&info, &body)?;
    let meta = body
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else {
        return Err(ApiError::bad_request("metadata must be an object"));
    };
    let field = |m: &Map<String, Value>, k: &str| {
        m.get(k).and_then(Value::as_str).unwrap_or("").to_string()
    };
    let (given_name, given_ns) = (field(meta, "name"), field(meta, "namespace"));
    if !given_name.is_empty() && given_name != name {
        return Err(invalid(
            name,
            "metadata.name",
            &json!(given_name),
            "must match the service account name if specified",
        ));
    }
    if !given_ns.is_empty() && given_ns != ns {
        return Err(invalid(
            name,
            "metadata.namespace",
            &json!(given_ns),
            "must match the service account namespace if specified",
        ));
    }
    let sa_res = api
        .registry
        .find("", "v1", "serviceaccounts")
        .ok_or_else(ApiError::not_found_path)?;
    let sa = api.get(&sa_res, Some(ns), name)?;
    let given_uid = field(meta, "uid");
    if !given_uid.is_empty() && given_uid != sa.uid {
        let why = format!(
            "the UID in the token request ({given_uid}) does not match the UID of the service account ({})",
            sa.uid
        );
        return Err(ApiError::conflict_kind(&info, name, &why));
    }
    meta.insert("name".into(), json!(name));
    meta.insert("namespace".into(), json!(ns));
    meta.insert("uid".into(), json!(sa.uid));
    let created = timestamp(now);
    meta.insert("creationTimestamp".into(), json!(created));
    let spec = body
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(spec) = spec else {
        return Err(ApiError::bad_request("spec must be an object"));
    };
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.expirationSeconds must be an integer"))?,
    };
    spec.insert("expirationSeconds".into(), json!(expiration));
    // The field manager runs on the request as decoded (expirationSeconds defaulted), before
    // the handler fills the audiences in (e2e/diff "token / token-defaults").
    if let Some(w) = writer {
        let mut typed = body.clone();
        typed.insert("apiVersion".into(), json!(info.api_version()));
        typed.insert("kind".into(), json!(info.kind));
        crate::objects::managed_fields::update_managed_fields(&info, None, &mut typed, w);
        if let (Some(Value::Object(from)), Some(Value::Object(to))) =
            (typed.get("metadata"), body.get_mut("metadata"))
            && let Some(mf) = from.get("managedFields")
        {
            to.insert("managedFields".into(), mf.clone());
        }
    }
    let Some(Value::Object(spec)) = body.get_mut("spec") else {
        return Err(ApiError::internal("spec vanished"));
    };
    let audiences: Vec<String> = match spec.get("audiences") {
        Some(Value::Array(a)) if !a.is_empty() => a
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect(),
        _ => vec![ISSUER.to_string()],
    };
    spec.insert("audiences".into(), json!(audiences));
    if expiration < MIN_EXPIRATION {
        return Err(invalid(
            "",
            "spec.expirationSeconds",
            &json!(expiration),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if expiration > MAX_EXPIRATION {
        return Err(invalid(
            "",
            "spec.expirationSeconds",
            &json!(expiration),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    let mut k8s = json!({"namespace": ns, "serviceaccount": {"name": name, "uid": sa.uid}});
    if let Some(r) = spec.get("boundObjectRef").filter(|r| !r.is_null()) {
        bind(api, &mut k8s, r, ns, name)?;
    }
    // `boundObjectRef` has no `omitempty`: absent is `null`.
    spec.entry("boundObjectRef").or_insert(Value::Null);
    let claims = json!({
        "aud": audiences,
        "exp": now + expiration,
        "iat": now,
        "iss": ISSUER,
        "jti": crate::objects::new_uid(),
        "kubernetes.io": k8s,
        "nbf": now,
        "sub": service_account_user(ns, name),
    });
    let token = issuer.sign(&claims)?;
    body.insert(
        "status".into(),
        json!({"token": token, "expirationTimestamp": timestamp(now + expiration)}),
    );
    body.insert("apiVersion".into(), json!(info.api_version()));
    body.insert("kind".into(), json!(info.kind));
    Ok(Value::Object(body))
}

/// Binds the token to `spec.boundObjectRef` (a pod, secret or node), as kube-apiserver does.
fn bind(api: &Api, k8s: &mut Value, r: &Value, ns: &str, sa: &str) -> Result<(), ApiError> {
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind, name, uid) = (s("apiVersion"), s("kind"), s("name"), s("uid"));
    let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
    let (plural, namespaced) = match (group, kind) {
        ("", "Pod") => ("pods", true),
        ("", "Secret") => ("secrets", true),
        ("", "Node") => ("nodes", false),
        _ => {
            let version = api_version.rsplit('/').next().unwrap_or("");
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )));
        }
    };
    let res = api
        .registry
        .find("", "v1", plural)
        .ok_or_else(ApiError::not_found_path)?;
    let o = api.get(&res, namespaced.then_some(ns), name)?;
    let v = o.to_value();
    if kind == "Pod" {
        let pod_sa = v
            .pointer("/spec/serviceAccountName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if pod_sa != sa {
            return Err(ApiError::bad_request(format!(
                "cannot bind token for serviceaccount {sa:?} to pod running with different serviceaccount name."
            )));
        }
    }
    if !uid.is_empty() && uid != o.uid {
        let why = format!(
            "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
        );
        let mut e = ApiError::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {kind} {name:?}: {why}"),
        );
        e.details = Some(json!({"name": name, "kind": kind}));
        return Err(e);
    }
    let claim = kind.to_lowercase();
    k8s[&claim] = json!({"name": name, "uid": o.uid});
    if kind == "Pod"
        && let Some(node) = v
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
    {
        let node_uid = lookup(api, "nodes", None, node)
            .map(|(u, _)| u)
            .unwrap_or_default();
        k8s["node"] = json!({"name": node, "uid": node_uid});
    }
    Ok(())
}

/// RFC 3339 in seconds, UTC, as Kubernetes writes times.
fn timestamp(secs: i64) -> String {
    jiff::Timestamp::from_second(secs)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// Seconds since the epoch.
pub(crate) fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: i64) -> Value {
        json!({"iss": ISSUER, "sub": "system:serviceaccount:a:b", "aud": [ISSUER],
               "iat": exp - 600, "nbf": exp - 600, "exp": exp})
    }

    #[test]
    fn expiry_is_checked_with_a_minutes_leeway() {
        let issuer = Issuer::generate().unwrap();
        let token = issuer.sign(&claims(10_000)).unwrap();
        assert!(issuer.verify(&token, 10_000).is_ok());
        assert!(issuer.verify(&token, 10_060).is_ok());
        assert_eq!(
            issuer.verify(&token, 10_061).unwrap_err(),
            "service account token has expired"
        );
        assert_eq!(
            issuer.verify(&token, 10_000 - 600 - 61).unwrap_err(),
            "service account token is not valid yet"
        );
    }

    #[test]
    fn only_this_keys_signatures_verify() {
        let issuer = Issuer::generate().unwrap();
        let other = Issuer::generate().unwrap();
        let token = other.sign(&claims(10_000)).unwrap();
        assert_eq!(
            issuer.verify(&token, 10_000).unwrap_err(),
            "invalid signature"
        );
        assert!(issuer.verify("a.b", 0).is_err());
        assert!(issuer.verify("not a token at all", 0).is_err());
        assert!(issuer.verify("e30.e30.", 0).is_err());
        let mut foreign = claims(10_000);
        foreign["iss"] = json!("https://elsewhere");
        let token = issuer.sign(&foreign).unwrap();
        assert!(issuer.verify(&token, 10_000).is_err());
    }
}
