//! A write that admission webhooks or mutating admission policies see
//! ([`crate::admission::webhook`], [`crate::admission::policy::mutating`]), in
//! kube-apiserver's order: the verb decides its write as a dry run would (defaulting,
//! validation, the built-in admission; the validating admission policies are left for later)
//! and keeps it in a [`Gate`]; the mutating admission policies run, then the mutating
//! webhooks are called in the order of their configurations' names, each seeing the object as
//! the ones before it left it; an object they changed is decided again (defaulted and
//! validated, `managedFields` as they were: their changes are not a field manager's), with
//! the validating admission policies, which otherwise admit the first decision; the
//! validating webhooks are called; then the decision is stored, unless the live object
//! changed meanwhile, in which case all of it runs again (as kube-apiserver's
//! `GuaranteedUpdate` re-admits on a conflict). A dry run stops before storing.
//!
//! The mutating chain runs a second time when a policy's mutation applied or a webhook
//! changed the object (kube-apiserver's reinvocation): the policies with `reinvocationPolicy:
//! IfNeeded` that ran run again, then the `IfNeeded` webhooks called before a later change
//! are called again (the server's own mutations are made before the chain, so they never
//! cause one).
//!
//! A write through `/scale` is seen as the `Scale` written (kind `autoscaling/v1 Scale`, the
//! resource `deployments`, subresource `scale`); a mutating webhook's patch of it changes the
//! replicas.
//!
//! Not as kube-apiserver: a create's mutating webhooks see the object after the server's own
//! preparation of it (defaults applied, a status reset; no uid, creationTimestamp, generation
//! or resourceVersion, as there) rather than before it; validating webhooks are called one
//! after the other, not at once; `RunningServer`'s in-process writes are not seen by webhooks
//! (the server's own controllers' are: `crate::controllers::admitted`).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::admission::policy::{Operation, Request, mutating};
use crate::admission::webhook::{Hook, Review};
use crate::api::{Api, Gate, Stage};
use crate::context::Context;
use crate::http::conversion;
use crate::objects::UpdateMode;
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::StoredObject;

mod ask;
use ask::ask;

/// How often a write is decided again when the object changed under it.
const MAX_TRIES: usize = 5;

/// The webhooks that may see writes of one resource, read before the write, and the other
/// checks a write of it waits for.
#[derive(Debug, Default)]
pub(crate) struct Hooks {
    /// Whether a mutating admission policy may apply (read again for the write itself).
    policies: bool,
    mutating: Vec<Hook>,
    validating: Vec<Hook>,
    /// Who must hold what an RBAC role or binding written grants ([`crate::rbac::escalation`]).
    escalation: Option<crate::token::User>,
}

/// The webhooks configured for writes of `res` by `requester` (`None`: the server's own
/// identity), and the checks such a write waits for (a conversion webhook, RBAC's escalation
/// check); `None` when there are none (the usual case: two short reads of the store).
pub(crate) fn hooks_for(
    ctx: &Context,
    res: &ResourceInfo,
    requester: Option<&crate::token::User>,
) -> Option<Hooks> {
    let api = &ctx.api;
    let escalation = requester
        .filter(|u| {
            ctx.config.rbac
                && crate::rbac::escalation::applies(res)
                && !u.groups.iter().any(|g| g == crate::rbac::MASTERS)
        })
        .cloned();
    if crate::admission::webhook::exempt(res) {
        return escalation.map(|e| Hooks {
            escalation: Some(e),
            ..Hooks::default()
        });
    }
    let read = |plural: &str, mutating: bool| -> Vec<Hook> {
        let Some(r) = api
            .registry
            .find("admissionregistration.k8s.io", "v1", plural)
        else {
            return Vec::new();
        };
        let Ok((_, objs)) = api.store.list(&r.group_resource(), None, "", "") else {
            return Vec::new();
        };
        // the store lists by name: configurations in the order of their names
        objs.iter()
            .flat_map(|o| Hook::of_configuration(&o.to_value(), mutating))
            .collect()
    };
    let hooks = Hooks {
        policies: api.has_mutating_policies(res),
        mutating: read("mutatingwebhookconfigurations", true),
        validating: read("validatingwebhookconfigurations", false),
        escalation,
    };
    // a version a conversion webhook shows, and an RBAC object a user writes, are written the
    // same way, to call the webhook or check the user in between
    (hooks.policies
        || !hooks.mutating.is_empty()
        || !hooks.validating.is_empty()
        || hooks.escalation.is_some()
        || conversion::by_webhook(res))
    .then_some(hooks)
}

