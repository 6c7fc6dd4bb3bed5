//! What the server knows about a resource type: group, version, kind, plural, scope.
//!
//! The built-in set ([`builtin_resources`]) is every listable resource of k8s-openapi's stable
//! API versions (one version per resource, the newest: `autoscaling/v2` horizontal pod
//! autoscalers), described from its type information (`k8s_openapi::Resource`: group, version,
//! kind, plural, scope; a `/status` subresource when the type has a `status` field), plus the
//! create-only review kinds (`SelfSubjectAccessReview`, `TokenReview`, ...). Any other type
//! (a custom resource, a `kube::core::DynamicObject`) is added at run time with
//! [`ResourceInfo::new`] and `RunningServer::register`, or by creating a
//! CustomResourceDefinition.

use std::any::TypeId;

use k8s_openapi::{NamespaceResourceScope, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

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
    /// Categories for kubectl (discovery), e.g. `all`.
    pub categories: Vec<String>,
    /// The `/scale` subresource, when there is one.
    pub scale: Option<ScaleInfo>,
    /// Only `create` is served and nothing is stored (access and token reviews).
    pub create_only: bool,
    /// The structural schema objects are pruned, defaulted and validated with (custom
    /// resources defined by a CustomResourceDefinition).
    pub(crate) schema: Option<std::sync::Arc<Value>>,
    /// The CustomResourceDefinition that defines this resource.
    pub(crate) crd_name: Option<String>,
    /// The version objects are stored in, when it is not this one (a custom resource served in
    /// several versions: objects are stored in the CRD's storage version and shown in the
    /// version asked for, as conversion strategy `None` does).
    pub(crate) storage_version: Option<String>,
    /// The structural schema of the storage version, when objects are stored in another
    /// version than this one: what an object written through this version is pruned by when it
    /// is stored (kube-apiserver prunes every conversion's result by its version's schema).
    pub(crate) storage_schema: Option<std::sync::Arc<Value>>,
    /// How a custom resource served in a version other than its storage version is converted
    /// to and from it, when its CRD's conversion strategy is `Webhook`: the CRD's
    /// `spec.conversion.webhook` (`clientConfig`, `conversionReviewVersions`). `None`: the
    /// `None` strategy (only `apiVersion` changes).
    pub(crate) conversion: Option<std::sync::Arc<Value>>,
    /// A custom resource version's `additionalPrinterColumns` (kubectl's `get` columns after
    /// Name), when its CRD declares any.
    pub(crate) printer_columns: Option<std::sync::Arc<Vec<Value>>>,
    /// The `Warning` every request to this resource gets, when its version is deprecated:
    /// kube-apiserver's deprecation warning for a built-in kind (`v1 Endpoints is deprecated in
    /// v1.33+; use discovery.k8s.io/v1 EndpointSlice`), a CustomResourceDefinition version's
    /// `deprecationWarning` or the default one.
    pub(crate) deprecation: Option<String>,
}

/// Where a resource keeps what its `/scale` subresource shows (JSON paths as a
/// CustomResourceDefinition's `scale` subresource names them, e.g. `.spec.replicas`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleInfo {
    /// Desired replicas, e.g. `.spec.replicas`.
    pub spec_replicas_path: String,
    /// Observed replicas, e.g. `.status.replicas`.
    pub status_replicas_path: String,
    /// The label selector (a string, or a `LabelSelector` object rendered as a string), e.g.
    /// `.status.selector` or `.spec.selector`.
    pub label_selector_path: Option<String>,
}

impl ScaleInfo {
    /// The scale of the workload kinds: `.spec.replicas`, `.status.replicas`, `.spec.selector`.
    fn workload() -> Self {
        ScaleInfo {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            label_selector_path: Some(".spec.selector".into()),
        }
    }
}

