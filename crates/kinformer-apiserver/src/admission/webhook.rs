//! Admission webhooks: the `MutatingWebhookConfiguration`s and `ValidatingWebhookConfiguration`s
//! of `admissionregistration.k8s.io/v1`, called as kube-apiserver's `MutatingAdmissionWebhook`
//! and `ValidatingAdmissionWebhook` plugins call them (`k8s.io/apiserver/pkg/admission/plugin/webhook`).
//!
//! This module is the protocol: which webhooks a write calls ([`Hook::matches`]: `rules`,
//! `matchPolicy`, `namespaceSelector`, `objectSelector`, then `matchConditions`), the
//! `AdmissionReview` each is sent ([`Review`]), and what its answer means ([`Hook::verdict`]):
//! allowed, allowed with a JSON patch (mutating webhooks), or denied (`admission webhook
//! "<webhook>" denied the request: <message>`, with the code the webhook gave, 400 when it
//! gave none or one under 400). A webhook that cannot be called
//! or answers wrongly fails the write under `failurePolicy: Fail` (the default: 500 `Internal
//! error occurred: failed calling webhook "<webhook>": ...`) and is passed over under `Ignore`.
//! The calls themselves are in [`call`]; the order of a write (mutating webhooks, then the
//! object validated again, then validating webhooks, then stored if it has not changed) is in
//! `crate::http::webhooks`.

use std::time::Duration;

use base64::Engine;
use serde_json::{Map, Value, json};

use super::policy::{self, Operation, Request};
use crate::resource::ResourceInfo;
use crate::status::ApiError;

pub(crate) mod call;
mod trust;

/// The group whose resources no webhook is called for (webhook configurations and admission
/// policies), so that a webhook can never lock itself in.
const EXEMPT_GROUP: &str = "admissionregistration.k8s.io";

/// The longest `AdmissionReview` answer read from a webhook (kube-apiserver's limit on a
/// request body, 3 MiB).
pub(crate) const MAX_ANSWER_BYTES: usize = 3 * 1024 * 1024;

/// Whether no webhook is called for writes of `res`.
pub(crate) fn exempt(res: &ResourceInfo) -> bool {
    res.group == EXEMPT_GROUP
}

/// One webhook of a configuration.
#[derive(Debug, Clone)]
pub(crate) struct Hook {
    /// The configuration's name.
    pub configuration: String,
    /// Whether it is a mutating webhook.
    pub mutating: bool,
    /// The webhook, as stored (defaulted).
    pub spec: Value,
}

impl Hook {
    /// The webhooks of a stored configuration, in order.
    pub(crate) fn of_configuration(config: &Value, mutating: bool) -> Vec<Hook> {
        let configuration = policy::name_of(config).to_string();
        config
            .get("webhooks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|w| w.is_object())
            .map(|w| Hook {
                configuration: configuration.clone(),
                mutating,
                spec: w.clone(),
            })
            .collect()
    }

    fn str(&self, k: &str) -> &str {
        self.spec.get(k).and_then(Value::as_str).unwrap_or_default()
    }

    /// Its name.
    pub(crate) fn name(&self) -> &str {
        self.str("name")
    }

    /// Whether a failure to call it fails the write (`failurePolicy: Fail`, the default).
    pub(crate) fn fails_closed(&self) -> bool {
        self.str("failurePolicy") != "Ignore"
    }

    /// How long a call may take (`timeoutSeconds`, 10 s by default, 1–30).
    pub(crate) fn timeout(&self) -> Duration {
        let s = self
            .spec
            .get("timeoutSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(10)
            .clamp(1, 30);
        Duration::from_secs(s)
    }

    /// Whether it is called again when a later webhook changed the object
    /// (`reinvocationPolicy: IfNeeded`).
    pub(crate) fn reinvoked_if_needed(&self) -> bool {
        self.mutating && self.str("reinvocationPolicy") == "IfNeeded"
    }

    /// Whether it may be called for a dry run (`sideEffects` `None` or `NoneOnDryRun`).
    pub(crate) fn dry_run_safe(&self) -> bool {
        matches!(self.str("sideEffects"), "None" | "NoneOnDryRun")
    }

    /// The `AdmissionReview` version it is sent: the first of its `admissionReviewVersions`
    /// that the server speaks (`v1`, `v1beta1`).
    pub(crate) fn review_version(&self) -> Option<&'static str> {
        self.spec
            .get("admissionReviewVersions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find_map(|v| match v {
                "v1" => Some("v1"),
                "v1beta1" => Some("v1beta1"),
                _ => None,
            })
    }

    /// Whether its rules and selectors match the write (before its `matchConditions`).
    pub(crate) fn matches(
        &self,
        req: &Request<'_>,
        operation: Operation,
        object: Option<&Value>,
        old: Option<&Value>,
        namespace: Option<&Value>,
    ) -> bool {
        let mut m = Map::new();
        for (from, to) in [
            ("rules", "resourceRules"),
            ("matchPolicy", "matchPolicy"),
            ("namespaceSelector", "namespaceSelector"),
            ("objectSelector", "objectSelector"),
        ] {
            if let Some(v) = self.spec.get(from) {
                m.insert(to.into(), v.clone());
            }
        }
        policy::write_matches(&Value::Object(m), req, operation, object, old, namespace)
    }

