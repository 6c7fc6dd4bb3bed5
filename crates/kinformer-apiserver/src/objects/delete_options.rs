//! `DeleteOptions`: what a DELETE (or deletecollection) asks for — preconditions and the
//! propagation policy the garbage collector follows — read from the request body, or from the
//! query string when the body is empty, as kube-apiserver's delete handler does.

use std::collections::HashMap;

use serde_json::Value;

use super::Preconditions;
use crate::status::ApiError;

/// `DeleteOptions.propagationPolicy`: what happens to the dependents of a deleted object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Propagation {
    /// Dependents lose their reference to the owner and stay (`orphan` finalizer).
    Orphan,
    /// The owner goes at once; the garbage collector deletes the dependents afterwards.
    Background,
    /// The owner stays (`foregroundDeletion` finalizer) until its blocking dependents are gone.
    Foreground,
}

impl Propagation {
    /// The policy's name on the wire.
    fn name(self) -> &'static str {
        match self {
            Propagation::Orphan => "Orphan",
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "Orphan" => Some(Propagation::Orphan),
            "Background" => Some(Propagation::Background),
            "Foreground" => Some(Propagation::Foreground),
            _ => None,
        }
    }
}

/// The parsed `DeleteOptions` of a request. Fields the server does not act on
/// (`gracePeriodSeconds`, `apiVersion`/`kind`) are accepted and ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DeleteOptions {
    /// `preconditions` (uid, resourceVersion).
    pub preconditions: Preconditions,
    /// `propagationPolicy`, when given.
    pub propagation: Option<Propagation>,
    /// The deprecated `orphanDependents`, when given.
    pub orphan_dependents: Option<bool>,
    /// `dryRun: ["All"]`: decide and answer, store nothing.
    pub dry_run: bool,
}

/// Whether a write is a dry run: `dryRun` must be `All`, the only value kube-apiserver knows;
/// any other is 422 Invalid on the verb's options kind (`CreateOptions`, `UpdateOptions`,
/// `PatchOptions`, `DeleteOptions`), as `ValidateDryRun` answers.
pub(crate) fn dry_run(values: &[String], options_kind: &str) -> Result<bool, ApiError> {
    if values.iter().all(|v| v == "All") {
        return Ok(!values.is_empty());
    }
    // apimachinery 1.35 prints the rejected list as JSON (e2e/diff "dry-run / bad-dry-run-value").
    let listed = serde_json::to_string(values).unwrap_or_default();
    Err(ApiError::invalid(
        options_kind,
        "meta.k8s.io",
        "",
        &[(
            "dryRun".to_string(),
            "FieldValueNotSupported".to_string(),
            format!("Unsupported value: {listed}: supported values: \"All\""),
        )],
    ))
}

impl DeleteOptions {
    /// Options with only a propagation policy (the garbage collector's own deletes).
    pub(crate) fn propagation(p: Propagation) -> Self {
        DeleteOptions {
            propagation: Some(p),
            ..Default::default()
        }
    }

