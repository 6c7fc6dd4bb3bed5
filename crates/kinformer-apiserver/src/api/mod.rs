//! The server's core: the resource registry, the store, and the verbs (create, get, update,
//! patch, delete, deletecollection) shared by the HTTP layer and the direct Rust API.

use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::{Map, Value};

use crate::list::{self, ListPage};
use crate::objects::{
    DeleteOptions, DeleteOutcome, UpdateMode, UpdateOutcome, Writer, apply, namespace,
    prepare_applied_update, prepare_create_by, prepare_delete, prepare_update_by, storage_key,
};
use crate::options::ListOptions;
use crate::resource::{ResourceInfo, builtin_resources};
use crate::status::ApiError;
use crate::store::{Mutation, Store, StoredObject};

mod admit;
mod crd_storage;
mod create;
mod gate;
mod patch;

pub(crate) use admit::Write;
pub(crate) use crd_storage::CrdStorage;
pub(crate) use gate::{Gate, Planned, Stage};

/// The resource types the server serves.
#[derive(Debug)]
pub(crate) struct Registry {
    resources: RwLock<Vec<Arc<ResourceInfo>>>,
}

impl Registry {
    /// The built-in resources.
    pub(crate) fn new() -> Self {
        Registry {
            resources: RwLock::new(builtin_resources().into_iter().map(Arc::new).collect()),
        }
    }

    /// Adds (or replaces, by group and plural) a resource type.
    pub(crate) fn register(&self, info: ResourceInfo) {
        let mut r = self.resources.write();
        r.retain(|x| !(x.group == info.group && x.plural == info.plural));
        r.push(Arc::new(info));
    }

    /// Stops serving the resource defined by CustomResourceDefinition `crd` (every version);
    /// returns one of them (they share the group and plural its objects are stored under).
    pub(crate) fn unregister_crd(&self, crd: &str) -> Option<Arc<ResourceInfo>> {
        let mut r = self.resources.write();
        let mut removed = None;
        r.retain(|x| {
            let of_crd = x.crd_name.as_deref() == Some(crd);
            if of_crd && removed.is_none() {
                removed = Some(x.clone());
            }
            !of_crd
        });
        removed
    }

    /// Serves the versions of one CustomResourceDefinition's resource (its storage version
    /// first), replacing what it served before.
    pub(crate) fn register_crd(&self, infos: Vec<ResourceInfo>) {
        let mut r = self.resources.write();
        r.retain(|x| {
            !infos
                .iter()
                .any(|i| x.group == i.group && x.plural == i.plural && x.version == i.version)
        });
        r.extend(infos.into_iter().map(Arc::new));
    }

    /// Every resource type.
    pub(crate) fn all(&self) -> Vec<Arc<ResourceInfo>> {
        self.resources.read().clone()
    }