impl ResourceInfo {
    /// A resource with the usual defaults for a custom resource: singular = lowercase kind, a
    /// status subresource, generation tracking, DELETE answers a `Status` once the object is
    /// gone (as kube-apiserver answers for custom resources, e2e/diff "crd").
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
            return_deleted_object: false,
            categories: Vec::new(),
            scale: None,
            create_only: false,
            schema: None,
            crd_name: None,
            storage_version: None,
            storage_schema: None,
            conversion: None,
            printer_columns: None,
            deprecation: None,
        }
    }

    /// `apiVersion` of stored objects: [`Self::api_version`], or the storage version's when
    /// this resource is served in another.
    pub(crate) fn stored_api_version(&self) -> String {
        match &self.storage_version {
            Some(v) => format!("{}/{v}", self.group),
            None => self.api_version(),
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
}

/// Whether objects of `K` have a `status` field (and so, as built-ins go, a `/status`
/// subresource): a `status` put in survives a round trip through the type.
fn has_status<K: Serialize + DeserializeOwned + Default>() -> bool {
    let Ok(Value::Object(mut base)) = serde_json::to_value(K::default()) else {
        return false;
    };
    base.insert("status".into(), Value::Object(Default::default()));
    match serde_json::from_value::<K>(Value::Object(base.clone())) {
        Ok(k) => serde_json::to_value(k).is_ok_and(|v| v.get("status").is_some()),
        // The status was read and lacks required fields: the type has one.
        Err(_) => {
            base.remove("status");
            serde_json::from_value::<K>(Value::Object(base)).is_ok()
        }
    }
}

/// The description of a k8s-openapi type, from its type information.
fn from_type<K>() -> ResourceInfo
where
    K: Resource<Scope: 'static> + Serialize + DeserializeOwned + Default + 'static,
{
    let scope = if TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>() {
        Scope::Namespaced
    } else {
        Scope::Cluster
    };
    let status = has_status::<K>();
    let (group, plural) = (K::GROUP, K::URL_PATH_SEGMENT);
    let mut info = ResourceInfo {
        group: group.to_string(),
        version: K::VERSION.to_string(),
        kind: K::KIND.to_string(),
        plural: plural.to_string(),
        singular: K::KIND.to_lowercase(),
        scope,
        short_names: short_names(group, plural)
            .iter()
            .map(|s| s.to_string())
            .collect(),
        status_subresource: status,
        // Workload and API kinds with a spec and a status keep a generation; in the core group
        // only pods and replication controllers do.
        tracks_generation: (status
            && (!group.is_empty() || matches!(plural, "pods" | "replicationcontrollers")))
            // their strategies keep one too (over `webhooks`, over `spec`)
            || matches!(
                (group, plural),
                (
                    "admissionregistration.k8s.io",
                    "mutatingwebhookconfigurations"
                        | "validatingwebhookconfigurations"
                        | "validatingadmissionpolicybindings"
                        | "mutatingadmissionpolicies"
                        | "mutatingadmissionpolicybindings"
                )
            ),
        return_deleted_object: false,
        categories: categories(group, plural)
            .iter()
            .map(|s| s.to_string())
            .collect(),
        scale: matches!(
            (group, plural),
            ("apps", "deployments" | "replicasets" | "statefulsets")
                | ("", "replicationcontrollers")
        )
        .then(ScaleInfo::workload),
        create_only: false,
        schema: None,
        crd_name: None,
        storage_version: None,
        storage_schema: None,
        conversion: None,
        printer_columns: None,
        deprecation: None,
    };
    info.deprecation = builtin_deprecation(group, &info.version, &info.kind);
    // Registry behaviour recorded against the real server for the kinds the e2e diff covers.
    match (group, plural) {
        ("", "pods" | "services") => info.return_deleted_object = true,
        ("", "replicationcontrollers") => {
            // Its selector is a plain map, rendered the same way.
        }
        _ => {}
    }
    info
}

/// A create-only kind (a review): answered, never stored.
fn review<K: Resource<Scope: 'static>>() -> ResourceInfo {
    let scope = if TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>() {
        Scope::Namespaced
    } else {
        Scope::Cluster
    };
    ResourceInfo {
        group: K::GROUP.to_string(),
        version: K::VERSION.to_string(),
        kind: K::KIND.to_string(),
        plural: K::URL_PATH_SEGMENT.to_string(),
        singular: K::KIND.to_lowercase(),
        scope,
        short_names: Vec::new(),
        status_subresource: false,
        tracks_generation: false,
        return_deleted_object: false,
        categories: Vec::new(),
        scale: None,
        create_only: true,
        schema: None,
        crd_name: None,
        storage_version: None,
        storage_schema: None,
        conversion: None,
        printer_columns: None,
        deprecation: None,
    }
}