/// The write being made, as the webhooks are told of it.
pub(crate) struct Call<'a> {
    /// The resource written (the version written through).
    pub res: &'a ResourceInfo,
    /// The subresource written through (`status`), if any.
    pub subresource: Option<&'a str>,
    /// The object's namespace (empty for cluster-scoped objects).
    pub namespace: &'a str,
    /// The name in the request's path (empty for a create).
    pub name: &'a str,
    /// The mode of an update.
    pub mode: UpdateMode,
    /// Whether it is a dry run.
    pub dry_run: bool,
    /// Whether the verb is a delete.
    pub delete: bool,
    /// `request.userInfo`.
    pub user: Value,
    /// The `fieldManager` asked for, if any.
    pub field_manager: Option<&'a str>,
    /// A delete's options as sent (`propagationPolicy`, ...).
    pub delete_options: Option<Value>,
    /// Where the replicas are, for a write through `/scale` (the webhooks see a `Scale`).
    pub scale: Option<&'a crate::resource::ScaleInfo>,
}

impl Call<'_> {
    /// An object as this write's webhooks see it: in the version written through, or as
    /// the `Scale` written.
    fn view(&self, o: &StoredObject) -> Value {
        let v = served(self.res, o);
        match self.scale {
            Some(scale) => crate::scale::to_scale(scale, &v),
            None => v,
        }
    }

    /// The review of this write sent to one webhook (a fresh uid; `v1` until the webhook's
    /// versions are known).
    fn review<'r>(
        &'r self,
        operation: Operation,
        name: &'r str,
        object: Option<&'r Value>,
        old: Option<&'r Value>,
        options: &'r Value,
    ) -> Review<'r> {
        Review {
            res: self.res,
            subresource: self.subresource,
            namespace: self.namespace,
            name,
            operation,
            object,
            old,
            dry_run: self.dry_run,
            user: &self.user,
            options,
            uid: crate::objects::new_uid(),
            version: "v1",
            scale: self.scale.is_some(),
        }
    }

    fn options(&self, operation: Operation) -> Value {
        let mut o = match (operation, &self.delete_options) {
            (Operation::Delete, Some(Value::Object(m))) => m.clone(),
            _ => Map::new(),
        };
        let kind = match operation {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
        };
        o.insert("kind".into(), kind.into());
        o.insert("apiVersion".into(), "meta.k8s.io/v1".into());
        if operation != Operation::Delete
            && let Some(m) = self.field_manager
        {
            o.insert("fieldManager".into(), m.into());
        }
        if self.dry_run {
            o.insert("dryRun".into(), json!(["All"]));
        } else {
            o.remove("dryRun");
        }
        Value::Object(o)
    }
}

/// What the write did: the object it answers with, and whether it removed the object.
pub(crate) type Written = (Arc<StoredObject>, bool);