    /// Looks up by group, version and plural.
    pub(crate) fn find(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<Arc<ResourceInfo>> {
        self.resources
            .read()
            .iter()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
            .cloned()
    }

    /// Looks up by `plural` or `plural.group` (kubectl style, e.g. `deployments.apps`).
    pub(crate) fn find_by_name(&self, name: &str) -> Option<Arc<ResourceInfo>> {
        let (plural, group) = name.split_once('.').unwrap_or((name, ""));
        self.resources
            .read()
            .iter()
            .find(|r| r.group == group && r.plural == plural)
            .cloned()
    }

    /// Whether a built-in resource type (not a custom resource) is in `group`.
    pub(crate) fn has_builtin_group(&self, group: &str) -> bool {
        self.resources
            .read()
            .iter()
            .any(|r| r.group == group && r.crd_name.is_none())
    }

    /// Whether any resource exists in this group/version.
    pub(crate) fn has_group_version(&self, group: &str, version: &str) -> bool {
        self.resources
            .read()
            .iter()
            .any(|r| r.group == group && r.version == version)
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

/// What a DELETE did.
#[derive(Debug, Clone)]
pub(crate) struct Deleted {
    /// The object's final state (removed) or its new version (marked for deletion).
    pub object: Arc<StoredObject>,
    /// Whether the object is gone (false: it has finalizers and was only marked).
    pub removed: bool,
}

/// The verbs over a registry and a store.
#[derive(Debug)]
pub(crate) struct Api {
    /// Resource types.
    pub registry: Registry,
    /// Objects and history.
    pub store: Store,
    /// Refuse to create namespaced objects in a namespace that does not exist (404
    /// `namespaces "x" not found`, as the real server's NamespaceLifecycle admission does;
    /// the rest of that admission always applies, see [`crate::admission`]).
    pub enforce_namespaces: bool,
    /// The service account controller runs: every live namespace has (or is about to have) its
    /// `default` ServiceAccount.
    pub service_accounts_kept: bool,
    /// Custom resources' objects as their CRDs' current schemas show them ([`crd_storage`]).
    pub crd_storage: CrdStorage,
}

fn ns_of<'a>(res: &ResourceInfo, ns: Option<&'a str>) -> &'a str {
    if res.namespaced() {
        ns.unwrap_or("")
    } else {
        ""
    }
}

impl Api {
    /// One read-modify-write of `key` (see [`Store::mutate`]), then what follows a write of
    /// `res` ([`Api::after_write`]); what `f` decides is admitted by the admission policies
    /// bound to the write ([`admit`]) before it is stored. With `write.dry_run` (`dryRun=All`)
    /// the same decisions are made — validation, defaulting, preconditions, managedFields,
    /// conflicts, admission — and answered as
    /// kube-apiserver's dry-run storage answers them ([`crate::store::Preview::answer`]), but
    /// nothing is stored, no resourceVersion is used, no watcher hears of it and nothing
    /// follows.
    fn write(
        &self,
        res: &ResourceInfo,
        key: &str,
        write: Write<'_>,
        f: impl FnOnce(Option<&Arc<StoredObject>>, u64) -> Result<Mutation<Arc<StoredObject>>, ApiError>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let gr = res.group_resource();
        let stage = write.stage;
        let updating = write.mode.is_some();
        let admission = self.admission(res, write);
        let pinned = stage.gate().filter(|g| g.is_pinned());
        if res.conversion.is_some() && res.storage_version.is_some() && pinned.is_none() {
            // written through the HTTP layer, which calls the webhook (crate::http::conversion)
            return Err(ApiError::bad_request(format!(
                "{}/{} is converted by a webhook: write it over HTTP",
                res.plural,
                res.api_version()
            )));
        }
        let f = |current: Option<&Arc<StoredObject>>, rev| {
            let current = match pinned {
                Some(g) => g.live(current)?,
                None => current,
            };
            let m = match (f(current, rev)?, current) {
                // An update that changes nothing of an object its CRD's schemas show otherwise
                // than it was written: kube-apiserver compares with what etcd holds, finds a
                // difference and stores it (crd_storage).
                (Mutation::Nothing(out), Some(c))
                    if updating
                        && Arc::ptr_eq(&out, c)
                        && res.crd_name.is_some()
                        && self.crd_storage.shown_otherwise(&gr, c) =>
                {
                    let stored = Arc::new(c.at_revision(rev));
                    Mutation::Put(stored.clone(), stored)
                }
                (m, _) => m,
            };
            if let Some(a) = &admission {
                a.admit(current, &m)?;
            }
            Ok(m)
        };
        if let Some(gate) = stage.gate() {
            // the whole decision is the preview's result, kept for the commit
            let p = self
                .store
                .preview(&gr, key, |c, rev| Ok(Mutation::Nothing(f(c, rev)?)))?;
            return Ok(gate.plan(gr, key, p));
        }
        if stage.previews() {
            return Ok(self.store.preview(&gr, key, f)?.answer());
        }
        let written = self.store.mutate(&gr, key, f)?;
        self.after_write(res, &written.name);
        Ok(written)
    }

    /// The NamespaceLifecycle admission of a create ([`crate::admission`]).
    fn admit_create(&self, res: &ResourceInfo, ns: &str, name: &str) -> Result<(), ApiError> {
        if !crate::admission::checks_namespace(res, ns) {
            return Ok(());
        }
        let Some(ns_res) = self.registry.find("", "v1", "namespaces") else {
            return Ok(());
        };
        let stored = self.store.get(&ns_res.group_resource(), ns);
        crate::admission::admit_create(
            res,
            ns,
            name,
            &ns_res,
            stored.as_deref(),
            self.enforce_namespaces,
        )
    }

    /// Keeps the served custom resources in step with the CustomResourceDefinitions.
    fn after_write(&self, res: &ResourceInfo, name: &str) {
        if crate::crd::is_crd(res) {
            self.sync_crd(res, name);
        }
    }

    /// Reads one object; 404 NotFound if absent.
    pub(crate) fn get(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let key = storage_key(res, ns_of(res, namespace), name);
        self.store
            .get(&res.group_resource(), &key)
            .ok_or_else(|| ApiError::not_found(res, name))
    }

