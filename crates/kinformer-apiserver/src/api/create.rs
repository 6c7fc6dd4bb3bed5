//! CREATE: a name resolved (or generated), the namespace admitted, the object prepared and
//! stored; and seeding, which stores an object as a cluster already holds it.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Api, Stage, Write, ns_of};
use crate::objects::service_account::{self, Account};
use crate::objects::{
    Admission, Created, UpdateMode, Writer, prepare_create_as, service, storage_key,
};
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::{Mutation, StoredObject};

impl Api {
    /// Creates an object; 409 AlreadyExists if the name is taken. `managedFields` are stored
    /// as given (no field manager).
    pub(crate) fn create(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        body: Map<String, Value>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        self.create_by(res, namespace, body, None, false)
    }

    /// Stores an object as a cluster would already hold it (seeding): defaulted and validated
    /// as a create, but without what a create's admission adds or the status it starts
    /// with (the status given is kept), and not subject to admission policies.
    pub(crate) fn create_seeded(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        body: Map<String, Value>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        self.create_as(res, namespace, body, None, Stage::Store, true)
    }

    /// [`Api::create`] by a field manager (`managedFields` maintained when `writer` is set);
    /// with `dry_run`, everything but storing (see [`Api::write`]).
    pub(crate) fn create_by<'g>(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        body: Map<String, Value>,
        writer: Option<&Writer>,
        stage: impl Into<Stage<'g>>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        self.create_as(res, namespace, body, writer, stage.into(), false)
    }

    fn create_as(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        mut body: Map<String, Value>,
        writer: Option<&Writer>,
        stage: Stage<'_>,
        seeded: bool,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let dry_run = stage.dry_run();
        let ns = ns_of(res, namespace);
        // What the mutating admission plugins' refusals call the object: its name, or before
        // one is generated its generateName (apiserver's `extractResourceName`; validating
        // admission, policies included, runs after the name is generated and shows it).
        let named = |k: &str| {
            body.get("metadata")
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
        };
        let shown = named("name")
            .or_else(|| named("generateName"))
            .unwrap_or_else(|| "Unknown".to_string());
        // Resolve generateName first so the key is known before the write.
        if let Some(Value::Object(meta)) = body.get_mut("metadata") {
            let has_name = meta
                .get("name")
                .and_then(|n| n.as_str())
                .is_some_and(|n| !n.is_empty());
            if !has_name
                && let Some(generate) = meta
                    .get("generateName")
                    .and_then(|g| g.as_str())
                    .filter(|g| !g.is_empty())
            {
                let name = format!("{generate}{}", crate::objects::random_suffix());
                meta.insert("name".into(), Value::String(name));
            }
        }
        let name = body
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(|n| n.as_str())
            .unwrap_or("")
            .to_string();
        self.admit_create(res, ns, &shown)?;
        let admission = if seeded {
            Admission::default()
        } else {
            self.admission_for(res, ns, &body, &shown, dry_run)?
        };
        let key = storage_key(res, ns, &name);
        let created = self.write(
            res,
            &key,
            Write::new(ns, &name, seeded.then_some(UpdateMode::Raw), stage),
            |current, rev| {
                let stage = if seeded {
                    Created::Seeded
                } else {
                    Created::Fresh(admission)
                };
                let (_, obj) = prepare_create_as(res, ns, body, rev, writer, stage)?;
                if current.is_some() {
                    return Err(ApiError::already_exists(res, &name));
                }
                let obj = Arc::new(obj);
                Ok(Mutation::Put(obj.clone(), obj))
            },
        )?;
        Ok(created)
    }

    /// What admission reads from the store for a created object (`shown`: what its refusals
    /// call it; `dry_run`: whether it is a dry run): a Pod's ServiceAccount (403 when it does not exist, see
    /// [`Api::service_account_for`]), the addresses and ports the stored Services use.
    pub(super) fn admission_for(
        &self,
        res: &ResourceInfo,
        ns: &str,
        body: &Map<String, Value>,
        shown: &str,
        dry_run: bool,
    ) -> Result<Admission, ApiError> {
        if service::is_service(res) {
            return Ok(Admission {
                services: Some(self.services_used()),
                dry_run,
                ..Admission::default()
            });
        }
        if !crate::objects::pod_defaults::is_pod(res) {
            return Ok(Admission::default());
        }
        Ok(Admission {
            service_account: self.service_account_for(res, ns, body, shown)?,
            services: None,
            dry_run,
        })
    }

    /// The ServiceAccount admission's lookup for a Pod created in `ns`: its account's facts,
    /// or 403 `error looking up service account <ns>/<name>: serviceaccount "<name>" not
    /// found` as kube-apiserver answers; a mirror pod's refusals. Where no Namespace object
    /// exists (an in-process server that does not enforce namespaces) nothing can hold an
    /// account and any is taken as one with nothing set. So is a missing `default` while the
    /// service account controller keeps the namespace's (kube-apiserver waits up to ten tries
    /// for the controller to create it; ours creates it moments later, with nothing set).
    fn service_account_for(
        &self,
        res: &ResourceInfo,
        ns: &str,
        body: &Map<String, Value>,
        shown: &str,
    ) -> Result<Account, ApiError> {
        if service_account::is_mirror(body) {
            service_account::check_mirror(body)
                .map_err(|why| ApiError::forbidden(res, shown, &why))?;
            return Ok(Account::default());
        }
        let Some(sa_res) = self.registry.find("", "v1", "serviceaccounts") else {
            return Ok(Account::default());
        };
        let name = service_account::service_account_of(body);
        if let Ok(account) = self.get(&sa_res, Some(ns), &name) {
            return Ok(Account::of(&account.to_value()));
        }
        let namespace_exists = self.store.get("namespaces", ns).is_some();
        if !namespace_exists || (name == "default" && self.service_accounts_kept) {
            return Ok(Account::default());
        }
        Err(ApiError::forbidden(
            res,
            shown,
            &format!(
                "error looking up service account {ns}/{name}: serviceaccount \"{name}\" not found"
            ),
        ))
    }

    /// The cluster IPs and node ports the stored Services use.
    pub(super) fn services_used(&self) -> service::Used {
        let objs = self
            .registry
            .find("", "v1", "services")
            .and_then(|r| self.store.list(&r.group_resource(), None, "", "").ok())
            .map(|(_, objs)| objs)
            .unwrap_or_default();
        let values: Vec<Value> = objs.iter().map(|o| o.to_value()).collect();
        service::Used::of(&values)
    }
}
