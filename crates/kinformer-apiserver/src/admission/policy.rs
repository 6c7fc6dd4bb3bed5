//! ValidatingAdmissionPolicy: the CEL admission policies of `admissionregistration.k8s.io/v1`,
//! as kube-apiserver's `k8s.io/apiserver/pkg/admission/plugin/policy/validating` applies them
//! to every write after the object has been defaulted and validated.
//!
//! A policy applies to a write through each of its bindings whose policy exists, when the
//! policy's `matchConstraints` and the binding's `matchResources` match it: resource rules
//! (`apiGroups`, `apiVersions`, `resources` with subresources such as `deployments/status`,
//! `operations`, `scope`, `resourceNames`), `excludeResourceRules`, `namespaceSelector` (the
//! labels of the object's namespace; of the object itself for a namespace) and
//! `objectSelector` (the new or the old object's labels). Then, for each parameter the
//! binding's `paramRef` selects (or once without `paramKind`), `variables` are evaluated in
//! order, the `matchConditions` decide (one false skips, an error is a failure), and each of
//! the `validations` is evaluated with `object`, `oldObject`, `params`, `namespaceObject`,
//! `request` and `variables`. A validation that is not `true` is a denial in its `message`,
//! `messageExpression` or `failed expression: <expression>`, with its `reason`; one that fails
//! is a denial when `failurePolicy` is `Fail` (the default). A denial becomes what the
//! binding's `validationActions` say: `Deny` refuses the write with the first denial
//! (`deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b'
//! denied request: ...`, 422 Invalid unless the validation names another reason), `Warn`
//! adds a `Warning` header, `Audit` nothing (there is no audit log).
//!
//! Not as kube-apiserver: policies apply at once (there, after its informers see them); no
//! type checking of the expressions (`status.typeChecking`); `authorizer` is not defined;
//! `request.userInfo` is empty; `auditAnnotations` are not evaluated; with `matchPolicy:
//! Equivalent` (the default) a rule's versions are not compared, and objects are not
//! converted to the version a rule names; `/scale` writes are seen as writes of the main
//! resource.

use std::sync::Arc;

use cel::Value as Cel;
use cel::objects::{Key, Map as CelMap};
use serde_json::{Map, Value, json};

use crate::crd::{ExpressionError, cel_context, cel_evaluate, json_to_cel};
use crate::resource::ResourceInfo;
use crate::status::ApiError;

mod hooks;
mod matching;
pub(crate) mod mutating;
pub(crate) use hooks::{conditions_hold, write_matches};
use matching::{Labels, Target, write_of};
pub(crate) use matching::{label_selector, may_apply};

/// The group whose resources (policies, bindings, webhook configurations) no policy applies
/// to, so that a policy can never lock itself in.
const EXEMPT_GROUP: &str = "admissionregistration.k8s.io";

/// The longest message a `messageExpression` may give.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// What a write does, as admission names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// A create (or an apply that creates).
    Create,
    /// An update, patch or apply of an existing object.
    Update,
    /// A delete.
    Delete,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// The write being admitted.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    /// The resource written.
    pub res: &'a ResourceInfo,
    /// The subresource written through (`status`), if any.
    pub subresource: Option<&'a str>,
    /// The object's namespace (empty for cluster-scoped objects).
    pub namespace: &'a str,
    /// The object's name.
    pub name: &'a str,
    /// Whether the write is a dry run.
    pub dry_run: bool,
}

/// What a binding's `paramRef` selected.
#[derive(Debug, Clone)]
pub(crate) enum Params {
    /// The policy has no `paramKind`: it is evaluated once, with `params` null.
    None,
    /// The parameter objects selected, each evaluated in turn (none: the binding is skipped).
    Found(Vec<Value>),
    /// A configuration error ("no params found ..."): the write is refused under
    /// `failurePolicy: Fail`, whatever the binding's actions.
    Error(String),
}

/// A policy as one of its bindings binds it.
#[derive(Debug, Clone)]
pub(crate) struct Bound {
    /// The ValidatingAdmissionPolicy.
    pub policy: Value,
    /// The ValidatingAdmissionPolicyBinding.
    pub binding: Value,
    /// Its parameters.
    pub params: Params,
}

impl Bound {
    /// Whether the policy's `matchConstraints` and the binding's `matchResources` match the
    /// write.
    fn matches(&self, target: &Target<'_>, labels: &Labels<'_>) -> bool {
        let Some(constraints) = self.policy.pointer("/spec/matchConstraints") else {
            return false;
        };
        if !target.rules_match(constraints, false) || !labels.match_selectors(constraints) {
            return false;
        }
        self.binding
            .pointer("/spec/matchResources")
            .is_none_or(|m| target.rules_match(m, true) && labels.match_selectors(m))
    }

    /// Whether a failure refuses the write (`failurePolicy: Fail`, the default).
    fn fails_closed(&self) -> bool {
        self.policy
            .pointer("/spec/failurePolicy")
            .and_then(Value::as_str)
            != Some("Ignore")
    }
}