/// kubectl's short names, as the real server's discovery lists them.
fn short_names(group: &str, plural: &str) -> &'static [&'static str] {
    match (group, plural) {
        ("", "configmaps") => &["cm"],
        ("", "endpoints") => &["ep"],
        ("", "events") => &["ev"],
        ("", "limitranges") => &["limits"],
        ("", "namespaces") => &["ns"],
        ("", "nodes") => &["no"],
        ("", "persistentvolumeclaims") => &["pvc"],
        ("", "persistentvolumes") => &["pv"],
        ("", "pods") => &["po"],
        ("", "replicationcontrollers") => &["rc"],
        ("", "resourcequotas") => &["quota"],
        ("", "serviceaccounts") => &["sa"],
        ("", "services") => &["svc"],
        ("", "componentstatuses") => &["cs"],
        ("apps", "daemonsets") => &["ds"],
        ("apps", "deployments") => &["deploy"],
        ("apps", "replicasets") => &["rs"],
        ("apps", "statefulsets") => &["sts"],
        ("autoscaling", "horizontalpodautoscalers") => &["hpa"],
        ("batch", "cronjobs") => &["cj"],
        ("certificates.k8s.io", "certificatesigningrequests") => &["csr"],
        ("events.k8s.io", "events") => &["ev"],
        ("networking.k8s.io", "ingresses") => &["ing"],
        ("networking.k8s.io", "networkpolicies") => &["netpol"],
        ("networking.k8s.io", "ipaddresses") => &["ip"],
        ("policy", "poddisruptionbudgets") => &["pdb"],
        ("scheduling.k8s.io", "priorityclasses") => &["pc"],
        ("storage.k8s.io", "storageclasses") => &["sc"],
        ("apiextensions.k8s.io", "customresourcedefinitions") => &["crd", "crds"],
        _ => &[],
    }
}

/// Discovery categories (`kubectl get all` reads `all`).
fn categories(group: &str, plural: &str) -> &'static [&'static str] {
    match (group, plural) {
        ("", "pods" | "replicationcontrollers" | "services")
        | ("apps", "daemonsets" | "deployments" | "replicasets" | "statefulsets")
        | ("autoscaling", "horizontalpodautoscalers")
        | ("batch", "cronjobs" | "jobs") => &["all"],
        ("apiextensions.k8s.io", "customresourcedefinitions")
        | ("apiregistration.k8s.io", "apiservices")
        | (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations"
            | "mutatingadmissionpolicies"
            | "mutatingadmissionpolicybindings"
            | "validatingwebhookconfigurations"
            | "validatingadmissionpolicies"
            | "validatingadmissionpolicybindings",
        ) => &["api-extensions"],
        _ => &[],
    }
}

