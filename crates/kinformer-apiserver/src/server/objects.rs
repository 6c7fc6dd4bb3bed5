//! Reading and writing objects in process, without HTTP: typed and untyped create, update, get,
//! delete, fast seeding, storage-level writes for load generators, and the exact server state
//! tests compare caches with.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::RunningServer;
use crate::context::Context;
use crate::objects::{DeleteOptions, UpdateMode};
use crate::resource::ResourceInfo;
use crate::status::ApiError;

/// One object as the server holds it (ground truth for tests).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectState {
    /// Namespace (empty for cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// The full object.
    pub object: Value,
}

/// The exact current objects of a resource.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerState {
    /// The store revision the state was read at.
    pub resource_version: u64,
    /// Objects in key order.
    pub objects: Vec<ObjectState>,
}

fn resource_for<K: kube::Resource<DynamicType = ()>>(
    ctx: &Context,
) -> Result<Arc<ResourceInfo>, ApiError> {
    let (g, v, p) = (K::group(&()), K::version(&()), K::plural(&()));
    ctx.api
        .registry
        .find(&g, &v, &p)
        .ok_or_else(ApiError::not_found_path)
}

fn to_map<T: Serialize>(obj: &T) -> Result<Map<String, Value>, ApiError> {
    match serde_json::to_value(obj) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::bad_request("object is not a JSON object")),
        Err(e) => Err(ApiError::bad_request(e.to_string())),
    }
}

/// A stored object as `K`, in the version `res` serves it in.
fn decode<K: DeserializeOwned>(
    res: &ResourceInfo,
    o: &crate::store::StoredObject,
) -> Result<K, ApiError> {
    if res.conversion.is_some() && !o.has_api_version(&res.api_version()) {
        // shown by a conversion webhook, which only the HTTP layer calls
        return Err(ApiError::bad_request(format!(
            "{}/{} is converted by a webhook: read it over HTTP",
            res.plural,
            res.api_version()
        )));
    }
    match crate::objects::served_object(res, o) {
        Some(shown) => from_bytes(&shown.bytes),
        None => from_bytes(&o.bytes),
    }
}

fn from_bytes<K: DeserializeOwned>(b: &[u8]) -> Result<K, ApiError> {
    serde_json::from_slice(b)
        .map_err(|e| ApiError::internal(&format!("cannot decode stored object: {e}")))
}

impl RunningServer {
    fn find(&self, resource: &str) -> Result<Arc<ResourceInfo>, ApiError> {
        self.ctx
            .api
            .registry
            .find_by_name(resource)
            .ok_or_else(ApiError::not_found_path)
    }