    /// Its `matchConditions`, evaluated for the write (see [`policy::conditions_hold`]).
    pub(crate) fn conditions(
        &self,
        req: &Request<'_>,
        operation: Operation,
        object: Option<&Value>,
        old: Option<&Value>,
        user: &Value,
    ) -> Result<bool, String> {
        let conditions = self
            .spec
            .get("matchConditions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        policy::conditions_hold(conditions, req, operation, object, old, user)
    }

    /// Where it is called: its `clientConfig`.
    pub(crate) fn client_config(&self) -> &Value {
        self.spec.get("clientConfig").unwrap_or(&Value::Null)
    }

    /// The PEM certificates its server's certificate must chain to (`clientConfig.caBundle`),
    /// `None` for the system's roots.
    pub(crate) fn ca_bundle(&self) -> Option<Vec<u8>> {
        call::ca_bundle(self.client_config())
    }

    /// The answer `body` to the review `review`: allowed (with a JSON patch for a mutating
    /// webhook, and warnings), denied, or not an answer (a failure to call, in kube-apiserver's
    /// words after `failed calling webhook "<name>": `).
    pub(crate) fn verdict(&self, review: &Review, body: &[u8]) -> Result<Verdict, String> {
        let invalid = |why: String| format!("received invalid webhook response: {why}");
        let answer: Value = serde_json::from_slice(body).map_err(|e| invalid(e.to_string()))?;
        let api_version = format!("admission.k8s.io/{}", review.version);
        let got = (
            answer
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or(""),
            answer.get("kind").and_then(Value::as_str).unwrap_or(""),
        );
        if review.version == "v1" && got != (api_version.as_str(), "AdmissionReview") {
            return Err(invalid(format!(
                "expected webhook response of {api_version}, Kind=AdmissionReview, got {}, Kind={}",
                got.0, got.1
            )));
        }
        let Some(response) = answer.get("response").filter(|r| r.is_object()) else {
            return Err(invalid("webhook response was absent".into()));
        };
        let uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
        if uid != review.uid {
            return Err(invalid(format!(
                "expected response.uid=\"{}\", got \"{uid}\"",
                review.uid
            )));
        }
        let warnings: Vec<String> = response
            .get("warnings")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(clean_warning)
            .filter(|w| !w.is_empty())
            .collect();
        let allowed = response.get("allowed").and_then(Value::as_bool) == Some(true);
        if !allowed {
            return Ok(Verdict::Denied {
                status: response.get("status").cloned(),
                warnings,
            });
        }
        let patch = match patch_bytes(response.get("patch")).map_err(invalid)? {
            Some(bytes) if !bytes.is_empty() => {
                if !self.mutating {
                    return Err(invalid(
                        "validating webhook may not return response.patch".into(),
                    ));
                }
                let pt = response.get("patchType").and_then(Value::as_str);
                if review.version == "v1" && pt.is_none() {
                    return Err(invalid(
                        "webhook returned response.patch but not response.patchType".into(),
                    ));
                }
                if let Some(pt) = pt.filter(|t| *t != "JSONPatch") {
                    // (kube-apiserver's words)
                    return Err(invalid(format!(
                        "webhook returned invalid response.patchType of \"{pt}\""
                    )));
                }
                let patch: json_patch::Patch =
                    serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
                Some(patch)
            }
            _ if response.get("patchType").is_some_and(|t| !t.is_null()) => {
                let which = if self.mutating {
                    "webhook returned response.patchType but not response.patch"
                } else {
                    "validating webhook may not return response.patchType"
                };
                return Err(invalid(which.into()));
            }
            _ => None,
        };
        Ok(Verdict::Allowed { patch, warnings })
    }

    /// The refusal of a write by this webhook's `status`, as kube-apiserver 1.36's
    /// `ToStatusErr` makes it: the webhook's code (400 when under 400, none included), reason
    /// and details kept, its message prefixed `admission webhook "<name>" denied the
    /// request: ` (its reason when it has no message; `without explanation` when neither).
    pub(crate) fn denial(&self, status: Option<&Value>) -> ApiError {
        let s = status.and_then(Value::as_object);
        let get = |k: &str| {
            s.and_then(|s| s.get(k))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let code = s
            .and_then(|s| s.get("code"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
            .clamp(400, 599) as u16;
        let (message, reason) = (get("message"), get("reason"));
        let denied_by = format!("admission webhook \"{}\" denied the request", self.name());
        let message = if !message.is_empty() {
            format!("{denied_by}: {message}")
        } else if !reason.is_empty() {
            format!("{denied_by}: {reason}")
        } else {
            format!("{denied_by} without explanation")
        };
        let mut e = ApiError::new(code, &reason, message);
        e.details = s
            .and_then(|s| s.get("details"))
            .filter(|d| d.is_object())
            .cloned();
        e
    }

    /// The failure to call this webhook (`why`, in the words after `failed calling webhook`)
    /// as the write's error.
    pub(crate) fn failure(&self, why: &str) -> ApiError {
        ApiError::internal(&format!(
            "failed calling webhook \"{}\": {why}",
            self.name()
        ))
    }
}

/// A webhook's answer.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// The write may go on, changed by the patch (a mutating webhook's).
    Allowed {
        /// The JSON patch to apply to the object sent.
        patch: Option<json_patch::Patch>,
        /// Warnings for the client.
        warnings: Vec<String>,
    },
    /// The write is refused.
    Denied {
        /// The `status` the webhook gave.
        status: Option<Value>,
        /// Warnings for the client.
        warnings: Vec<String>,
    },
}

/// The bytes of `response.patch`, as Go decodes a `[]byte`: a base64 string, or an array of
/// byte values (what kube-rs's `AdmissionResponse` sends); `None` when absent.
fn patch_bytes(v: Option<&Value>) -> Result<Option<Vec<u8>>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => base64::engine::general_purpose::STANDARD
            .decode(s)
            .map(Some)
            .map_err(|e| format!("illegal base64 data in response.patch: {e}")),
        Some(Value::Array(a)) => a
            .iter()
            .map(|b| {
                b.as_u64()
                    .and_then(|b| u8::try_from(b).ok())
                    .ok_or_else(|| format!("response.patch: cannot decode {b} as a byte"))
            })
            .collect::<Result<Vec<u8>, String>>()
            .map(Some),
        Some(other) => Err(format!("response.patch: cannot decode {other} as bytes")),
    }
}

/// A warning as the server passes it on: control characters dropped, at most 4 KiB.
fn clean_warning(w: &str) -> String {
    let mut s: String = w.chars().filter(|c| !c.is_control()).collect();
    if s.len() > 4096 {
        let mut end = 4096;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// One `AdmissionReview` request: the write as the webhooks see it.
#[derive(Debug, Clone)]
pub(crate) struct Review<'a> {
    /// The resource written (the version the client wrote through).
    pub res: &'a ResourceInfo,
    /// The subresource written through, if any.
    pub subresource: Option<&'a str>,
    /// The object's namespace (empty for cluster-scoped objects).
    pub namespace: &'a str,
    /// The object's name (empty for a create whose name is still to be generated).
    pub name: &'a str,
    /// What the write does.
    pub operation: Operation,
    /// The object written (`None` for a delete), in the version written through.
    pub object: Option<&'a Value>,
    /// The live object (`None` for a create).
    pub old: Option<&'a Value>,
    /// Whether it is a dry run.
    pub dry_run: bool,
    /// `request.userInfo`.
    pub user: &'a Value,
    /// `request.options` (`CreateOptions`, `UpdateOptions`, `DeleteOptions`).
    pub options: &'a Value,
    /// The review's uid (one per call).
    pub uid: String,
    /// The `AdmissionReview` version (`v1` or `v1beta1`).
    pub version: &'static str,
    /// Whether the objects are the `Scale` of a write through `/scale`.
    pub scale: bool,
}

impl Review<'_> {
    /// The `AdmissionReview` sent.
    pub(crate) fn body(&self) -> Value {
        let res = self.res;
        let kind = if self.scale {
            json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
        } else {
            json!({"group": res.group, "version": res.version, "kind": res.kind})
        };
        let resource = json!({"group": res.group, "version": res.version, "resource": res.plural});
        let mut r = Map::new();
        r.insert("uid".into(), self.uid.clone().into());
        r.insert("kind".into(), kind.clone());
        r.insert("resource".into(), resource.clone());
        if let Some(s) = self.subresource {
            r.insert("subResource".into(), s.into());
        }
        r.insert("requestKind".into(), kind);
        r.insert("requestResource".into(), resource);
        if let Some(s) = self.subresource {
            r.insert("requestSubResource".into(), s.into());
        }
        if !self.name.is_empty() {
            r.insert("name".into(), self.name.into());
        }
        if !self.namespace.is_empty() {
            r.insert("namespace".into(), self.namespace.into());
        }
        r.insert("operation".into(), self.operation_name().into());
        r.insert("userInfo".into(), self.user.clone());
        r.insert("object".into(), self.object.cloned().unwrap_or(Value::Null));
        r.insert("oldObject".into(), self.old.cloned().unwrap_or(Value::Null));
        r.insert("dryRun".into(), self.dry_run.into());
        r.insert("options".into(), self.options.clone());
        json!({
            "kind": "AdmissionReview",
            "apiVersion": format!("admission.k8s.io/{}", self.version),
            "request": r,
        })
    }

    fn operation_name(&self) -> &'static str {
        match self.operation {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }

    /// The write as admission policies see it.
    pub(crate) fn request(&self) -> Request<'_> {
        Request {
            res: self.res,
            subresource: self.subresource,
            namespace: self.namespace,
            name: self.name,
            dry_run: self.dry_run,
        }
    }
}

#[cfg(test)]
mod tests;