    /// Replaces an object (PUT); 404 if absent, 409 Conflict on a stale resourceVersion.
    pub(crate) fn update(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        body: Map<String, Value>,
        mode: UpdateMode,
    ) -> Result<Arc<StoredObject>, ApiError> {
        self.update_by(res, namespace, name, body, mode, None, false)
    }

    /// [`Api::update`] by a field manager (`managedFields` maintained when `writer` is set);
    /// with `dry_run`, everything but storing (see [`Api::write`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn update_by<'g>(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        body: Map<String, Value>,
        mode: UpdateMode,
        writer: Option<&Writer>,
        stage: impl Into<Stage<'g>>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let ns = ns_of(res, namespace);
        let key = storage_key(res, ns, name);
        self.write(
            res,
            &key,
            Write::new(ns, name, Some(mode), stage.into()),
            |current, rev| {
                let Some(current) = current else {
                    return Err(ApiError::not_found(res, name));
                };
                Self::outcome(
                    prepare_update_by(res, current, body, rev, mode, writer)?,
                    current,
                )
            },
        )
    }

    fn outcome(
        o: UpdateOutcome,
        current: &Arc<StoredObject>,
    ) -> Result<Mutation<Arc<StoredObject>>, ApiError> {
        Ok(match o {
            UpdateOutcome::Unchanged => Mutation::Nothing(current.clone()),
            UpdateOutcome::Write(obj) => {
                let obj: Arc<StoredObject> = Arc::from(obj);
                Mutation::Put(obj.clone(), obj)
            }
            UpdateOutcome::Delete { response, last } => {
                Mutation::Delete(Arc::from(last), Arc::from(response))
            }
        })
    }