    /// Creates a typed object without HTTP (same rules as POST); returns it as stored.
    pub fn create<K>(&self, obj: &K) -> Result<K, ApiError>
    where
        K: kube::Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        let res = resource_for::<K>(&self.ctx)?;
        let ns = obj.meta().namespace.clone();
        let o = self.ctx.api.create(&res, ns.as_deref(), to_map(obj)?)?;
        decode(&res, &o)
    }

    /// Replaces a typed object without HTTP. Unlike PUT, writes `status` too (a storage-level
    /// write for tests); the `resourceVersion` precondition still applies when set.
    pub fn update<K>(&self, obj: &K) -> Result<K, ApiError>
    where
        K: kube::Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        let res = resource_for::<K>(&self.ctx)?;
        let meta = obj.meta();
        let name = meta.name.clone().unwrap_or_default();
        let o = self.ctx.api.update(
            &res,
            meta.namespace.as_deref(),
            &name,
            to_map(obj)?,
            UpdateMode::Raw,
        )?;
        decode(&res, &o)
    }

    /// Reads a typed object without HTTP.
    pub fn get<K>(&self, namespace: Option<&str>, name: &str) -> Result<K, ApiError>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        let res = resource_for::<K>(&self.ctx)?;
        let o = self.ctx.api.get(&res, namespace, name)?;
        decode(&res, &o)
    }

    /// Deletes a typed object without HTTP (finalizers are honoured).
    pub fn delete<K>(&self, namespace: Option<&str>, name: &str) -> Result<(), ApiError>
    where
        K: kube::Resource<DynamicType = ()>,
    {
        let res = resource_for::<K>(&self.ctx)?;
        self.ctx
            .api
            .delete(&res, namespace, name, &DeleteOptions::default())?;
        Ok(())
    }

    /// Creates an untyped object of `resource` (`pods`, `deployments.apps`, a registered
    /// custom resource) without HTTP; returns the stored JSON.
    pub fn create_value(
        &self,
        resource: &str,
        namespace: Option<&str>,
        obj: Value,
    ) -> Result<Value, ApiError> {
        let res = self.find(resource)?;
        let Value::Object(m) = obj else {
            return Err(ApiError::bad_request("object is not a JSON object"));
        };
        Ok(self.ctx.api.create(&res, namespace, m)?.to_value())
    }

    /// Replaces an untyped object without HTTP (storage-level, status included).
    pub fn update_value(
        &self,
        resource: &str,
        namespace: Option<&str>,
        obj: Value,
    ) -> Result<Value, ApiError> {
        let res = self.find(resource)?;
        let Value::Object(m) = obj else {
            return Err(ApiError::bad_request("object is not a JSON object"));
        };
        let name = m
            .get("metadata")
            .and_then(|x| x.get("name"))
            .and_then(|n| n.as_str())
            .unwrap_or("")
            .to_string();
        Ok(self
            .ctx
            .api
            .update(&res, namespace, &name, m, UpdateMode::Raw)?
            .to_value())
    }

    /// Replaces an existing object at the storage layer, as a write straight into etcd would:
    /// no validation, no defaults, no managedFields. `render` gets the revision this write
    /// takes and returns the object's new JSON, which the server stores and serves as it is.
    /// Watchers get a `MODIFIED` event as for any update. Returns the revision written.
    ///
    /// The caller keeps what the server would otherwise derive: the JSON carries that revision
    /// as `metadata.resourceVersion`, keeps the object's name, namespace and uid, and starts
    /// with the stored version's type fields (`{"apiVersion":"v1","kind":"Pod",`, which is how
    /// `serde_json` writes a pod's `Value`); its labels and field-selectable values are taken to
    /// be unchanged (selectors keep matching on the stored version's).
    ///
    /// For load generators (the benchmarks' watch-throughput writer), which need writes far
    /// cheaper than the update handler's merge and checks.
    ///
    /// # Errors
    /// 404 when the resource or the object does not exist; 400 when the JSON does not start
    /// with the stored version's type fields.
    pub fn put_encoded(
        &self,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
        render: impl FnOnce(u64) -> Vec<u8>,
    ) -> Result<u64, ApiError> {
        let res = self.find(resource)?;
        let ns = if res.namespaced() {
            namespace.unwrap_or("")
        } else {
            ""
        };
        let key = crate::objects::storage_key(&res, ns, name);
        self.ctx
            .api
            .store
            .mutate(&res.group_resource(), &key, |current, rev| {
                let Some(current) = current else {
                    return Err(ApiError::not_found(&res, name));
                };
                let json = render(rev);
                let type_fields = &current.bytes[..(1 + current.type_len).min(current.bytes.len())];
                if !json.starts_with(type_fields) {
                    return Err(ApiError::bad_request(
                        "the JSON does not start with the stored object's apiVersion and kind",
                    ));
                }
                let next = crate::store::StoredObject {
                    bytes: json.into(),
                    resource_version: rev,
                    ..crate::store::StoredObject::clone(current)
                };
                Ok(crate::store::Mutation::Put(Arc::new(next), rev))
            })
    }

    /// Deletes an untyped object without HTTP.
    pub fn delete_value(
        &self,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(), ApiError> {
        let res = self.find(resource)?;
        self.ctx
            .api
            .delete(&res, namespace, name, &DeleteOptions::default())?;
        Ok(())
    }

    /// Creates many objects of `resource` without HTTP (fast seeding), as a cluster would
    /// already hold them: defaulted and validated as a create, but keeping the status given
    /// and without admission (no admission policies, nothing a create's admission adds);
    /// returns the revision after the last one.
    pub fn seed(
        &self,
        resource: &str,
        objects: impl IntoIterator<Item = Value>,
    ) -> Result<u64, ApiError> {
        let res = self.find(resource)?;
        for obj in objects {
            let Value::Object(m) = obj else {
                return Err(ApiError::bad_request("object is not a JSON object"));
            };
            let ns = m
                .get("metadata")
                .and_then(|x| x.get("namespace"))
                .and_then(|n| n.as_str())
                .unwrap_or("default")
                .to_string();
            self.ctx.api.create_seeded(&res, Some(&ns), m)?;
        }
        Ok(self.revision())
    }

    /// Seeds `count` realistic pods ([`crate::seed::pod`]) named `pod-00000...` spread over
    /// `namespaces` namespaces (`ns-0`, `ns-1`, ... created as needed; `default` when 1).
    pub fn seed_pods(&self, count: usize, namespaces: usize) -> Result<u64, ApiError> {
        let names = crate::seed::namespace_names(namespaces);
        for ns in &names {
            let _ = self.create_value("namespaces", None, crate::seed::namespace(ns));
        }
        let pods = (0..count)
            .map(|i| crate::seed::pod(&names[i % names.len()], &format!("pod-{i:06}"), i));
        self.seed("pods", pods)
    }

    /// The exact current objects of `resource` (optionally in one namespace), with their
    /// resourceVersions: the ground truth a client cache must converge to.
    pub fn state(&self, resource: &str, namespace: Option<&str>) -> Result<ServerState, ApiError> {
        let res = self.find(resource)?;
        let prefix = match namespace {
            Some(ns) if res.namespaced() => format!("{ns}/"),
            _ => String::new(),
        };
        let (rv, objs) = self
            .ctx
            .api
            .store
            .list(&res.group_resource(), None, &prefix, "")
            .map_err(|e| ApiError::internal(&e.to_string()))?;
        Ok(ServerState {
            resource_version: rv,
            objects: objs
                .iter()
                .map(|o| ObjectState {
                    namespace: o.namespace.clone(),
                    name: o.name.clone(),
                    uid: o.uid.clone(),
                    resource_version: o.resource_version.to_string(),
                    object: o.to_value(),
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    #[tokio::test]
    async fn put_encoded_stores_the_json_as_given_and_refuses_other_type_fields() {
        let server = crate::start(Default::default()).await.expect("server");
        server.seed_pods(1, 1).expect("seeded");
        let pod = server.state("pods", None).expect("state").objects[0].clone();
        let mut obj = pod.object.clone();
        let rev = server
            .put_encoded("pods", Some(&pod.namespace), &pod.name, |rev| {
                obj["metadata"]["resourceVersion"] = Value::String(rev.to_string());
                obj["metadata"]["annotations"] = serde_json::json!({"bench": "1"});
                serde_json::to_vec(&obj).expect("json")
            })
            .expect("written");
        let after = server.state("pods", None).expect("state").objects[0].clone();
        assert_eq!(after.resource_version, rev.to_string());
        assert_eq!(after.object, obj, "stored as given");
        assert_eq!(after.uid, pod.uid);

        let untyped = server.put_encoded("pods", Some(&pod.namespace), &pod.name, |_| {
            br#"{"metadata":{"name":"x"}}"#.to_vec()
        });
        assert_eq!(untyped.map_err(|e| e.code), Err(400));
        let missing = server.put_encoded("pods", Some(&pod.namespace), "no-such-pod", |_| {
            unreachable!("nothing to render for a missing object")
        });
        assert_eq!(missing.map_err(|e| e.code), Err(404));
        server.shutdown().await;
    }
}
