//! What the admission webhooks borrow from the policies: matching a write by resource rules
//! and selectors, and evaluating `matchConditions` (see `crate::admission::webhook`).

use std::sync::Arc;

use cel::Value as Cel;
use cel::objects::{Key, Map as CelMap};
use serde_json::Value;

use super::{Activation, Operation, Policies, Request, words, write_of};
use crate::crd::{cel_context, cel_evaluate, json_to_cel};

/// Whether `m` (resource rules as `resourceRules`, a `matchPolicy`, a `namespaceSelector`
/// and an `objectSelector`, as an admission webhook names them) matches the write `req` of
/// `object` over `old`, in the namespace `namespace` (as stored).
pub(crate) fn write_matches(
    m: &Value,
    req: &Request<'_>,
    operation: Operation,
    object: Option<&Value>,
    old: Option<&Value>,
    namespace: Option<&Value>,
) -> bool {
    let (target, labels) = write_of(req, operation, object, old, namespace);
    target.rules_match(m, false) && labels.match_selectors(m)
}

/// An admission webhook's `matchConditions` for the write `req`: `Ok(false)` when one is
/// false (the webhook is not called), `Err` with the failures when none is false and some
/// failed, `Ok(true)` otherwise. They see `object`, `oldObject` and `request` (with
/// `userInfo`).
pub(crate) fn conditions_hold(
    conditions: &[Value],
    req: &Request<'_>,
    operation: Operation,
    object: Option<&Value>,
    old: Option<&Value>,
    user: &Value,
) -> Result<bool, String> {
    if conditions.is_empty() {
        return Ok(true);
    }
    let policies = Policies::default();
    let base = Activation::new(req, operation, object, old, &policies);
    let mut request = base.request.clone();
    if let (Cel::Map(m), Cel::Map(u)) = (&base.request, json_to_cel(user)) {
        let mut map: std::collections::HashMap<Key, Cel> = (*m.map).clone();
        map.insert(Key::String(Arc::new("userInfo".into())), Cel::Map(u));
        request = Cel::Map(CelMap { map: Arc::new(map) });
    }
    let mut ctx = cel_context();
    ctx.add_variable_from_value("object", base.object.clone());
    ctx.add_variable_from_value("oldObject", base.old.clone());
    ctx.add_variable_from_value("request", request);
    let mut errors = Vec::new();
    for c in conditions {
        let expr = c
            .get("expression")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match cel_evaluate(expr, &ctx) {
            Ok(Cel::Bool(true)) => {}
            Ok(_) => return Ok(false),
            Err(e) => errors.push(words(expr, e)),
        }
    }
    if errors.is_empty() {
        Ok(true)
    } else {
        Err(errors.join(", "))
    }
}