/// The policies that may apply to one write, read before it: each bound policy, and the
/// namespace the object is in.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policies {
    /// Bound policies, by policy then binding name.
    pub bound: Vec<Bound>,
    /// The object's namespace, as stored (`None` for cluster-scoped objects, or absent).
    pub namespace: Option<Value>,
}

/// Whether no policy applies to writes of `res` (the policies' own group).
pub(crate) fn exempt(res: &ResourceInfo) -> bool {
    res.group == EXEMPT_GROUP
}

/// Admits (or refuses) a write of `object` over `old` (`None` for a create, `object` `None`
/// for a delete), recording the warnings of `Warn` bindings.
pub(crate) fn admit(
    policies: &Policies,
    req: &Request<'_>,
    operation: Operation,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let mut denied: Option<Denial> = None;
    let (target, labels) = write_of(req, operation, object, old, policies.namespace.as_ref());
    let mut base: Option<Activation> = None;
    for b in &policies.bound {
        if !b.matches(&target, &labels) {
            continue;
        }
        let names = (name_of(&b.policy), name_of(&b.binding));
        let fail = b.fails_closed();
        if let Params::Error(e) = &b.params {
            // a configuration error refuses the write whatever the binding's actions
            if fail && denied.is_none() {
                denied = Some(Denial {
                    policy: names.0.to_string(),
                    binding: names.1.to_string(),
                    message: format!("failed to configure binding: {e}"),
                    reason: String::new(),
                });
            }
            continue;
        }
        let base =
            base.get_or_insert_with(|| Activation::new(req, operation, object, old, policies));
        let decisions = evaluate(b, fail, base);
        let actions: Vec<&str> = b
            .binding
            .pointer("/spec/validationActions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for d in decisions {
            for action in &actions {
                match *action {
                    "Deny" if denied.is_none() => {
                        denied = Some(Denial {
                            policy: names.0.to_string(),
                            binding: names.1.to_string(),
                            message: d.message.clone(),
                            reason: d.reason.clone(),
                        })
                    }
                    "Warn" => crate::warnings::record(format!(
                        "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                        names.0, names.1, d.message
                    )),
                    _ => {}
                }
            }
        }
    }
    match denied {
        Some(d) => Err(d.error(req)),
        None => Ok(()),
    }
}

