//! The controllers' writes, seen by admission as a client's are: kube-controller-manager and
//! kube-apiserver's own controllers write through the API, so the admission webhooks and the
//! mutating admission policies configured for a resource see their creates, updates,
//! patches, applies and deletes as they see a user's, and can change or refuse them (a
//! webhook that protects objects from deletion holds back the garbage collector and the
//! namespace controller on a real cluster). One path decides: with no webhook or mutating
//! policy for the resource the write is made at once, as a request's is; otherwise through
//! [`crate::http::webhooks::write`], the path requests take.
//!
//! Who writes ([`Identity`]) is what a real cluster's reviews name: kube-controller-manager's
//! controllers each as its own service account in `kube-system` (kubeadm's
//! `--use-service-account-credentials`, so RBAC and webhooks can tell them apart), the
//! `kubernetes` Service by kube-apiserver's loopback user. Not as there: the service accounts'
//! `uid` and `extra` (a real token's) are left out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value, json};

use crate::api::{Api, Deleted, Gate, Stage};
use crate::context::Context;
use crate::http::webhooks::{self, Call};
use crate::objects::{DeleteOptions, UpdateMode, Writer};
use crate::patch::PatchType;
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::StoredObject;

/// Who a controller writes as (`request.userInfo` of the reviews its writes cause).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Identity {
    /// A kube-controller-manager controller's service account in `kube-system`.
    Controller(&'static str),
    /// kube-apiserver itself (its loopback client): `system:apiserver`.
    ApiServer,
}

impl Identity {
    /// `request.userInfo`.
    fn user_info(self) -> Value {
        match self {
            Identity::Controller(account) => json!({
                "username": format!("system:serviceaccount:kube-system:{account}"),
                "groups": [
                    "system:serviceaccounts",
                    "system:serviceaccounts:kube-system",
                    "system:authenticated",
                ],
            }),
            Identity::ApiServer => json!({
                "username": "system:apiserver",
                "groups": ["system:authenticated", "system:masters"],
            }),
        }
    }
}

/// A controller's handle for writing: the server, and who writes.
pub(crate) struct Writes<'a> {
    ctx: &'a Context,
    /// Who writes (its `userInfo` is built only for a write webhooks see).
    who: Identity,
    /// Whether a write failed in a way worth trying again since [`Writes::take_failed`].
    failed: AtomicBool,
}

/// Whether a controller tries again after `e` (as kube-controller-manager's controllers
/// requeue a key with backoff): not after a 404 or 409 (the object's next event brings the key
/// back) or a create refused in a terminating namespace; after anything else (a write an
/// admission webhook or policy refused, a webhook that could not be called).
fn worth_retrying(e: &ApiError) -> bool {
    let terminating = e
        .details
        .as_ref()
        .and_then(|d| d.get("causes"))
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["reason"] == "NamespaceTerminating"));
    e.code != 404 && e.code != 409 && !terminating
}

/// The subresource a write through `mode` is seen at.
fn subresource(mode: UpdateMode) -> Option<&'static str> {
    match mode {
        UpdateMode::Status => Some("status"),
        UpdateMode::Scale => Some("scale"),
        UpdateMode::Finalize => Some("finalize"),
        UpdateMode::Main | UpdateMode::Raw => None,
    }
}

impl<'a> Writes<'a> {
    /// Writes by `who` to the server of `ctx`.
    pub(crate) fn new(ctx: &'a Context, who: Identity) -> Self {
        Writes {
            ctx,
            who,
            failed: AtomicBool::new(false),
        }
    }

    /// Whether a write failed in a way worth trying again since the last call.
    pub(crate) fn take_failed(&self) -> bool {
        self.failed.swap(false, Ordering::Relaxed)
    }

    /// `r`, noting a failure worth trying again.
    fn noted<T>(&self, r: Result<T, ApiError>) -> Result<T, ApiError> {
        if let Err(e) = &r
            && worth_retrying(e)
        {
            self.failed.store(true, Ordering::Relaxed);
        }
        r
    }

