//! MutatingAdmissionPolicy (`admissionregistration.k8s.io/v1`, on by default since Kubernetes
//! 1.36), as kube-apiserver's `k8s.io/apiserver/pkg/admission/plugin/policy/mutating` applies
//! it to creates and updates, before the mutating webhooks.
//!
//! A policy applies through each of its bindings as a ValidatingAdmissionPolicy does (its
//! `matchConstraints`, the binding's `matchResources`, one invocation per parameter the
//! binding's `paramRef` selects). An invocation whose `matchConditions` hold (they see no
//! `namespaceObject`) runs its `mutations` in order, each over the object the one before left,
//! with `variables` evaluated again for each: an `ApplyConfiguration` expression builds an
//! `Object{...}` that is merged into the object, a `JSONPatch` expression a list of
//! `JSONPatch{...}` operations ([`patch`]). A mutation that fails refuses the write under
//! `failurePolicy: Fail` (403, reason `Invalid`, `policy 'p' with binding 'b' denied request:
//! ...`); under `Ignore` it is passed over and the next one runs.
//!
//! Reinvocation ([`Passes`]): when any mutation of the first pass applied, or a mutating
//! webhook changed the object, the policies with `reinvocationPolicy: IfNeeded` that ran are
//! run once more (a second pass of the mutating chain, before the webhooks are asked again).
//!
//! Not as kube-apiserver: the object is not defaulted again between mutations (it is
//! defaulted and validated after them, as the webhooks' changes are); a field the schema does
//! not declare is not refused by an `ApplyConfiguration` (it is pruned or dropped when the
//! object is decided again); the order of policies is by policy and binding name (there,
//! unspecified); `authorizer` is not defined and `request.userInfo` is empty, as for the
//! validating policies.

use std::collections::BTreeSet;

use cel::{Context, Value as Cel};
use serde_json::{Map, Value};

use super::{
    Activation, Conditions, Operation, Params, Policies, Request, add_variables, conditions_of,
    name_of, spec_items, str_of, words, write_of,
};
use crate::crd::{cel_evaluate, json_to_cel};
use crate::objects::apply::schema::{MergeSchema, schema_for};
use crate::status::ApiError;

mod patch;

/// One invocation: a policy through one of its bindings with one of its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Invocation {
    policy: String,
    binding: String,
    param: usize,
}

/// What the first pass of the mutating chain leaves for the second.
#[derive(Debug, Default)]
pub(crate) struct Passes {
    /// `IfNeeded` invocations that ran in the first pass.
    ran: Vec<Invocation>,
    /// Whether any mutation applied in the first pass (even one that changed nothing).
    applied: bool,
    /// The object as the policies left it in the first pass.
    output: Option<Value>,
}

impl Passes {
    /// Whether the first pass asks for a second one.
    pub(crate) fn wants_second(&self) -> bool {
        self.applied
    }
}