/// The built-in resources: every listable k8s-openapi type of a stable API version (the
/// newest version of each resource), described from its type information, then the
/// create-only review kinds.
pub(crate) fn builtin_resources() -> Vec<ResourceInfo> {
    use k8s_openapi::api;
    macro_rules! types {
        ($($t:ty),* $(,)?) => { vec![$(from_type::<$t>()),*] };
    }
    // Core first: unqualified names (`events`) resolve to the core group, as kubectl does.
    let mut out = types![
        api::core::v1::Pod,
        api::core::v1::ConfigMap,
        api::core::v1::Secret,
        api::core::v1::Service,
        api::core::v1::Node,
        api::core::v1::Namespace,
        api::core::v1::Event,
        api::core::v1::ComponentStatus,
        api::core::v1::Endpoints,
        api::core::v1::LimitRange,
        api::core::v1::PersistentVolume,
        api::core::v1::PersistentVolumeClaim,
        api::core::v1::PodTemplate,
        api::core::v1::ReplicationController,
        api::core::v1::ResourceQuota,
        api::core::v1::ServiceAccount,
        api::apps::v1::Deployment,
        api::apps::v1::ControllerRevision,
        api::apps::v1::DaemonSet,
        api::apps::v1::ReplicaSet,
        api::apps::v1::StatefulSet,
        api::admissionregistration::v1::MutatingWebhookConfiguration,
        api::admissionregistration::v1::ValidatingAdmissionPolicy,
        api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
        api::admissionregistration::v1::ValidatingWebhookConfiguration,
        api::autoscaling::v2::HorizontalPodAutoscaler,
        api::batch::v1::CronJob,
        api::batch::v1::Job,
        api::certificates::v1::CertificateSigningRequest,
        api::coordination::v1::Lease,
        api::discovery::v1::EndpointSlice,
        api::events::v1::Event,
        api::flowcontrol::v1::FlowSchema,
        api::flowcontrol::v1::PriorityLevelConfiguration,
        api::networking::v1::Ingress,
        api::networking::v1::IngressClass,
        api::networking::v1::IPAddress,
        api::networking::v1::NetworkPolicy,
        api::networking::v1::ServiceCIDR,
        api::node::v1::RuntimeClass,
        api::policy::v1::PodDisruptionBudget,
        api::rbac::v1::ClusterRole,
        api::rbac::v1::ClusterRoleBinding,
        api::rbac::v1::Role,
        api::rbac::v1::RoleBinding,
        api::scheduling::v1::PriorityClass,
        api::storage::v1::CSIDriver,
        api::storage::v1::CSINode,
        api::storage::v1::CSIStorageCapacity,
        api::storage::v1::StorageClass,
        api::storage::v1::VolumeAttachment,
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService,
    ];
    // What went GA after the oldest version k8s-openapi supports (1.33) is served from the
    // version that made it GA, as kube-apiserver serves it by default.
    k8s_openapi::k8s_if_ge_1_34! {
        out.extend(types![
            api::resource::v1::DeviceClass,
            api::resource::v1::ResourceClaim,
            api::resource::v1::ResourceClaimTemplate,
            api::resource::v1::ResourceSlice,
            api::storage::v1::VolumeAttributesClass,
        ]);
    }
    k8s_openapi::k8s_if_ge_1_36! {
        out.extend(types![
            api::admissionregistration::v1::MutatingAdmissionPolicy,
            api::admissionregistration::v1::MutatingAdmissionPolicyBinding,
        ]);
    }
    k8s_openapi::k8s_if_ge_1_37! {
        out.extend(types![
            api::certificates::v1::ClusterTrustBundle,
            api::certificates::v1::PodCertificateRequest,
            api::resource::v1::DeviceTaintRule,
            api::storagemigration::v1::StorageVersionMigration,
        ]);
    }
    out.extend([
        review::<api::authentication::v1::SelfSubjectReview>(),
        review::<api::authentication::v1::TokenReview>(),
        review::<api::authorization::v1::LocalSubjectAccessReview>(),
        review::<api::authorization::v1::SelfSubjectAccessReview>(),
        review::<api::authorization::v1::SelfSubjectRulesReview>(),
        review::<api::authorization::v1::SubjectAccessReview>(),
    ]);
    out
}

