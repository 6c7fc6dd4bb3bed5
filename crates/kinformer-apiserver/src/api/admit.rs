//! ValidatingAdmissionPolicy around the verbs ([`crate::admission::policy`]): the policies
//! bound to a write are read before it (a write decides under the store's lock), and the
//! object it decided on is admitted before it is stored, dry run or not: one path for every
//! verb that writes (create, update, patch, apply, delete).

use std::sync::Arc;

use serde_json::Value;

use super::Api;
use super::gate::{Planned, Stage};
use crate::admission::policy::{self, Bound, Operation, Params, Policies, Request};
use crate::objects::UpdateMode;
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::{Mutation, StoredObject};

const GROUP: &str = "admissionregistration.k8s.io";

/// The write a verb is about to make, as admission sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Write<'a> {
    /// The object's namespace (empty for cluster-scoped objects).
    pub namespace: &'a str,
    /// The object's name.
    pub name: &'a str,
    /// The mode of an update (the subresource written through); `None` for a create or a
    /// delete.
    pub mode: Option<UpdateMode>,
    /// Whether it is stored, a dry run, or planned for the webhooks.
    pub stage: Stage<'a>,
}

impl<'a> Write<'a> {
    /// A write of `name` in `namespace`, through `mode` (`None`: a create or a delete).
    pub(crate) fn new(
        namespace: &'a str,
        name: &'a str,
        mode: Option<UpdateMode>,
        stage: Stage<'a>,
    ) -> Self {
        Write {
            namespace,
            name,
            mode,
            stage,
        }
    }

    /// The subresource written through; `None` for a storage-level write, which admission
    /// does not see (the direct Rust API's raw updates).
    fn subresource(&self) -> Option<Option<&'static str>> {
        match self.mode {
            None | Some(UpdateMode::Main) => Some(None),
            Some(UpdateMode::Status) => Some(Some("status")),
            Some(UpdateMode::Scale) => Some(Some("scale")),
            Some(UpdateMode::Finalize) => Some(Some("finalize")),
            Some(UpdateMode::Raw) => None,
        }
    }
}

/// The admission policies of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PolicyKind {
    /// ValidatingAdmissionPolicy and its bindings.
    Validating,
    /// MutatingAdmissionPolicy and its bindings.
    Mutating,
}

impl PolicyKind {
    /// The resources of its policies and of its bindings.
    fn plurals(self) -> (&'static str, &'static str) {
        match self {
            PolicyKind::Validating => (
                "validatingadmissionpolicies",
                "validatingadmissionpolicybindings",
            ),
            PolicyKind::Mutating => (
                "mutatingadmissionpolicies",
                "mutatingadmissionpolicybindings",
            ),
        }
    }
}

/// A write with the policies that may apply to it.
pub(super) struct Admission<'a> {
    res: &'a ResourceInfo,
    write: Write<'a>,
    subresource: Option<&'static str>,
    policies: Policies,
}

impl Admission<'_> {
    fn request(&self) -> Request<'_> {
        Request {
            res: self.res,
            subresource: self.subresource,
            namespace: self.write.namespace,
            name: self.write.name,
            dry_run: self.write.stage.dry_run(),
        }
    }

    /// Admits what a create or update decided (`m`, over the live object `current`).
    pub(super) fn admit<T>(
        &self,
        current: Option<&Arc<StoredObject>>,
        m: &Mutation<T>,
    ) -> Result<(), ApiError> {
        let old = current.map(|c| self.served(c));
        let (operation, object) = match (m, current) {
            (Mutation::Put(o, _), None) => (Operation::Create, Some(self.served(o))),
            // an update that ends in the object's removal (its last finalizer taken away) is
            // still an update
            (Mutation::Put(o, _) | Mutation::Delete(o, _), Some(_)) => {
                (Operation::Update, Some(self.served(o)))
            }
            (Mutation::Nothing(_), Some(_)) => (Operation::Update, old.clone()),
            _ => return Ok(()),
        };
        policy::admit(
            &self.policies,
            &self.request(),
            operation,
            object.as_ref(),
            old.as_ref(),
        )
    }

    /// Admits the delete of `current`.
    pub(super) fn admit_delete(&self, current: &StoredObject) -> Result<(), ApiError> {
        let old = self.served(current);
        policy::admit(
            &self.policies,
            &self.request(),
            Operation::Delete,
            None,
            Some(&old),
        )
    }

    /// An object as the client sees it: in the version it wrote through, or as the `Scale`
    /// it wrote.
    fn served(&self, o: &StoredObject) -> Value {
        let mut v = o.to_value();
        crate::objects::in_served_version(self.res, &mut v);
        match (&self.res.scale, self.subresource) {
            (Some(scale), Some("scale")) => crate::scale::to_scale(scale, &v),
            _ => v,
        }
    }
}