/// An object's `metadata.name` (empty when it has none).
pub(crate) fn name_of(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The refusal of a write: the first denial of a `Deny` binding.
struct Denial {
    policy: String,
    binding: String,
    message: String,
    reason: String,
}

impl Denial {
    /// kube-apiserver's error: `admission.NewForbidden`'s message, with the validation's
    /// reason and its code, and the message again as the one cause.
    fn error(&self, req: &Request<'_>) -> ApiError {
        let message = format!(
            "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
            self.policy, self.binding, self.message
        );
        let mut e = ApiError::forbidden(req.res, req.name, &message);
        let reason = if self.reason.is_empty() {
            "Invalid"
        } else {
            &self.reason
        };
        e.code = match reason {
            "Forbidden" => 403,
            "Unauthorized" => 401,
            "RequestEntityTooLarge" => 413,
            "Invalid" => 422,
            _ => 500,
        };
        e.reason = reason.to_string();
        if let Some(Value::Object(d)) = e.details.as_mut() {
            d.insert("causes".into(), json!([{ "message": message }]));
        }
        e
    }
}

/// One validation's denial (a validation not `true`, or a failure under `failurePolicy:
/// Fail`).
#[derive(Debug)]
struct Decision {
    message: String,
    reason: String,
}

/// The variables every expression of a write sees, but `params` and `variables`.
struct Activation {
    object: Cel,
    old: Cel,
    request: Cel,
    namespace: Cel,
}

impl Activation {
    fn new(
        req: &Request<'_>,
        operation: Operation,
        object: Option<&Value>,
        old: Option<&Value>,
        policies: &Policies,
    ) -> Self {
        let res = req.res;
        let kind = json!({"group": res.group, "version": res.version, "kind": res.kind});
        let resource = json!({"group": res.group, "version": res.version, "resource": res.plural});
        let options_kind = match operation {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
        };
        let request = json!({
            "kind": kind,
            "resource": resource,
            "subResource": req.subresource.unwrap_or(""),
            "requestKind": kind,
            "requestResource": resource,
            "requestSubResource": req.subresource.unwrap_or(""),
            "name": req.name,
            "namespace": req.namespace,
            "operation": operation.as_str(),
            "userInfo": {},
            "dryRun": req.dry_run,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": options_kind},
        });
        let cel = |v: Option<&Value>| v.map(json_to_cel).unwrap_or(Cel::Null);
        let namespace = if res.namespaced() {
            cel(policies.namespace.as_ref())
        } else {
            Cel::Null
        };
        Activation {
            object: cel(object),
            old: cel(old),
            request: json_to_cel(&request),
            namespace,
        }
    }
}

impl Activation {
    /// Binds these variables in `ctx`, with `object` and `params`.
    fn bind(&self, ctx: &mut cel::Context<'_, '_>, object: Cel, params: Cel) {
        ctx.add_variable_from_value("object", object);
        ctx.add_variable_from_value("oldObject", self.old.clone());
        ctx.add_variable_from_value("request", self.request.clone());
        ctx.add_variable_from_value("namespaceObject", self.namespace.clone());
        ctx.add_variable_from_value("params", params);
    }
}

/// The denials of one bound policy (each parameter in turn); `fail`: whether a failure is
/// one (`failurePolicy: Fail`).
fn evaluate(b: &Bound, fail: bool, base: &Activation) -> Vec<Decision> {
    let failure = |message: String| {
        fail.then(|| Decision {
            message,
            reason: String::new(),
        })
    };
    let params: Vec<Cel> = match &b.params {
        Params::None => vec![Cel::Null],
        Params::Found(p) => p.iter().map(json_to_cel).collect(),
        Params::Error(_) => return Vec::new(),
    };
    let items = |k: &str| spec_items(&b.policy, k);
    let (variables, conditions, validations) = (
        items("variables"),
        items("matchConditions"),
        items("validations"),
    );
    let mut out = Vec::new();
    for p in params {
        let mut ctx = cel_context();
        base.bind(&mut ctx, base.object.clone(), p);
        add_variables(&mut ctx, &variables);
        match conditions_of(&ctx, &conditions) {
            Conditions::Hold => {}
            Conditions::Skip => continue,
            Conditions::Failed(why) => {
                out.extend(failure(why));
                continue;
            }
        }
        for v in &validations {
            let expr = str_of(v, "expression");
            match cel_evaluate(expr, &ctx) {
                Ok(Cel::Bool(true)) => {}
                Ok(_) => out.push(Decision {
                    message: message(v, &ctx),
                    reason: str_of(v, "reason").to_string(),
                }),
                Err(e) => out.extend(failure(words(expr, e))),
            }
        }
    }
    out
}

/// Evaluates a policy's `variables` in order into `ctx` as `variables`: each sees those
/// before it; one that fails is left out (an expression naming it fails then).
fn add_variables(ctx: &mut cel::Context<'_, '_>, variables: &[Map<String, Value>]) {
    let mut vars: Vec<(Key, Cel)> = Vec::new();
    let as_map = |vars: &Vec<(Key, Cel)>| {
        Cel::Map(CelMap {
            map: Arc::new(vars.iter().cloned().collect()),
        })
    };
    ctx.add_variable_from_value("variables", as_map(&vars));
    for v in variables {
        let (name, expr) = (str_of(v, "name"), str_of(v, "expression"));
        if let Ok(x) = cel_evaluate(expr, ctx) {
            vars.push((Key::String(Arc::new(name.to_string())), x));
            ctx.add_variable_from_value("variables", as_map(&vars));
        }
    }
}

/// What a policy's `matchConditions` decide.
enum Conditions {
    /// All hold: the policy applies.
    Hold,
    /// One is false: the policy is skipped.
    Skip,
    /// None is false and some failed (their failures, joined): `failurePolicy` decides.
    Failed(String),
}

/// Evaluates `conditions` in `ctx`.
fn conditions_of(ctx: &cel::Context<'_, '_>, conditions: &[Map<String, Value>]) -> Conditions {
    let mut skip = false;
    let mut errors = Vec::new();
    for c in conditions {
        let expr = str_of(c, "expression");
        match cel_evaluate(expr, ctx) {
            Ok(Cel::Bool(true)) => {}
            Ok(_) => skip = true,
            Err(e) => errors.push(words(expr, e)),
        }
    }
    match (skip, errors.is_empty()) {
        (true, _) => Conditions::Skip,
        (false, true) => Conditions::Hold,
        (false, false) => Conditions::Failed(errors.join(", ")),
    }
}

/// An expression's failure in kube-apiserver's words.
fn words(expr: &str, e: ExpressionError) -> String {
    match e {
        ExpressionError::Compile(e) => format!("compilation error: {e}"),
        ExpressionError::Eval(e) => format!("expression '{expr}' resulted in error: {e}"),
    }
}

/// A failed validation's message: its `messageExpression`'s (one line, not too long), its
/// `message`, or `failed expression: ...`.
fn message(v: &Map<String, Value>, ctx: &cel::Context<'_, '_>) -> String {
    let from_expression = Some(str_of(v, "messageExpression"))
        .filter(|e| !e.is_empty())
        .and_then(|e| match cel_evaluate(e, ctx) {
            Ok(Cel::String(s)) => Some(s.trim().to_string()),
            _ => None,
        })
        .filter(|s| !s.is_empty() && s.len() <= MAX_MESSAGE_BYTES && !s.contains('\n'));
    from_expression
        .or_else(|| Some(str_of(v, "message").trim().to_string()).filter(|m| !m.is_empty()))
        .unwrap_or_else(|| format!("failed expression: {}", str_of(v, "expression").trim()))
}

/// The objects of the list `spec.<key>` of a policy.
fn spec_items(policy: &Value, key: &str) -> Vec<Map<String, Value>> {
    policy
        .pointer(&format!("/spec/{key}"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|x| x.as_object().cloned()).collect())
        .unwrap_or_default()
}

fn str_of<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod tests;
