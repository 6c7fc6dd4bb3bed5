//! What the server knows about a resource type: group, version, kind, plural, scope.
//!
//! The built-in set ([`builtin_resources`]) covers core/v1 pods, configmaps, secrets, services,
//! nodes, namespaces, events and apps/v1 deployments. Any other type (a custom resource, a
//! `kube::core::DynamicObject`) is added at run time with [`ResourceInfo::new`] and
//! `RunningServer::register`.

/// Whether objects live in a namespace or at cluster scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Objects live in a namespace (`/namespaces/{ns}/{plural}/{name}`).
    Namespaced,
    /// Objects are cluster-wide (`/{plural}/{name}`).
    Cluster,
}

/// A resource type served by the server.
///
/// ```
/// use kinformer_apiserver::{ResourceInfo, Scope};
/// let crd = ResourceInfo::new("example.com", "v1", "Widget", "widgets", Scope::Namespaced);
/// assert_eq!(crd.api_version(), "example.com/v1");
/// assert_eq!(crd.list_kind(), "WidgetList");
/// assert_eq!(crd.group_resource(), "widgets.example.com");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group, empty for the core group.
    pub group: String,
    /// API version, e.g. `v1`.
    pub version: String,
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Plural resource name used in paths, e.g. `pods`.
    pub plural: String,
    /// Singular name, e.g. `pod` (discovery).
    pub singular: String,
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// Short names for kubectl (discovery), e.g. `po`.
    pub short_names: Vec<String>,
    /// Whether a `/status` subresource exists; when it does, writes to the main resource keep
    /// the stored `status` and writes to `/status` change only `status` (like the real server).
    pub status_subresource: bool,
    /// Whether `metadata.generation` is maintained (set to 1 on create, bumped when anything
    /// but `metadata` and `status` changes).
    pub tracks_generation: bool,
    /// Whether DELETE answers with the deleted object (true) or a `Status` (false), as the real
    /// registry's `ReturnDeletedObject` decides per resource.
    pub return_deleted_object: bool,
}

impl ResourceInfo {
    /// A resource with the usual defaults for a custom resource: singular = lowercase kind, a
    /// status subresource, generation tracking, DELETE returns the object.
    pub fn new(group: &str, version: &str, kind: &str, plural: &str, scope: Scope) -> Self {
        ResourceInfo {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            plural: plural.to_string(),
            singular: kind.to_lowercase(),
            scope,
            short_names: Vec::new(),
            status_subresource: true,
            tracks_generation: true,
            return_deleted_object: true,
        }
    }

    /// `apiVersion` of objects: `v1` or `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Kind of lists: `{Kind}List`.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// `plural` or `plural.group`, as error messages name a resource.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Whether the resource is namespaced.
    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    #[allow(clippy::too_many_arguments)]
    fn builtin(
        group: &str,
        kind: &str,
        plural: &str,
        scope: Scope,
        short: &[&str],
        status: bool,
        generation: bool,
        return_deleted: bool,
    ) -> Self {
        let version = "v1";
        ResourceInfo {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            plural: plural.to_string(),
            singular: kind.to_lowercase(),
            scope,
            short_names: short.iter().map(|s| s.to_string()).collect(),
            status_subresource: status,
            tracks_generation: generation,
            return_deleted_object: return_deleted,
        }
    }
}

/// The built-in resources: core/v1 pods, configmaps, secrets, services, nodes, namespaces,
/// events; apps/v1 deployments.
pub fn builtin_resources() -> Vec<ResourceInfo> {
    use Scope::*;
    vec![
        ResourceInfo::builtin("", "Pod", "pods", Namespaced, &["po"], true, true, true),
        ResourceInfo::builtin(
            "",
            "ConfigMap",
            "configmaps",
            Namespaced,
            &["cm"],
            false,
            false,
            false,
        ),
        ResourceInfo::builtin(
            "",
            "Secret",
            "secrets",
            Namespaced,
            &[],
            false,
            false,
            false,
        ),
        ResourceInfo::builtin(
            "",
            "Service",
            "services",
            Namespaced,
            &["svc"],
            true,
            false,
            true,
        ),
        ResourceInfo::builtin("", "Node", "nodes", Cluster, &["no"], true, false, false),
        ResourceInfo::builtin(
            "",
            "Namespace",
            "namespaces",
            Cluster,
            &["ns"],
            true,
            false,
            false,
        ),
        ResourceInfo::builtin(
            "",
            "Event",
            "events",
            Namespaced,
            &["ev"],
            false,
            false,
            false,
        ),
        ResourceInfo::builtin(
            "apps",
            "Deployment",
            "deployments",
            Namespaced,
            &["deploy"],
            true,
            true,
            false,
        ),
    ]
}