/// kube-apiserver's warning for the built-in kinds whose version is deprecated (their Go type's
/// `APILifecycleDeprecated`/`APILifecycleReplacement`): `<group/version> <Kind> is deprecated in
/// v<major.minor>+`, then `; use <group/version> <Kind>` when there is a replacement.
fn builtin_deprecation(group: &str, version: &str, kind: &str) -> Option<String> {
    let (since, replacement) = match (group, version, kind) {
        ("", "v1", "Endpoints") => ("1.33", Some("discovery.k8s.io/v1 EndpointSlice")),
        ("", "v1", "ComponentStatus") => ("1.19", None),
        _ => return None,
    };
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let mut msg = format!("{gv} {kind} is deprecated in v{since}+");
    if let Some(r) = replacement {
        msg.push_str("; use ");
        msg.push_str(r);
    }
    Some(msg)
}

/// Kubernetes' version priority, highest first as `Ord` sorts it ascending: GA before beta
/// before alpha before anything else, a higher major then a higher minor first (`v2`, `v1`,
/// `v1beta2`, `v1beta1`, `v1alpha1`, then other names by name). The group's first version is
/// its preferred one, as kube-apiserver picks it for a CRD's served versions.
pub(crate) fn version_priority(v: &str) -> (u8, std::cmp::Reverse<u64>, std::cmp::Reverse<u64>) {
    use std::cmp::Reverse;
    let parse = |s: &str| -> Option<(u8, u64, u64)> {
        let rest = s.strip_prefix('v')?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        if rest[..digits].starts_with('0') {
            return None;
        }
        let tail = &rest[digits..];
        let (level, minor) = if tail.is_empty() {
            return Some((0, major, 0));
        } else if let Some(m) = tail.strip_prefix("beta") {
            (1, m)
        } else if let Some(m) = tail.strip_prefix("alpha") {
            (2, m)
        } else {
            return None;
        };
        if minor.is_empty() || minor.starts_with('0') || !minor.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        Some((level, major, minor.parse().ok()?))
    };
    match parse(v) {
        Some((level, major, minor)) => (level, Reverse(major), Reverse(minor)),
        None => (3, Reverse(0), Reverse(0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(all: &'a [ResourceInfo], group: &str, plural: &str) -> &'a ResourceInfo {
        all.iter()
            .find(|r| r.group == group && r.plural == plural)
            .unwrap_or_else(|| panic!("{plural}.{group} is not served"))
    }

    #[test]
    fn built_ins_come_from_the_type_information() {
        let all = builtin_resources();
        let lease = find(&all, "coordination.k8s.io", "leases");
        assert_eq!(
            (lease.kind.as_str(), lease.version.as_str(), lease.scope),
            ("Lease", "v1", Scope::Namespaced)
        );
        assert!(!lease.status_subresource, "leases have no status");
        let job = find(&all, "batch", "jobs");
        assert!(job.status_subresource && job.tracks_generation);
        let ns = find(&all, "", "namespaces");
        assert!(ns.status_subresource && !ns.tracks_generation);
        assert_eq!(ns.scope, Scope::Cluster);
        assert!(!find(&all, "", "configmaps").status_subresource);
        assert!(find(&all, "", "pods").tracks_generation);
        assert!(find(&all, "", "pods").return_deleted_object);
        assert!(!find(&all, "apps", "deployments").return_deleted_object);
        assert!(find(&all, "apps", "deployments").scale.is_some());
        assert!(find(&all, "certificates.k8s.io", "certificatesigningrequests").status_subresource);
        let crd = find(&all, "apiextensions.k8s.io", "customresourcedefinitions");
        assert_eq!(crd.short_names, ["crd", "crds"]);
        assert_eq!(crd.scope, Scope::Cluster);
        let ssar = find(&all, "authorization.k8s.io", "selfsubjectaccessreviews");
        assert!(ssar.create_only);
        assert_eq!(
            find(&all, "autoscaling", "horizontalpodautoscalers").version,
            "v2"
        );
        // One version per resource, and no resource twice.
        let mut keys: Vec<_> = all.iter().map(|r| (&r.group, &r.plural)).collect();
        let n = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), n);
        assert!(n >= 60, "{n}");
    }
}
