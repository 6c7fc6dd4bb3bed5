//! Authorization as kube-apiserver 1.36 does it with `--authorization-mode=RBAC`: the
//! `system:masters` group may do everything (its privileged-groups authorizer); anyone else may
//! do what the rules of the roles bound to them allow, read from the stored `ClusterRoleBinding`s
//! (every namespace) and, for a request in a namespace, that namespace's `RoleBinding`s, in
//! RBAC's visiting order and words (`RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y"
//! to ServiceAccount "sa/ns"`; a binding naming a missing role is a reason the denial gives).
//!
//! The server starts with the roles and bindings kube-apiserver 1.36.3 bootstraps
//! ([`bootstrap`]), so `view`, `edit`, `admin`, `cluster-admin` and the `system:*` roles mean
//! what they mean on a real cluster, and `system:authenticated` may discover the API and review
//! its own access. Who asks is decided by the HTTP layer: the server's own token is
//! `system:masters`, a service account token its service account, a request without
//! credentials `system:anonymous` (`system:unauthenticated`), and the `Impersonate-*` headers
//! are honoured as kube-apiserver honours them.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::Api;
use crate::token::User;

pub(crate) mod bootstrap;
pub(crate) mod escalation;

/// The group whose members may do everything.
pub(crate) const MASTERS: &str = "system:masters";
/// The group of every authenticated user.
pub(crate) const AUTHENTICATED: &str = "system:authenticated";
/// The user of a request without credentials.
pub(crate) const ANONYMOUS: &str = "system:anonymous";
/// The group of a request without credentials.
pub(crate) const UNAUTHENTICATED: &str = "system:unauthenticated";

/// A request's attributes as kube-apiserver's `RequestInfoFactory` reads them (and as an
/// access review states them).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Attributes {
    /// Whether it is a request for a resource (else for a path).
    pub resource_request: bool,
    /// `get`, `list`, `watch`, `create`, ...; a path request's HTTP method in lower case.
    pub verb: String,
    /// The API group ("" for the core group).
    pub group: String,
    /// The namespace ("" for the cluster scope).
    pub namespace: String,
    /// The resource (plural).
    pub resource: String,
    /// The subresource.
    pub subresource: String,
    /// The object's name.
    pub name: String,
    /// The path of a request that is not for a resource.
    pub path: String,
}

/// What the authorizer decided.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    /// Allowed.
    pub allowed: bool,
    /// Why (the binding that allowed it; what went wrong looking for one): "" when nothing
    /// is to be said.
    pub reason: String,
}

/// One rule of a role, as RBAC reads it.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Rule {
    verbs: Vec<String>,
    api_groups: Vec<String>,
    resources: Vec<String>,
    resource_names: Vec<String>,
    #[serde(rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
}