    /// These options as a client sends them (what admission webhooks are shown of a delete
    /// the server's own controllers make).
    pub(crate) fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("kind".into(), "DeleteOptions".into());
        m.insert("apiVersion".into(), "meta.k8s.io/v1".into());
        let mut pre = serde_json::Map::new();
        if let Some(uid) = &self.preconditions.uid {
            pre.insert("uid".into(), uid.clone().into());
        }
        if let Some(rv) = &self.preconditions.resource_version {
            pre.insert("resourceVersion".into(), rv.clone().into());
        }
        if !pre.is_empty() {
            m.insert("preconditions".into(), Value::Object(pre));
        }
        if let Some(o) = self.orphan_dependents {
            m.insert("orphanDependents".into(), o.into());
        }
        if let Some(p) = self.propagation {
            m.insert("propagationPolicy".into(), p.name().into());
        }
        if self.dry_run {
            m.insert("dryRun".into(), serde_json::json!(["All"]));
        }
        Value::Object(m)
    }

    /// Options of a request: the JSON `body` when it is not empty, else the `query`
    /// parameters; then validated as kube-apiserver's `ValidateDeleteOptions` (422 Invalid of
    /// kind `DeleteOptions.meta.k8s.io`).
    pub(crate) fn parse(body: &[u8], query: &HashMap<String, String>) -> Result<Self, ApiError> {
        let opts = if body.iter().all(|b| b.is_ascii_whitespace()) {
            Self::from_query(query)?
        } else {
            Self::from_body(body)?
        };
        opts.validate()?;
        Ok(opts)
    }

    fn from_body(body: &[u8]) -> Result<Self, ApiError> {
        let decode_err = |e: &dyn std::fmt::Display| {
            ApiError::bad_request(format!("error decoding DeleteOptions: {e}"))
        };
        let v: Value = serde_json::from_slice(body).map_err(|e| decode_err(&e))?;
        let Value::Object(m) = &v else {
            return Err(decode_err(&"expected a JSON object"));
        };
        let pre = m.get("preconditions");
        let get = |f: &str| {
            pre.and_then(|p| p.get(f))
                .and_then(|x| x.as_str())
                .map(|s| s.to_string())
        };
        let propagation = match m.get("propagationPolicy") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                return Err(decode_err(&format!(
                    "json: cannot unmarshal {} into Go struct field DeleteOptions.propagationPolicy of type v1.DeletionPropagation",
                    json_type(other)
                )));
            }
        };
        let orphan_dependents = match m.get("orphanDependents") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                return Err(decode_err(&format!(
                    "json: cannot unmarshal {} into Go struct field DeleteOptions.orphanDependents of type bool",
                    json_type(other)
                )));
            }
        };
        let dry_run = match m.get("dryRun") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    decode_err(&"json: cannot unmarshal into Go struct field DeleteOptions.dryRun of type string")
                })?,
            Some(other) => {
                return Err(decode_err(&format!(
                    "json: cannot unmarshal {} into Go struct field DeleteOptions.dryRun of type []string",
                    json_type(other)
                )));
            }
        };
        Self::build(
            Preconditions {
                uid: get("uid"),
                resource_version: get("resourceVersion"),
            },
            propagation,
            orphan_dependents,
            &dry_run,
        )
    }

    fn from_query(query: &HashMap<String, String>) -> Result<Self, ApiError> {
        let orphan_dependents = match query.get("orphanDependents") {
            None => None,
            Some(s) => Some(parse_go_bool(s).ok_or_else(|| {
                ApiError::bad_request(format!("strconv.ParseBool: parsing {s:?}: invalid syntax"))
            })?),
        };
        let dry_run: Vec<String> = query.get("dryRun").cloned().into_iter().collect();
        Self::build(
            Preconditions::default(),
            query.get("propagationPolicy").cloned(),
            orphan_dependents,
            &dry_run,
        )
    }

    fn build(
        preconditions: Preconditions,
        propagation: Option<String>,
        orphan_dependents: Option<bool>,
        dry_run_values: &[String],
    ) -> Result<Self, ApiError> {
        let parsed = match propagation.as_deref() {
            None => None,
            Some(s) => match Propagation::parse(s) {
                Some(p) => Some(p),
                None => {
                    return Err(invalid(
                        "FieldValueNotSupported",
                        format!(
                            "Unsupported value: {s:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                        ),
                    ));
                }
            },
        };
        Ok(DeleteOptions {
            preconditions,
            propagation: parsed,
            orphan_dependents,
            dry_run: dry_run(dry_run_values, "DeleteOptions")?,
        })
    }

    fn validate(&self) -> Result<(), ApiError> {
        if let (Some(_), Some(p)) = (self.orphan_dependents, self.propagation) {
            let name = match p {
                Propagation::Orphan => "Orphan",
                Propagation::Background => "Background",
                Propagation::Foreground => "Foreground",
            };
            return Err(invalid(
                "FieldValueInvalid",
                format!(
                    "Invalid value: \"{name}\": orphanDependents and deletionPropagation cannot be both set"
                ),
            ));
        }
        Ok(())
    }
}

fn invalid(reason: &str, message: String) -> ApiError {
    ApiError::invalid(
        "DeleteOptions",
        "meta.k8s.io",
        "",
        &[("propagationPolicy".into(), reason.into(), message)],
    )
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn body_wins_over_query_and_both_are_read() {
        let o = DeleteOptions::parse(
            br#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground","preconditions":{"uid":"u"}}"#,
            &q(&[("propagationPolicy", "Orphan")]),
        )
        .unwrap();
        assert_eq!(o.propagation, Some(Propagation::Foreground));
        assert_eq!(o.preconditions.uid.as_deref(), Some("u"));
        let o = DeleteOptions::parse(b"", &q(&[("propagationPolicy", "Orphan")])).unwrap();
        assert_eq!(o.propagation, Some(Propagation::Orphan));
        let o = DeleteOptions::parse(b"  ", &q(&[("orphanDependents", "true")])).unwrap();
        assert_eq!(o.orphan_dependents, Some(true));
    }

    #[test]
    fn bad_policies_are_invalid_as_kube_apiserver_answers() {
        let e = DeleteOptions::parse(br#"{"propagationPolicy":"Bogus"}"#, &q(&[])).unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
        assert_eq!(
            e.message,
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Bogus\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
        );
        let e = DeleteOptions::parse(
            br#"{"propagationPolicy":"Orphan","orphanDependents":false}"#,
            &q(&[]),
        )
        .unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Orphan\": orphanDependents and deletionPropagation cannot be both set"
        );
        let e = DeleteOptions::parse(b"", &q(&[("orphanDependents", "maybe")])).unwrap_err();
        assert_eq!(e.code, 400);
        let e = DeleteOptions::parse(br#"{"propagationPolicy":3}"#, &q(&[])).unwrap_err();
        assert_eq!(e.code, 400);
    }
}
