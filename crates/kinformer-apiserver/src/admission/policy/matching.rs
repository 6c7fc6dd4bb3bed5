//! Which writes a policy's `matchConstraints` and a binding's `matchResources` select: resource
//! rules, `excludeResourceRules`, `namespaceSelector` and `objectSelector`.

use std::collections::BTreeMap;

use kinformer_selector::LabelSelector;
use serde_json::Value;

use super::{Operation, Request};
use crate::resource::ResourceInfo;

/// Whether `policy`, bound by `binding`, may apply to writes of `res` through `subresource`
/// (their resource rules, whatever the operation, name and labels).
pub(crate) fn may_apply(
    policy: &Value,
    binding: &Value,
    res: &ResourceInfo,
    subresource: Option<&str>,
) -> bool {
    let target = Target {
        res,
        subresource,
        operation: None,
        name: None,
    };
    let constraints = policy.pointer("/spec/matchConstraints");
    constraints.is_some_and(|c| target.rules_match(c, false))
        && binding
            .pointer("/spec/matchResources")
            .is_none_or(|m| target.rules_match(m, true))
}

/// The resource a rule is matched against.
pub(super) struct Target<'a> {
    res: &'a ResourceInfo,
    subresource: Option<&'a str>,
    /// `None`: any operation.
    operation: Option<Operation>,
    /// `None`: any name.
    name: Option<&'a str>,
}

impl Target<'_> {
    /// Whether `m` (a `matchConstraints` or `matchResources`) lets its resource rules match:
    /// one of `resourceRules` (all when `empty_matches_all` and there are none) and, for a
    /// write (its operation and name known), none of `excludeResourceRules`.
    pub(super) fn rules_match(&self, m: &Value, empty_matches_all: bool) -> bool {
        let rules = |k: &str| {
            m.get(k)
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
        };
        let exact = m.get("matchPolicy").and_then(Value::as_str) == Some("Exact");
        // an exclusion may name operations and names: it is known only for a write
        let known = self.operation.is_some() && self.name.is_some();
        if known
            && rules("excludeResourceRules")
                .iter()
                .any(|r| self.rule(r, exact))
        {
            return false;
        }
        let include = rules("resourceRules");
        (include.is_empty() && empty_matches_all) || include.iter().any(|r| self.rule(r, exact))
    }

    /// Whether one `NamedRuleWithOperations` matches; `exact`: its versions must name the
    /// version written (`matchPolicy: Exact`; with `Equivalent` they do not decide, every
    /// version of a resource being the same objects here).
    fn rule(&self, r: &Value, exact: bool) -> bool {
        let list = |k: &str| -> Vec<&str> {
            r.get(k)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default()
        };
        let any_of = |k: &str, want: &str| list(k).iter().any(|x| *x == "*" || *x == want);
        let operation = self
            .operation
            .is_none_or(|op| any_of("operations", op.as_str()));
        let resource = list("resources").iter().any(|x| {
            let (res, sub) = x.split_once('/').unwrap_or((x, ""));
            (res == "*" || res == self.res.plural)
                && (sub == "*" || sub == self.subresource.unwrap_or(""))
        });
        let scope = match r.get("scope").and_then(Value::as_str).unwrap_or("*") {
            "Namespaced" => self.res.namespaced(),
            "Cluster" => !self.res.namespaced(),
            _ => true,
        };
        let names = list("resourceNames");
        let name = names.is_empty() || self.name.is_none_or(|n| names.contains(&n));
        let version = !exact || any_of("apiVersions", &self.res.version);
        operation && any_of("apiGroups", &self.res.group) && version && resource && scope && name
    }
}

/// The resource a write's rules are matched against, and the labels its selectors are: the
/// object's, the old object's and (`namespace`, as stored) its namespace's.
pub(super) fn write_of<'a>(
    req: &Request<'a>,
    operation: Operation,
    object: Option<&'a Value>,
    old: Option<&'a Value>,
    namespace: Option<&'a Value>,
) -> (Target<'a>, Labels<'a>) {
    let is_namespace = crate::objects::namespace::is_namespace(req.res);
    let target = Target {
        res: req.res,
        subresource: req.subresource,
        operation: Some(operation),
        name: Some(req.name),
    };
    let labels = Labels {
        object,
        old,
        namespace: namespace.filter(|_| !is_namespace),
        cluster_scoped: !req.res.namespaced(),
        is_namespace,
    };
    (target, labels)
}

/// The labels the selectors of a write are matched against.
pub(super) struct Labels<'a> {
    object: Option<&'a Value>,
    old: Option<&'a Value>,
    namespace: Option<&'a Value>,
    cluster_scoped: bool,
    is_namespace: bool,
}

impl Labels<'_> {
    /// `namespaceSelector` and `objectSelector` of `m` (absent or empty: everything).
    pub(super) fn match_selectors(&self, m: &Value) -> bool {
        let of = |v: Option<&Value>| -> Option<BTreeMap<String, String>> {
            let labels = v?.pointer("/metadata/labels").and_then(Value::as_object);
            Some(
                labels
                    .into_iter()
                    .flatten()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect(),
            )
        };
        let matches =
            |sel: &LabelSelector, v: Option<&Value>| of(v).is_some_and(|l| sel.matches(&l));
        if let Some(sel) = m.get("namespaceSelector").map(label_selector) {
            let Some(sel) = sel else { return false };
            let ok = match (self.cluster_scoped, self.is_namespace) {
                // a cluster-scoped object that is not a namespace is never excluded
                (true, false) => true,
                (_, true) => sel.is_empty() || matches(&sel, self.object.or(self.old)),
                (false, _) => {
                    sel.is_empty()
                        || matches(&sel, self.namespace)
                        // a namespace not stored has no labels
                        || (self.namespace.is_none() && sel.matches(&BTreeMap::new()))
                }
            };
            if !ok {
                return false;
            }
        }
        if let Some(sel) = m.get("objectSelector").map(label_selector) {
            let Some(sel) = sel else { return false };
            if !sel.is_empty() && !matches(&sel, self.object) && !matches(&sel, self.old) {
                return false;
            }
        }
        true
    }
}

/// A `LabelSelector` object as a selector (kinformer-selector's conversion of
/// apimachinery's); `None` when it is not one.
pub(crate) fn label_selector(v: &Value) -> Option<LabelSelector> {
    let selector: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector =
        serde_json::from_value(v.clone()).ok()?;
    LabelSelector::try_from(&selector).ok()
}
