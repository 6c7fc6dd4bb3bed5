//! CREATE: a name resolved (or generated), the namespace admitted, the object prepared and
//! stored; and seeding, which stores an object as a cluster already holds it.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Api, Write, ns_of};
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
        self.create_as(res, namespace, body, None, false, true)
    }

    /// [`Api::create`] by a field manager (`managedFields` maintained when `writer` is set);
    /// with `dry_run`, everything but storing (see [`Api::write`]).
    pub(crate) fn create_by(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        body: Map<String, Value>,
        writer: Option<&Writer>,
        dry_run: bool,
    ) -> Result<Arc<StoredObject>, ApiError> {
        self.create_as(res, namespace, body, writer, dry_run, false)
    }

    fn create_as(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        mut body: Map<String, Value>,
        writer: Option<&Writer>,
        dry_run: bool,
        seeded: bool,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let ns = ns_of(res, namespace);
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
        self.admit_create(res, ns, &name)?;
        let admission = if seeded {
            Admission::default()
        } else {
            self.admission_for(res, ns, &body)
        };
        let key = storage_key(res, ns, &name);
        let created = self.write(
            res,
            &key,
            Write::new(ns, &name, seeded.then_some(UpdateMode::Raw), dry_run),
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

    /// What admission reads from the store for a created object: a Pod's ServiceAccount's
    /// `automountServiceAccountToken`, the addresses and ports the stored Services use.
    pub(super) fn admission_for(
        &self,
        res: &ResourceInfo,
        ns: &str,
        body: &Map<String, Value>,
    ) -> Admission {
        if service::is_service(res) {
            return Admission {
                services: Some(self.services_used()),
                ..Admission::default()
            };
        }
        if !crate::objects::pod_defaults::is_pod(res) {
            return Admission::default();
        }
        let account = crate::objects::token_volume::service_account_of(body);
        let automount = self
            .registry
            .find("", "v1", "serviceaccounts")
            .and_then(|sa| self.get(&sa, Some(ns), &account).ok())
            .and_then(|sa| {
                sa.to_value()
                    .get("automountServiceAccountToken")
                    .and_then(Value::as_bool)
            });
        Admission {
            service_account_automount: automount,
            services: None,
        }
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