    /// Server-side apply of the configuration `body` by `writer` (see
    /// [`crate::objects::apply`]): creates the object when absent (not through `/status`),
    /// 409 on conflicts with other managers unless `force`. With `dry_run`, everything but
    /// storing (see [`Api::write`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn apply_by<'g>(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        body: &[u8],
        mode: UpdateMode,
        writer: &Writer,
        force: bool,
        stage: impl Into<Stage<'g>>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let stage = stage.into();
        let config = apply::decode_config(body)?;
        apply::check_config(res, &config)?;
        let ns = ns_of(res, namespace);
        let key = storage_key(res, ns, name);
        let absent = self.get(res, namespace, name).is_err();
        if absent {
            self.admit_create(res, ns, name)?;
        }
        // read before the write: the store is locked while the closure runs
        let admission = if absent {
            self.admission_for(res, ns, &config, name, stage.dry_run())?
        } else {
            crate::objects::Admission::default()
        };
        self.write(res, &key, Write::new(ns, name, Some(mode), stage), |current, rev| {
            let Some(current) = current else {
                if mode == UpdateMode::Status {
                    return Err(ApiError::not_found(res, name));
                }
                let body_name = config
                    .get("metadata")
                    .and_then(|m| m.get("name"))
                    .and_then(|n| n.as_str())
                    .unwrap_or(name);
                if body_name != name {
                    return Err(ApiError::bad_request(format!(
                        "the name of the object ({body_name}) does not match the name on the URL ({name})"
                    )));
                }
                let mut body = apply::apply(res, None, &config, writer, force)?;
                if let Value::Object(m) = body
                    .entry("metadata")
                    .or_insert_with(|| Value::Object(Map::new()))
                {
                    m.insert("name".into(), Value::String(name.to_string()));
                }
                let (_, obj) = prepare_create_by(res, ns, body, rev, None, admission)?;
                let obj = Arc::new(obj);
                return Ok(Mutation::Put(obj.clone(), obj));
            };
            let mut live = current.to_value();
            crate::objects::in_served_version(res, &mut live);
            let Value::Object(live) = live else {
                return Err(ApiError::internal("stored object is not a JSON object"));
            };
            let new = apply::apply(res, Some(&live), &config, writer, force)?;
            Self::outcome(
                prepare_applied_update(res, current, new, rev, mode)?,
                current,
            )
        })
    }

    /// Deletes an object (or marks it for deletion if it has finalizers, or gets one from
    /// the propagation policy); 404 if absent. A namespace is only moved to `Terminating` by
    /// its first delete ([`crate::objects::namespace`]); the immortal ones are refused. With
    /// `opts.dry_run`, everything but storing (see [`Api::write`]).
    pub(crate) fn delete(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        self.delete_staged(res, namespace, name, opts, None)
    }

    /// [`Api::delete`], planned in `gate` when given (see [`Gate`]): decided as a dry run and
    /// kept to be committed.
    pub(crate) fn delete_staged(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
        gate: Option<&Gate>,
    ) -> Result<Deleted, ApiError> {
        crate::admission::admit_delete(res, name)?;
        let ns = ns_of(res, namespace);
        let key = storage_key(res, ns, name);
        let stage = match gate {
            Some(g) => Stage::Plan(g),
            None => Stage::from(opts.dry_run),
        };
        let admission = self.admission(res, Write::new(ns, name, None, stage));
        let decide = |current: Option<&Arc<StoredObject>>, rev| {
            let Some(current) = current else {
                return Err(ApiError::not_found(res, name));
            };
            if let Some(a) = &admission {
                a.admit_delete(current)?;
            }
            let outcome = if namespace::is_namespace(res) {
                namespace::prepare_delete(res, current, opts, rev)?
            } else {
                prepare_delete(res, current, opts, rev)?
            };
            Ok(match outcome {
                DeleteOutcome::Remove(obj) => {
                    let obj = Arc::new(obj);
                    Mutation::Delete(
                        obj.clone(),
                        Deleted {
                            object: obj,
                            removed: true,
                        },
                    )
                }
                DeleteOutcome::MarkDeleting(obj) => {
                    let obj = Arc::new(obj);
                    Mutation::Put(
                        obj.clone(),
                        Deleted {
                            object: obj,
                            removed: false,
                        },
                    )
                }
                DeleteOutcome::AlreadyDeleting => Mutation::Nothing(Deleted {
                    object: current.clone(),
                    removed: false,
                }),
            })
        };
        if let Some(gate) = gate {
            let mut removed = false;
            let p = self.store.preview(&res.group_resource(), &key, |c, rev| {
                let m = decide(c, rev)?;
                removed = matches!(m, Mutation::Delete(..));
                Ok(Mutation::Nothing(match m {
                    Mutation::Put(o, d) => Mutation::Put(o, d.object),
                    Mutation::Delete(o, d) => Mutation::Delete(o, d.object),
                    Mutation::Nothing(d) => Mutation::Nothing(d.object),
                }))
            })?;
            let object = gate.plan(res.group_resource(), &key, p);
            return Ok(Deleted { object, removed });
        }
        if opts.dry_run {
            let p = self.store.preview(&res.group_resource(), &key, decide)?;
            let object = crate::store::Preview {
                out: p.out.object,
                current: p.current,
                next: p.next,
            }
            .answer();
            return Ok(Deleted {
                object,
                removed: p.out.removed,
            });
        }
        let deleted = self.store.mutate(&res.group_resource(), &key, decide)?;
        self.after_write(res, name);
        Ok(deleted)
    }

    /// Deletes every object matching the options' selectors, each with `delete` as its
    /// `DeleteOptions`. Answers as kube-apiserver's registry does: the list it deleted from,
    /// as it was listed (its revision, and every matching object before its delete), whatever
    /// each delete did (removed, marked for finalizers, or nothing with `delete.dry_run`).
    pub(crate) fn delete_collection(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        opts: &ListOptions,
        delete: &DeleteOptions,
    ) -> Result<(u64, Vec<Arc<StoredObject>>), ApiError> {
        let (rev, listed) = self.collection(res, namespace, opts)?;
        for o in &listed {
            let ns = if o.namespace.is_empty() {
                None
            } else {
                Some(o.namespace.as_str())
            };
            match self.delete(res, ns, &o.name, delete) {
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok((rev, listed))
    }

    /// What a DELETE of a collection deletes: the objects matching the options' selectors,
    /// and the revision they were listed at.
    pub(crate) fn collection(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<(u64, Vec<Arc<StoredObject>>), ApiError> {
        let prefix = match namespace {
            Some(ns) if res.namespaced() => format!("{ns}/"),
            _ => String::new(),
        };
        let (rev, objs) = self
            .store
            .list(&res.group_resource(), None, &prefix, "")
            .map_err(|e| ApiError::internal(&e.to_string()))?;
        let listed = objs
            .iter()
            .filter(|o| list::matches(opts, o))
            .cloned()
            .collect();
        Ok((rev, listed))
    }

    /// Serves a LIST (see [`crate::list`] for the semantics).
    pub(crate) async fn list(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        opts: &ListOptions,
        too_large_wait: std::time::Duration,
    ) -> Result<ListPage, ApiError> {
        list::list(&self.store, res, namespace, opts, too_large_wait).await
    }
}