impl Api {
    /// The policies that may apply to `write` of `res`, read now; `None` when none is bound
    /// to writes of `res` (the common case: one short read of the bindings).
    pub(super) fn admission<'a>(
        &self,
        res: &'a ResourceInfo,
        write: Write<'a>,
    ) -> Option<Admission<'a>> {
        let subresource = write.subresource()?;
        if policy::exempt(res) || write.stage.gate().is_some_and(|g| g.admits_later()) {
            return None;
        }
        let bound =
            self.bound_policies(PolicyKind::Validating, res, &[subresource], write.namespace);
        if bound.is_empty() {
            return None;
        }
        let namespace = self.namespace_object(res, write.namespace);
        Some(Admission {
            res,
            write,
            subresource,
            policies: Policies { bound, namespace },
        })
    }

    /// Admits what a write planned without admission
    /// ([`Gate::admitting_later`](super::Gate::admitting_later)) decided:
    /// `planned` over `live` (the live object it was decided over, as the version written
    /// through shows it), a delete when `delete`.
    pub(crate) fn admit_planned(
        &self,
        res: &ResourceInfo,
        write: Write<'_>,
        planned: &Planned,
        live: Option<&Arc<StoredObject>>,
        delete: bool,
    ) -> Result<(), ApiError> {
        let Some(admission) = self.admission(res, write) else {
            return Ok(());
        };
        match (delete, live) {
            (true, Some(current)) => admission.admit_delete(current),
            (true, None) => Ok(()),
            (false, _) => admission.admit(live, &planned.mutation),
        }
    }

    /// The policies of `kind` bound to writes of `res` through one of `subresources` (their
    /// resource rules, whatever the operation, name and labels), by policy then binding name,
    /// each with the parameters its binding selects for a write in `namespace` (a binding
    /// whose `paramRef` selects none is left out).
    pub(crate) fn bound_policies(
        &self,
        kind: PolicyKind,
        res: &ResourceInfo,
        subresources: &[Option<&str>],
        namespace: &str,
    ) -> Vec<Bound> {
        let (policies, bindings) = kind.plurals();
        let Some(bindings_res) = self.registry.find(GROUP, "v1", bindings) else {
            return Vec::new();
        };
        let Ok((_, bindings)) = self
            .store
            .list(&bindings_res.group_resource(), None, "", "")
        else {
            return Vec::new();
        };
        if bindings.is_empty() {
            return Vec::new();
        }
        let Some(policies_res) = self.registry.find(GROUP, "v1", policies) else {
            return Vec::new();
        };
        let mut bound = Vec::new();
        for b in bindings.iter() {
            let binding = b.to_value();
            let Some(name) = binding.pointer("/spec/policyName").and_then(Value::as_str) else {
                continue;
            };
            let Some(p) = self.store.get(&policies_res.group_resource(), name) else {
                continue;
            };
            let policy = p.to_value();
            let applies = |sub: &Option<&str>| policy::may_apply(&policy, &binding, res, *sub);
            if !subresources.iter().any(applies) {
                continue;
            }
            let params = self.params(&policy, &binding, namespace);
            if matches!(&params, Params::Found(p) if p.is_empty()) {
                continue;
            }
            bound.push(Bound {
                policy,
                binding,
                params,
            });
        }
        fn names(b: &Bound) -> (&str, &str) {
            (policy::name_of(&b.policy), policy::name_of(&b.binding))
        }
        bound.sort_by(|a, b| names(a).cmp(&names(b)));
        bound
    }

    /// The namespace a write of `res` in `namespace` is in, as stored (`None` for a
    /// cluster-scoped resource, or when it is absent).
    pub(crate) fn namespace_object(&self, res: &ResourceInfo, namespace: &str) -> Option<Value> {
        (res.namespaced() && !namespace.is_empty())
            .then(|| self.registry.find("", "v1", "namespaces"))
            .flatten()
            .and_then(|ns| self.store.get(&ns.group_resource(), namespace))
            .map(|o| o.to_value())
    }

    /// The mutating admission policies that may apply to a write of `res` through
    /// `subresource` in `namespace`; `None` when none is bound to it.
    pub(crate) fn mutating_policies(
        &self,
        res: &ResourceInfo,
        subresource: Option<&str>,
        namespace: &str,
    ) -> Option<Policies> {
        if policy::exempt(res) {
            return None;
        }
        let bound = self.bound_policies(PolicyKind::Mutating, res, &[subresource], namespace);
        (!bound.is_empty()).then(|| Policies {
            bound,
            namespace: self.namespace_object(res, namespace),
        })
    }

    /// Whether a mutating admission policy is bound to writes of `res` through any
    /// subresource (such writes are made in two steps, as the webhooks' are).
    pub(crate) fn has_mutating_policies(&self, res: &ResourceInfo) -> bool {
        !policy::exempt(res)
            && !self
                .bound_policies(
                    PolicyKind::Mutating,
                    res,
                    &[None, Some("status"), Some("scale")],
                    "",
                )
                .is_empty()
    }

    /// The parameters `binding` selects for `policy`, for a write in `namespace`.
    fn params(&self, policy: &Value, binding: &Value, namespace: &str) -> Params {
        let Some(kind) = policy.pointer("/spec/paramKind") else {
            return Params::None;
        };
        let field = |k: &str| kind.get(k).and_then(Value::as_str).unwrap_or_default();
        let (api_version, kind) = (field("apiVersion"), field("kind"));
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let Some(res) = self
            .registry
            .all()
            .into_iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
        else {
            return Params::Error(format!(
                "failed to find resource referenced by paramKind: '{api_version}, Kind={kind}'"
            ));
        };
        let Some(reference) = binding.pointer("/spec/paramRef") else {
            return Params::Error("no paramRef in binding".into());
        };
        let get = |k: &str| reference.get(k).and_then(Value::as_str).unwrap_or_default();
        let ns = if !res.namespaced() {
            ""
        } else if !get("namespace").is_empty() {
            get("namespace")
        } else {
            namespace
        };
        let found: Vec<Value> = if !get("name").is_empty() {
            self.get(&res, Some(ns), get("name"))
                .map(|o| o.to_value())
                .into_iter()
                .collect()
        } else {
            let prefix = if ns.is_empty() {
                String::new()
            } else {
                format!("{ns}/")
            };
            let selector = reference.get("selector").and_then(policy::label_selector);
            self.store
                .list(&res.group_resource(), None, &prefix, "")
                .map(|(_, objs)| objs)
                .unwrap_or_default()
                .iter()
                .filter(|o| selector.as_ref().is_some_and(|s| s.matches(&o.labels)))
                .map(|o| o.to_value())
                .collect()
        };
        if found.is_empty() && get("parameterNotFoundAction") == "Deny" {
            return Params::Error(
                "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
            );
        }
        Params::Found(found)
    }
}