/// Makes the write `plan` decides (given a [`Gate`], it must decide without storing), seen by
/// `hooks` (see the module's documentation).
pub(crate) async fn write(
    ctx: &Context,
    call: &Call<'_>,
    hooks: &Hooks,
    plan: impl Fn(&Gate) -> Result<(), ApiError>,
) -> Result<Written, ApiError> {
    let api = &ctx.api;
    let res = call.res;
    // a write through a version a conversion webhook shows is decided over the live object as
    // that version shows it, and stored converted (`crate::http::conversion`)
    let converting = conversion::by_webhook(res) && !call.delete;
    for _ in 0..MAX_TRIES {
        let pinned = match converting {
            true => Some(live_in_version(ctx, call).await?),
            false => None,
        };
        let gate_for = || match &pinned {
            Some(live) => Gate::new(call.dry_run).pinned(live.as_ref().map(|(_, p)| p.clone())),
            None => Gate::new(call.dry_run),
        };
        // the validating admission policies see the object the mutating admission leaves
        let mutations_follow = hooks.policies || !hooks.mutating.is_empty();
        let gate = gate_for().admitting_later(mutations_follow);
        match plan(&gate) {
            Err(_) if gate.stale() => continue,
            r => r?,
        }
        let mut planned = gate.take()?;
        let old = gate
            .pinned_live()
            .or(planned.current.as_ref())
            .map(|c| call.view(c));
        let operation = if call.delete {
            Operation::Delete
        } else if planned.current.is_none() {
            Operation::Create
        } else {
            Operation::Update
        };
        let options = call.options(operation);
        let namespace = namespace_of(api, res, call.namespace);
        // the mutating admission policies, then the mutating webhooks, each seeing what the
        // ones before it made
        let policies = (hooks.policies && operation != Operation::Delete)
            .then(|| api.mutating_policies(res, call.subresource, call.namespace))
            .flatten();
        if !hooks.mutating.is_empty() || policies.is_some() {
            let decided = call.view(&planned.answer);
            let given_name = !call.name.is_empty() || operation != Operation::Create;
            let first = view(&decided, operation, given_name);
            let mut object = first.clone();
            let name = if given_name {
                crate::admission::policy::name_of(&decided).to_string()
            } else {
                String::new()
            };
            let req = Request {
                res,
                subresource: call.subresource,
                namespace: call.namespace,
                name: &name,
                dry_run: call.dry_run,
            };
            let mut passes = mutating::Passes::default();
            let mut policies_pass = |object: &mut Value, second: bool| match &policies {
                Some(p) => {
                    let old = old.as_ref();
                    mutating::mutate(p, &req, operation, object, old, &mut passes, second)
                        .map(|()| passes.wants_second())
                }
                None => Ok(false),
            };
            // round 0 runs the policies and calls every webhook; a second round (when a
            // policy's mutation applied or a webhook changed the object) runs again the
            // `IfNeeded` policies that ran, then calls again the `IfNeeded` webhooks called
            // before a change (once)
            let mut again = policies_pass(&mut object, false)?;
            let mut previously: Vec<usize> = Vec::new();
            let mut reinvoke: Vec<usize> = Vec::new();
            for round in 0..2 {
                if round == 1 {
                    if !again {
                        break;
                    }
                    let before = object.clone();
                    policies_pass(&mut object, true)?;
                    if object != before {
                        reinvoke.append(&mut previously);
                    }
                    if reinvoke.is_empty() {
                        break;
                    }
                }
                for (i, hook) in hooks.mutating.iter().enumerate() {
                    if round == 1 && !reinvoke.contains(&i) {
                        continue;
                    }
                    let sent = (operation != Operation::Delete).then_some(&object);
                    let review = call.review(operation, &name, sent, old.as_ref(), &options);
                    let asked = ask(ctx, hook, review, namespace.as_ref()).await?;
                    if let Some(patch) = asked.patch
                        && operation != Operation::Delete
                    {
                        let before = object.clone();
                        json_patch::patch(&mut object, &patch)
                            .map_err(|e| ApiError::internal(&format!("JSON Patch: {e}")))?;
                        if object != before {
                            reinvoke.append(&mut previously);
                            again = true;
                        }
                    }
                    if round == 0 && asked.called && hook.reinvoked_if_needed() {
                        previously.push(i);
                    }
                }
            }
            if operation != Operation::Delete && object != first {
                let Value::Object(mut body) = object else {
                    return Err(ApiError::internal(
                        "an admission webhook's patch left no object",
                    ));
                };
                let seen = planned.current.as_ref().map(|c| c.resource_version);
                let again = gate_for();
                let ns = (!call.namespace.is_empty()).then_some(call.namespace);
                if operation == Operation::Create {
                    // the name it was given (or generated) unless a webhook set one
                    if let Some(Value::Object(meta)) = body.get_mut("metadata")
                        && meta
                            .get("name")
                            .and_then(Value::as_str)
                            .is_none_or(str::is_empty)
                    {
                        meta.insert(
                            "name".into(),
                            crate::admission::policy::name_of(&decided).into(),
                        );
                    }
                    let planned_again = api.create_by(res, ns, body, None, Stage::Plan(&again));
                    match planned_again {
                        Err(_) if again.stale() => continue,
                        r => r?,
                    };
                } else {
                    let name = crate::admission::policy::name_of(&decided).to_string();
                    if let (Some(scale), Some(current)) = (call.scale, &planned.current) {
                        // the patched Scale's replicas, in the object decided before
                        let mut before = served(res, &planned.answer);
                        if let Some(m) = before.get_mut("metadata").and_then(Value::as_object_mut) {
                            m.insert(
                                "resourceVersion".into(),
                                current.resource_version.to_string().into(),
                            );
                        }
                        body = crate::scale::apply_scale(res, scale, before, &Value::Object(body))?;
                    }
                    let planned_again =
                        api.update_by(res, ns, &name, body, call.mode, None, Stage::Plan(&again));
                    match planned_again {
                        Err(_) if again.stale() => continue,
                        r => r?,
                    };
                }
                planned = again.take()?;
                if planned.current.as_ref().map(|c| c.resource_version) != seen {
                    continue;
                }
            } else if mutations_follow {
                let admitted = admit_planned(api, call, &planned, gate.pinned_live());
                admitted?;
            }
        } else if mutations_follow {
            admit_planned(api, call, &planned, gate.pinned_live())?;
        }
        // RBAC's escalation check, on the object as admitted so far (kube-apiserver's RBAC
        // storage checks it before validation and the validating webhooks)
        if let Some(user) = &hooks.escalation
            && !call.delete
            && !planned.removes()
        {
            let new = call.view(&planned.answer);
            crate::rbac::escalation::check(
                api,
                &ctx.rbac_cache,
                user,
                res,
                call.namespace,
                &new,
                old.as_ref(),
            )?;
        }
        // the validating webhooks, seeing what would be stored
        if !hooks.validating.is_empty() {
            let object = (!planned.removes() && operation != Operation::Delete)
                .then(|| call.view(&planned.answer));
            let final_name = object
                .as_ref()
                .or(old.as_ref())
                .map(|o| crate::admission::policy::name_of(o).to_string())
                .unwrap_or_default();
            for hook in &hooks.validating {
                let review = call.review(
                    operation,
                    &final_name,
                    object.as_ref(),
                    old.as_ref(),
                    &options,
                );
                ask(ctx, hook, review, namespace.as_ref()).await?;
            }
        }
        let removed = planned.removes();
        if converting {
            // stored, and answered, in the storage version (the answer is shown through the
            // version written as every read is); a dry run's answer is converted there too, as
            // kube-apiserver's dry-run storage encodes it
            if call.dry_run {
                let answer = match stored_if_pinned(&pinned, &planned.answer) {
                    Some(stored) => stored,
                    None => conversion::to_storage(ctx, res, &planned.answer).await?,
                };
                return Ok((answer, removed));
            }
            if let Some(o) = planned.stored().cloned() {
                planned.store_instead(conversion::to_storage(ctx, res, &o).await?);
            }
        }
        if call.dry_run {
            return Ok((planned.answer.clone(), removed));
        }
        let name = planned.name().to_string();
        if let Some(o) = api.commit(res, &name, planned)? {
            return Ok((stored_if_pinned(&pinned, &o).unwrap_or(o), removed));
        }
    }
    Err(ApiError::conflict_modified(res, call.name))
}