/// Runs the mutating policies over `object` (a create's or an update's; `old` for an update)
/// for the first pass (`second` false) or the second, recording in `passes` what the second
/// needs; a list and map merge follows the schema of `req`'s resource.
pub(crate) fn mutate(
    policies: &Policies,
    req: &Request<'_>,
    operation: Operation,
    object: &mut Value,
    old: Option<&Value>,
    passes: &mut Passes,
    second: bool,
) -> Result<(), ApiError> {
    if operation == Operation::Delete {
        return Ok(());
    }
    if second && !passes.applied && passes.output.as_ref() == Some(object) {
        return Ok(());
    }
    let schema = schema_for(req.res);
    let schema = &*schema;
    for b in &policies.bound {
        let (target, labels) = write_of(
            req,
            operation,
            Some(object),
            old,
            policies.namespace.as_ref(),
        );
        if !b.matches(&target, &labels) {
            continue;
        }
        let names = (name_of(&b.policy), name_of(&b.binding));
        let fail = b.fails_closed();
        let params: Vec<Cel> = match &b.params {
            Params::None => vec![Cel::Null],
            Params::Found(p) => p.iter().map(json_to_cel).collect(),
            Params::Error(e) if fail => {
                let why = format!("failed to configure binding: {e}");
                return Err(refusal(req, object, names, &why, "Forbidden"));
            }
            Params::Error(_) => continue,
        };
        let if_needed = b
            .policy
            .pointer("/spec/reinvocationPolicy")
            .and_then(Value::as_str)
            == Some("IfNeeded");
        let (variables, conditions, mutations) = (
            spec_items(&b.policy, "variables"),
            spec_items(&b.policy, "matchConditions"),
            spec_items(&b.policy, "mutations"),
        );
        let types: BTreeSet<String> = mutations
            .iter()
            .filter_map(expression_of)
            .flat_map(patch::constructed_types)
            .collect();
        let env = patch::env_for(&types);
        let base = Activation::new(req, operation, Some(object), old, policies);
        for (i, p) in params.into_iter().enumerate() {
            let key = Invocation {
                policy: names.0.to_string(),
                binding: names.1.to_string(),
                param: i,
            };
            if second && !passes.ran.contains(&key) {
                continue;
            }
            let context = |object: &Value, namespace: bool| {
                let mut ctx = Context::with_env(env.clone());
                base.bind(&mut ctx, json_to_cel(object), p.clone());
                if !namespace {
                    ctx.add_variable_from_value("namespaceObject", Cel::Null);
                }
                add_variables(&mut ctx, &variables);
                ctx
            };
            match conditions_of(&context(object, false), &conditions) {
                Conditions::Hold => {}
                Conditions::Skip => continue,
                Conditions::Failed(why) if fail => {
                    return Err(refusal(req, object, names, &why, "Invalid"));
                }
                Conditions::Failed(_) => continue,
            }
            for m in &mutations {
                let ctx = context(object, true);
                match mutation(m, &ctx, object, schema) {
                    Ok(()) => passes.applied |= !second,
                    Err(e) if fail => {
                        return Err(refusal(req, object, names, &e, "Invalid"));
                    }
                    Err(_) => {}
                }
            }
            if !second && if_needed {
                passes.ran.push(key);
            }
        }
    }
    if !second {
        passes.output = Some(object.clone());
    }
    Ok(())
}

/// A mutation's expression (`applyConfiguration.expression` or `jsonPatch.expression`).
fn expression_of(m: &Map<String, Value>) -> Option<&str> {
    ["applyConfiguration", "jsonPatch"]
        .iter()
        .find_map(|k| m.get(*k)?.get("expression")?.as_str())
}

/// Applies one mutation to `object`; the failure in kube-apiserver's words.
fn mutation(
    m: &Map<String, Value>,
    ctx: &Context<'_, '_>,
    object: &mut Value,
    schema: &dyn MergeSchema,
) -> Result<(), String> {
    let expr = expression_of(m).unwrap_or_default();
    let result = cel_evaluate(expr, ctx).map_err(|e| words(expr, e))?;
    match str_of(m, "patchType") {
        "ApplyConfiguration" => patch::apply_configuration(&result, object, schema),
        "JSONPatch" => patch::json_patch(&result, object),
        other => Err(format!("unsupported patch type: {other:?}")),
    }
}

/// The refusal of a write by a mutating policy: 403 with the failure as its message (the
/// name is the object's, or the name it will be generated from).
fn refusal(
    req: &Request<'_>,
    object: &Value,
    (policy, binding): (&str, &str),
    message: &str,
    reason: &str,
) -> ApiError {
    let text = format!("policy '{policy}' with binding '{binding}' denied request: {message}");
    let name = Some(req.name)
        .filter(|n| !n.is_empty())
        .or_else(|| {
            object
                .pointer("/metadata/generateName")
                .and_then(Value::as_str)
        })
        .unwrap_or("Unknown");
    let mut e = ApiError::forbidden(req.res, name, "");
    e.message = text.clone();
    e.reason = reason.to_string();
    if let Some(Value::Object(d)) = e.details.as_mut() {
        d.insert("causes".into(), serde_json::json!([{ "message": text }]));
    }
    e
}

#[cfg(test)]
mod tests;