impl Rule {
    /// Whether the rule allows the request (`RuleAllows`).
    fn allows(&self, a: &Attributes) -> bool {
        let any = |list: &[String], want: &str| list.iter().any(|v| v == "*" || v == want);
        if !any(&self.verbs, &a.verb) {
            return false;
        }
        if !a.resource_request {
            return self.non_resource_urls.iter().any(|u| {
                u == "*"
                    || *u == a.path
                    || u.strip_suffix('*').is_some_and(|p| a.path.starts_with(p))
            });
        }
        let combined = if a.subresource.is_empty() {
            a.resource.clone()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        any(&self.api_groups, &a.group)
            && self.resources.iter().any(|r| {
                r == "*"
                    || *r == combined
                    || (!a.subresource.is_empty()
                        && r.strip_prefix("*/") == Some(a.subresource.as_str()))
            })
            && (self.resource_names.is_empty() || self.resource_names.contains(&a.name))
    }

    /// The rule as an access review lists it: its resource half and its path half.
    fn halves(&self) -> (Option<Value>, Option<Value>) {
        let resource = (!self.resources.is_empty()).then(|| {
            let mut r = json!({"verbs": self.verbs, "apiGroups": self.api_groups,
                "resources": self.resources});
            if !self.resource_names.is_empty() {
                r["resourceNames"] = json!(self.resource_names);
            }
            r
        });
        let path = (!self.non_resource_urls.is_empty())
            .then(|| json!({"verbs": self.verbs, "nonResourceURLs": self.non_resource_urls}));
        (resource, path)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Subject {
    kind: String,
    name: String,
    namespace: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RoleRef {
    kind: String,
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Binding {
    subjects: Vec<Subject>,
    role_ref: RoleRef,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Role {
    rules: Option<Vec<Rule>>,
}

impl Subject {
    /// Whether the subject is `user` (`appliesToUser`); a service account subject without a
    /// namespace is in the binding's.
    fn is(&self, user: &User, binding_namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.username == self.name,
            "Group" => user.groups.contains(&self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                !ns.is_empty()
                    && user
                        .username
                        .strip_prefix("system:serviceaccount:")
                        .and_then(|rest| rest.strip_prefix(ns))
                        .and_then(|rest| rest.strip_prefix(':'))
                        == Some(self.name.as_str())
            }
            _ => false,
        }
    }

    /// `describeSubject`.
    fn describe(&self, binding_namespace: &str) -> String {
        if self.kind == "ServiceAccount" {
            let ns = if self.namespace.is_empty() {
                binding_namespace
            } else {
                &self.namespace
            };
            format!("{} {:?}", self.kind, format!("{}/{ns}", self.name))
        } else {
            format!("{} {:?}", self.kind, self.name)
        }
    }
}

/// The store's name of an RBAC resource.
fn store_name(plural: &str) -> String {
    format!("{plural}.rbac.authorization.k8s.io")
}

/// Most parsed objects the cache keeps before it starts again (its memory stays bounded).
const CACHE_LIMIT: usize = 10_000;

/// Objects parsed, by store resource and key, with the resourceVersion parsed.
type Parsed<T> = Mutex<HashMap<(String, String), (u64, Arc<T>)>>;

/// The RBAC objects parsed, each reused while its resourceVersion is the one parsed: every
/// request of a user who is not `system:masters` visits the bindings, and parsing them all
/// each time cost a debug build about 0.6 ms a request (a 404 GET went from 0.35 to 1.0 ms).
#[derive(Debug, Default)]
pub(crate) struct Cache {
    bindings: Parsed<Binding>,
    roles: Parsed<Role>,
}

/// `o` parsed as `T`, from `cache` when its version was parsed already.
fn parsed<T: for<'de> Deserialize<'de> + Default>(
    cache: &Parsed<T>,
    resource: &str,
    o: &crate::store::StoredObject,
) -> Arc<T> {
    let key = (resource.to_string(), o.key.clone());
    if let Some((rv, t)) = cache.lock().get(&key)
        && *rv == o.resource_version
    {
        return t.clone();
    }
    let t = Arc::new(serde_json::from_slice::<T>(&o.bytes).unwrap_or_default());
    let mut c = cache.lock();
    if c.len() >= CACHE_LIMIT {
        c.clear();
    }
    c.insert(key, (o.resource_version, t.clone()));
    t
}

/// The stored bindings of an RBAC binding resource (in `namespace`, or all), in name order.
fn bindings(
    api: &Api,
    cache: &Cache,
    plural: &str,
    namespace: Option<&str>,
) -> Vec<(String, Arc<Binding>)> {
    let prefix = namespace.map(|ns| format!("{ns}/")).unwrap_or_default();
    let resource = store_name(plural);
    let Ok((_, objs)) = api.store.list(&resource, None, &prefix, "") else {
        return Vec::new();
    };
    objs.iter()
        .map(|o| (o.name.clone(), parsed(&cache.bindings, &resource, o)))
        .collect()
}

/// The role a binding refers to, or why there is none (`GetRoleReferenceRules`).
fn role_of(
    api: &Api,
    cache: &Cache,
    role_ref: &RoleRef,
    namespace: &str,
) -> Result<Arc<Role>, String> {
    let (plural, key, what) = match role_ref.kind.as_str() {
        "Role" => ("roles", format!("{namespace}/{}", role_ref.name), "role"),
        "ClusterRole" => ("clusterroles", role_ref.name.clone(), "clusterrole"),
        other => return Err(format!("unsupported role reference kind: {other:?}")),
    };
    let resource = store_name(plural);
    let Some(o) = api.store.get(&resource, &key) else {
        return Err(format!(
            "{what}.rbac.authorization.k8s.io {:?} not found",
            role_ref.name
        ));
    };
    Ok(parsed(&cache.roles, &resource, &o))
}

/// Visits the rules that apply to `user` in `namespace` (every `ClusterRoleBinding`'s, then
/// the namespace's `RoleBinding`s'), each with a description of where it comes from, until
/// `visit` returns false; returns the errors met on the way (`VisitRulesFor`).
fn visit_rules(
    api: &Api,
    cache: &Cache,
    user: &User,
    namespace: &str,
    visit: &mut dyn FnMut(&dyn Fn() -> String, &Rule) -> bool,
) -> Vec<String> {
    let mut errors = Vec::new();
    // (kind, store plural, the bindings' namespace): the cluster's, then the namespace's
    let mut scopes = vec![("ClusterRoleBinding", "clusterrolebindings", "")];
    if !namespace.is_empty() {
        scopes.push(("RoleBinding", "rolebindings", namespace));
    }
    for (kind, plural, ns) in scopes {
        for (name, b) in bindings(api, cache, plural, (!ns.is_empty()).then_some(ns)) {
            let Some(subject) = b.subjects.iter().find(|s| s.is(user, ns)) else {
                continue;
            };
            let role = match role_of(api, cache, &b.role_ref, ns) {
                Ok(r) => r,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            let source = || {
                let id = if ns.is_empty() {
                    name.clone()
                } else {
                    format!("{name}/{ns}")
                };
                format!(
                    "{kind} {id:?} of {} {:?} to {}",
                    b.role_ref.kind,
                    b.role_ref.name,
                    subject.describe(ns)
                )
            };
            for r in role.rules.iter().flatten() {
                if !visit(&source, r) {
                    return errors;
                }
            }
        }
    }
    errors
}

/// apimachinery's aggregate error text: one error's message, or several (each once) in
/// brackets.
fn aggregate(errors: Vec<String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        if !seen.contains(&e) {
            seen.push(e);
        }
    }
    match seen.len() {
        1 => seen.remove(0),
        _ => format!("[{}]", seen.join(", ")),
    }
}

/// Whether `user` may make a request with attributes `a`.
pub(crate) fn authorize(api: &Api, cache: &Cache, user: &User, a: &Attributes) -> Decision {
    if user.groups.iter().any(|g| g == MASTERS) {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    let mut allowed_by = None;
    let errors = visit_rules(api, cache, user, &a.namespace, &mut |source, rule| {
        if rule.allows(a) {
            allowed_by = Some(source());
            return false;
        }
        true
    });
    match allowed_by {
        Some(source) => Decision {
            allowed: true,
            reason: format!("RBAC: allowed by {source}"),
        },
        None => Decision {
            allowed: false,
            reason: if errors.is_empty() {
                String::new()
            } else {
                format!("RBAC: {}", aggregate(errors))
            },
        },
    }
}

/// What `user` may do in `namespace`, as a `SelfSubjectRulesReview` answers it: its
/// `resourceRules`, `nonResourceRules`, and the errors met looking (which make it incomplete).
pub(crate) fn rules_for(
    api: &Api,
    cache: &Cache,
    user: &User,
    namespace: &str,
) -> (Vec<Value>, Vec<Value>, Vec<String>) {
    let (mut resource, mut paths) = (Vec::new(), Vec::new());
    if user.groups.iter().any(|g| g == MASTERS) {
        resource.push(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
        paths.push(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
    }
    let errors = visit_rules(api, cache, user, namespace, &mut |_, rule| {
        let (r, p) = rule.halves();
        resource.extend(r);
        paths.extend(p);
        true
    });
    (resource, paths, errors)
}

/// The user of a request without credentials.
pub(crate) fn anonymous() -> User {
    User {
        username: ANONYMOUS.into(),
        uid: String::new(),
        groups: vec![UNAUTHENTICATED.into()],
        extra: Default::default(),
        audiences: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