/// Admits (the validating admission policies) what was planned for `call` without them, over
/// `pinned` (the live object as the version written through shows it) or the live object the
/// plan saw.
fn admit_planned(
    api: &Api,
    call: &Call<'_>,
    planned: &crate::api::Planned,
    pinned: Option<&Arc<StoredObject>>,
) -> Result<(), ApiError> {
    let mode = (!call.delete && planned.current.is_some()).then_some(call.mode);
    let write = crate::api::Write::new(
        call.namespace,
        planned.name(),
        mode,
        Stage::from(call.dry_run),
    );
    let live = pinned.or(planned.current.as_ref());
    api.admit_planned(call.res, write, planned, live, call.delete)
}

/// The object `call` writes, as stored and as the version written through shows it
/// (converted by the CRD's webhook, carrying the storage version's `apiVersion` as every
/// object a write decides does); `None` when there is none (a create, or a generated name).
async fn live_in_version(ctx: &Context, call: &Call<'_>) -> Result<Option<Pinned>, ApiError> {
    if call.name.is_empty() {
        return Ok(None);
    }
    let res = call.res;
    let key = crate::objects::storage_key(res, call.namespace, call.name);
    let Some(stored) = ctx.api.store.get(&res.group_resource(), &key) else {
        return Ok(None);
    };
    let shown = conversion::served_one(ctx, res, stored.clone()).await?;
    let pin = match shown.in_api_version(&res.stored_api_version()) {
        Some(o) => Arc::new(o),
        None => shown,
    };
    Ok(Some((stored, pin)))
}

