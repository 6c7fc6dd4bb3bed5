//! The resources a CustomResourceDefinition makes served: one per served version, its
//! storage version first.

use std::sync::Arc;

use serde_json::Value;

use super::{root_schema, s, storage_version};
use crate::resource::{ResourceInfo, ScaleInfo, Scope, version_priority};

/// The resource a stored CRD makes served in its storage version, `None` if it cannot serve
/// one.
#[cfg(test)]
pub(crate) fn resource_info(crd: &Value) -> Option<ResourceInfo> {
    resource_infos(crd).into_iter().next()
}

/// The resources a stored CRD makes served: its storage version first, then every other
/// served version (objects stored in the storage version, shown in the version asked for: by
/// their `apiVersion` alone under conversion strategy `None`, by the CRD's conversion webhook
/// under `Webhook`, see `crate::http::conversion`); none if it cannot serve one.
pub(crate) fn resource_infos(crd: &Value) -> Vec<ResourceInfo> {
    let Some(spec) = crd.get("spec") else {
        return Vec::new();
    };
    let Some(storage) = storage_version(spec) else {
        return Vec::new();
    };
    let Some(mut first) = version_info(crd, spec, storage) else {
        return Vec::new();
    };
    let webhook = || match s(spec, &["conversion", "strategy"]) {
        "Webhook" => spec.pointer("/conversion/webhook").cloned().map(Arc::new),
        _ => None,
    };
    // objects stored before the storage version changed are converted to it when read
    first.conversion = webhook();
    let storage_schema = first.schema.clone();
    let mut infos = vec![first];
    for version in spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let served = version.get("served").and_then(Value::as_bool) != Some(false);
        if !served || s(version, &["name"]) == s(storage, &["name"]) {
            continue;
        }
        if let Some(mut info) = version_info(crd, spec, version) {
            info.storage_version = Some(s(storage, &["name"]).to_string());
            info.storage_schema = storage_schema.clone();
            info.conversion = webhook();
            infos.push(info);
        }
    }
    infos
}

/// The resource of one version of a stored CRD.
fn version_info(crd: &Value, spec: &Value, version: &Value) -> Option<ResourceInfo> {
    let scope = match s(spec, &["scope"]) {
        "Cluster" => Scope::Cluster,
        _ => Scope::Namespaced,
    };
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(|a| a.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let names = spec.get("names")?;
    let kind = s(names, &["kind"]);
    let mut info = ResourceInfo::new(
        s(spec, &["group"]),
        s(version, &["name"]),
        kind,
        s(names, &["plural"]),
        scope,
    );
    let singular = s(names, &["singular"]);
    if !singular.is_empty() {
        info.singular = singular.to_string();
    }
    info.short_names = strings(names.get("shortNames"));
    info.categories = strings(names.get("categories"));
    let subresources = version.get("subresources");
    info.status_subresource = subresources.and_then(|s| s.get("status")).is_some();
    info.scale = subresources
        .and_then(|s| s.get("scale"))
        .map(|sc| ScaleInfo {
            spec_replicas_path: s(sc, &["specReplicasPath"]).to_string(),
            status_replicas_path: s(sc, &["statusReplicasPath"]).to_string(),
            label_selector_path: Some(s(sc, &["labelSelectorPath"]))
                .filter(|p| !p.is_empty())
                .map(String::from),
        });
    info.schema = version
        .pointer("/schema/openAPIV3Schema")
        .map(|schema| Arc::new(root_schema(schema)));
    info.crd_name = crd
        .pointer("/metadata/name")
        .and_then(|n| n.as_str())
        .map(String::from);
    info.deprecation = deprecation(spec, version);
    info.printer_columns = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .map(|c| Arc::new(c.clone()));
    Some(info)
}

/// The warning every request to a version marked `deprecated` gets, as apiextensions-apiserver
/// words it: the version's `deprecationWarning` (none when it is empty), else `<group>/<version>
/// <Kind> is deprecated`, followed by `; use <group>/<newer> <Kind>` naming the highest served,
/// not deprecated version above it in Kubernetes' version order, when there is one.
fn deprecation(spec: &Value, version: &Value) -> Option<String> {
    if version.get("deprecated").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    if let Some(w) = version.get("deprecationWarning").and_then(Value::as_str) {
        return (!w.is_empty()).then(|| w.to_string());
    }
    let (group, kind, name) = (
        s(spec, &["group"]),
        s(spec, &["names", "kind"]),
        s(version, &["name"]),
    );
    let order = |v: &str| (version_priority(v), v.to_string());
    let newer = spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| {
            v.get("served").and_then(Value::as_bool) != Some(false)
                && v.get("deprecated").and_then(Value::as_bool) != Some(true)
        })
        .map(|v| s(v, &["name"]))
        .filter(|v| order(v) < order(name))
        .min_by_key(|v| order(v));
    let mut msg = format!("{group}/{name} {kind} is deprecated");
    if let Some(newer) = newer {
        msg.push_str(&format!("; use {group}/{newer} {kind}"));
    }
    Some(msg)
}
