//! The applied configuration's lists checked as structured-merge-diff types it (an apply
//! configuration may not have duplicate keys, unlike a live object): keyed-list items must be
//! objects carrying at least one key field (or its default), keys and set items unique.
//! kube-apiserver answers a failure with a plain error, so a 500 without a reason:
//! `failed to create typed patch object (<ns>/<name>; /v1, Kind=ConfigMap): .spec.ports:
//! duplicate entries for key [name="a"]`.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::conflicts::path_string;
use super::schema::{ListType, MergeSchema};
use crate::objects::fieldset::item_element;
use crate::status::ApiError;

struct Checker<'a> {
    schema: &'a dyn MergeSchema,
    spath: Vec<String>,
    /// The path as structured-merge-diff prints it (`.spec.ports[name="a"]`).
    shown: String,
    errors: Vec<String>,
}

impl Checker<'_> {
    fn error(&mut self, msg: String) {
        self.errors.push(if self.shown.is_empty() {
            msg
        } else {
            format!("{}: {msg}", self.shown)
        });
    }

    fn descend(&mut self, step: &str, shown: &str, v: &Value) {
        let len = self.shown.len();
        self.spath.push(step.to_string());
        self.shown.push_str(shown);
        self.value(v);
        self.shown.truncate(len);
        self.spath.pop();
    }

    fn value(&mut self, v: &Value) {
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    self.descend(k, &format!(".{k}"), child);
                }
            }
            Value::Array(items) => {
                let sp: Vec<&str> = self.spath.iter().map(|s| s.as_str()).collect();
                let lt = self.schema.list_at(&sp);
                let mut seen = HashSet::new();
                for (i, item) in items.iter().enumerate() {
                    let pe = match (&lt, item) {
                        (ListType::Atomic, _) => {
                            self.descend("[]", &format!("[{i}]"), item);
                            continue;
                        }
                        (ListType::Map(_), Value::Null) => Err("associative list with keys may not have a null element".to_string()),
                        (ListType::Map(_), v) if !v.is_object() => Err("associative list with keys may not have non-map elements".to_string()),
                        (ListType::Map(keys), v) => item_element(&lt, v).ok_or_else(|| {
                            let names: Vec<String> =
                                keys.iter().map(|k| format!("{:?}", k.name)).collect();
                            format!(
                                "associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
                                names.join(" ")
                            )
                        }),
                        (ListType::Set, v) => item_element(&lt, v).ok_or_else(String::new),
                    };
                    let pe = match pe {
                        Ok(pe) => pe,
                        Err(why) => {
                            self.error(format!("element {i}: {why}"));
                            return;
                        }
                    };
                    let shown = path_string(std::slice::from_ref(&pe));
                    if !seen.insert(pe) {
                        self.error(format!("duplicate entries for key {shown}"));
                    }
                    self.descend("[]", &shown, item);
                }
            }
            _ => {}
        }
    }
}

/// Checks `config` (an apply configuration of `kind` `gvk`, as `/v1, Kind=ConfigMap`).
pub(crate) fn check_lists(
    schema: &dyn MergeSchema,
    config: &Map<String, Value>,
    gvk: &str,
) -> Result<(), ApiError> {
    let mut c = Checker {
        schema,
        spath: Vec::new(),
        shown: String::new(),
        errors: Vec::new(),
    };
    c.value(&Value::Object(config.clone()));
    if c.errors.is_empty() {
        return Ok(());
    }
    Err(typed_patch_error(config, gvk, c.errors))
}

/// kube-apiserver's 500 for an apply configuration its field manager cannot type: `failed to
/// create typed patch object (ns/name; /v1, Kind=ConfigMap): <error>`, or `errors:` and one
/// indented line each.
pub(crate) fn typed_patch_error(
    config: &Map<String, Value>,
    gvk: &str,
    mut errors: Vec<String>,
) -> ApiError {
    let errs = if errors.len() == 1 {
        errors.remove(0)
    } else {
        let mut lines = vec!["errors:".to_string()];
        lines.extend(errors.iter().map(|e| format!("  {e}")));
        lines.join("\n")
    };
    let meta = |f: &str| {
        config
            .get("metadata")
            .and_then(|m| m.get(f))
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    ApiError::new(
        500,
        "",
        format!(
            "failed to create typed patch object ({}/{}; {gvk}): {errs}",
            meta("namespace"),
            meta("name")
        ),
    )
}