    /// The server's verbs and store (for reads).
    pub(crate) fn api(&self) -> &'a Api {
        &self.ctx.api
    }

    /// One write, decided by `decide` at once when no webhook or mutating policy sees writes
    /// of `res` (given no gate), else planned in the gate webhooks write through; `answer`
    /// makes its result of what the webhooks' path wrote (the object, whether removed).
    async fn write<T>(
        &self,
        target: Target<'_>,
        decide: impl Fn(Option<&Gate>) -> Result<T, ApiError>,
        answer: impl FnOnce(webhooks::Written) -> T,
    ) -> Result<T, ApiError> {
        let res = target.res;
        let Some(hooks) = webhooks::hooks_for(self.ctx, res, None) else {
            return self.noted(decide(None));
        };
        let call = Call {
            res,
            subresource: subresource(target.mode),
            namespace: target.namespace.unwrap_or(""),
            name: target.name,
            mode: target.mode,
            dry_run: false,
            delete: target.delete.is_some(),
            user: self.who.user_info(),
            field_manager: target.field_manager,
            delete_options: target.delete.map(DeleteOptions::to_json),
            scale: None,
        };
        let plan = |g: &Gate| decide(Some(g)).map(drop);
        let written = webhooks::write(self.ctx, &call, &hooks, plan).await;
        self.noted(written.map(answer))
    }

    /// Creates `body` in `namespace` (see [`Api::create_by`]).
    pub(crate) async fn create(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        body: Map<String, Value>,
        writer: &Writer,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let name = crate::admission::policy::name_of(&Value::Object(body.clone())).to_string();
        let target = Target::new(res, namespace, &name, UpdateMode::Main, &writer.manager);
        let decide = |g: Option<&Gate>| {
            self.api()
                .create_by(res, namespace, body.clone(), Some(writer), stage(g))
        };
        self.write(target, decide, |(o, _)| o).await
    }

    /// Replaces `name` with `body` through `mode` (see [`Api::update_by`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn update(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        body: Map<String, Value>,
        mode: UpdateMode,
        writer: &Writer,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let target = Target::new(res, namespace, name, mode, &writer.manager);
        let decide = |g: Option<&Gate>| {
            let body = body.clone();
            self.api()
                .update_by(res, namespace, name, body, mode, Some(writer), stage(g))
        };
        self.write(target, decide, |(o, _)| o).await
    }

    /// Patches `name` with `patch` of type `pt` (see [`Api::patch_by`]).
    pub(crate) async fn patch(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        pt: PatchType,
        patch: &[u8],
        writer: &Writer,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let mode = UpdateMode::Main;
        let target = Target::new(res, namespace, name, mode, &writer.manager);
        let w = Some(writer);
        let decide = |g: Option<&Gate>| {
            self.api()
                .patch_by(res, namespace, name, pt, patch, mode, w, stage(g))
        };
        self.write(target, decide, |(o, _)| o).await
    }

    /// Applies the configuration `body` by `applier`, forcing conflicts when `force` (see
    /// [`Api::apply_by`]).
    pub(crate) async fn apply(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        body: &[u8],
        applier: &Writer,
        force: bool,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let mode = UpdateMode::Main;
        let target = Target::new(res, namespace, name, mode, &applier.manager);
        let decide = |g: Option<&Gate>| {
            let api = self.api();
            api.apply_by(res, namespace, name, body, mode, applier, force, stage(g))
        };
        self.write(target, decide, |(o, _)| o).await
    }

    /// Deletes `name` with `opts` (see [`Api::delete`]).
    pub(crate) async fn delete(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let target = Target {
            delete: Some(opts),
            field_manager: None,
            ..Target::new(res, namespace, name, UpdateMode::Main, "")
        };
        let decide = |g: Option<&Gate>| self.api().delete_staged(res, namespace, name, opts, g);
        let answer = |(object, removed)| Deleted { object, removed };
        self.write(target, decide, answer).await
    }
}

/// What one write concerns, as the webhooks are told of it.
struct Target<'a> {
    res: &'a ResourceInfo,
    namespace: Option<&'a str>,
    /// The object's name (empty: none yet).
    name: &'a str,
    mode: UpdateMode,
    /// A delete's options; `None` for the other verbs.
    delete: Option<&'a DeleteOptions>,
    field_manager: Option<&'a str>,
}

impl<'a> Target<'a> {
    fn new(
        res: &'a ResourceInfo,
        namespace: Option<&'a str>,
        name: &'a str,
        mode: UpdateMode,
        field_manager: &'a str,
    ) -> Self {
        Target {
            res,
            namespace,
            name,
            mode,
            delete: None,
            field_manager: Some(field_manager),
        }
    }
}

/// The stage of a write decided at once (stored) or planned in `gate`.
fn stage(gate: Option<&Gate>) -> Stage<'_> {
    match gate {
        Some(g) => Stage::Plan(g),
        None => Stage::Store,
    }
}