/// A live object as stored, and as pinned for a write ([`live_in_version`]).
type Pinned = (Arc<StoredObject>, Arc<StoredObject>);

/// The stored object `o` was pinned for, when `o` is the pinned object itself: a decision
/// that changes nothing answers with it, and the stored one is what is answered.
fn stored_if_pinned(
    pinned: &Option<Option<Pinned>>,
    o: &Arc<StoredObject>,
) -> Option<Arc<StoredObject>> {
    match pinned {
        Some(Some((stored, pin))) if Arc::ptr_eq(pin, o) => Some(stored.clone()),
        _ => None,
    }
}

/// `request.userInfo` for a request by `requester` (a service account), or by the server's
/// own token's user.
pub(crate) fn user_info(requester: Option<&crate::token::User>) -> Value {
    match requester {
        Some(u) => u.to_json(),
        None => crate::review::admin().to_json(),
    }
}

/// An object as the client sees it: in the version written through.
fn served(res: &ResourceInfo, o: &StoredObject) -> Value {
    let mut v = o.to_value();
    crate::objects::in_served_version(res, &mut v);
    v
}

/// What a mutating webhook is sent: for a create, the object before the server stamps it
/// (no uid, creationTimestamp, generation or resourceVersion; no name yet when it is to be
/// generated).
fn view(decided: &Value, operation: Operation, given_name: bool) -> Value {
    let mut v = decided.clone();
    if operation == Operation::Create
        && let Some(Value::Object(meta)) = v.get_mut("metadata")
    {
        for k in ["uid", "creationTimestamp", "generation", "resourceVersion"] {
            meta.remove(k);
        }
        if !given_name {
            meta.remove("name");
        }
    }
    v
}

/// The namespace `ns` as stored (what `namespaceSelector`s match), for a namespaced `res`.
fn namespace_of(api: &Api, res: &ResourceInfo, ns: &str) -> Option<Value> {
    if !res.namespaced() || ns.is_empty() {
        return None;
    }
    let r = api.registry.find("", "v1", "namespaces")?;
    api.store.get(&r.group_resource(), ns).map(|o| o.to_value())
}
