//! Services as kube-apiserver stores them: `SetDefaults_Service` (type `ClusterIP`, session
//! affinity `None` and ClientIP's three-hour timeout, each port's protocol `TCP` and target
//! port, the traffic policies, `allocateLoadBalancerNodePorts`), and what its registry
//! allocates on create: a cluster IP (`clusterIPs`, `ipFamilies: [IPv4]`, `ipFamilyPolicy:
//! SingleStack`; headless `None` kept, both families when it has no selector) and node ports
//! for `NodePort` and `LoadBalancer` services; an update that leaves them out keeps them
//! (`patchAllocatedValues`).
//!
//! Cluster IPs come from 10.96.0.0/16 and node ports from 30000-32767, picked at random among
//! those the stored Services do not use (read before the write: two creates racing could, in
//! principle, pick the same one). A requested IP or port already in use is refused as there.
//! A dry run allocates nothing, as kube-apiserver's: it answers the range's own address
//! (10.96.0.0) for the cluster IP (a requested one is not checked against those in use) and
//! node ports from 32769 up. Not as kube-apiserver: IPv4 only. The `kubernetes` Service in `default` (at `10.96.0.1`,
//! which is never handed out) is kept by `controllers::kubernetes_service`.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde_json::{Map, Value, json};

use super::json_path::{each_object, set};
use crate::resource::ResourceInfo;
use crate::status::ApiError;

/// The service IP range: 10.96.0.0/16.
const RANGE: (Ipv4Addr, u32) = (Ipv4Addr::new(10, 96, 0, 0), 16);
/// The node port range, inclusive.
const NODE_PORTS: (u16, u16) = (30000, 32767);

/// Whether `res` is the core Services resource.
pub(crate) fn is_service(res: &ResourceInfo) -> bool {
    res.group.is_empty() && res.plural == "services"
}

fn spec_mut(obj: &mut Map<String, Value>) -> Option<&mut Map<String, Value>> {
    obj.get_mut("spec")?.as_object_mut()
}

fn service_type(spec: &Map<String, Value>) -> &str {
    spec.get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
}

/// `SetDefaults_Service`.
pub(crate) fn defaults(obj: &mut Map<String, Value>) {
    let Some(spec) = spec_mut(obj) else { return };
    set(spec, "type", json!("ClusterIP"));
    set(spec, "sessionAffinity", json!("None"));
    if spec.get("sessionAffinity").and_then(Value::as_str) == Some("ClientIP") {
        let config = spec
            .entry("sessionAffinityConfig")
            .or_insert_with(|| json!({}));
        if let Value::Object(c) = config {
            let ip = c.entry("clientIP").or_insert_with(|| json!({}));
            if let Value::Object(ip) = ip {
                set(ip, "timeoutSeconds", json!(10800));
            }
        }
    }
    let kind = service_type(spec).to_string();
    if kind == "ExternalName" {
        return;
    }
    set(spec, "internalTrafficPolicy", json!("Cluster"));
    if matches!(kind.as_str(), "NodePort" | "LoadBalancer") {
        set(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        set(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    for p in each_object(spec, "ports") {
        set(p, "protocol", json!("TCP"));
        let unset = match p.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            _ => false,
        };
        if unset && let Some(port) = p.get("port").cloned() {
            p.insert("targetPort".into(), port);
        }
    }
}

/// The cluster IPs and node ports the stored Services use.
#[derive(Debug, Default)]
pub(crate) struct Used {
    ips: BTreeSet<String>,
    node_ports: BTreeSet<i64>,
}

impl Used {
    /// What the services `stored` use.
    pub(crate) fn of<'a>(stored: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut used = Used::default();
        for s in stored {
            let spec = s.get("spec");
            let ips = spec
                .and_then(|s| s.get("clusterIPs"))
                .and_then(Value::as_array);
            used.ips.extend(
                ips.into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string),
            );
            let ports = spec.and_then(|s| s.get("ports")).and_then(Value::as_array);
            used.node_ports.extend(
                ports
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.get("nodePort").and_then(Value::as_i64)),
            );
        }
        used
    }
}

/// Allocates what a created Service `obj` (named `name`) lacks: its cluster IP and node ports,
/// among those `used` does not hold; 422 when it asks for one in use.
pub(crate) fn allocate(
    res: &ResourceInfo,
    obj: &mut Map<String, Value>,
    name: &str,
    used: &Used,
    dry_run: bool,
) -> Result<(), ApiError> {
    defaults(obj);
    let Some(spec) = spec_mut(obj) else {
        return Ok(());
    };
    let kind = service_type(spec).to_string();
    if kind == "ExternalName" {
        return Ok(());
    }
    let invalid = |field: &str, value: String, why: String| {
        ApiError::invalid(
            &res.kind,
            &res.group,
            name,
            &[(
                field.to_string(),
                "FieldValueInvalid".into(),
                format!("Invalid value: {value}: {why}"),
            )],
        )
    };
    let asked = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty())
        .map(str::to_string);
    let ip = match asked {
        Some(ip) if ip == "None" => ip,
        Some(ip) => {
            // a dry run checks the range only (kube-apiserver's IPAddress allocator)
            if !dry_run && used.ips.contains(&ip) {
                return Err(invalid(
                    "spec.clusterIPs",
                    format!("[\"{ip}\"]"),
                    format!("failed to allocate IP {ip}: provided IP is already allocated"),
                ));
            }
            ip
        }
        // a dry run does not look for a free address: it answers the range's own
        None if dry_run => RANGE.0.to_string(),
        None => free_ip(used),
    };
    spec.insert("clusterIP".into(), json!(ip));
    set(spec, "clusterIPs", json!([ip]));
    // a headless Service without a selector takes both families (its endpoints are the
    // user's, of either)
    let selectorless = spec
        .get("selector")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if ip == "None" && selectorless {
        set(spec, "ipFamilyPolicy", json!("RequireDualStack"));
        set(spec, "ipFamilies", json!(["IPv4", "IPv6"]));
    } else {
        set(spec, "ipFamilies", json!(["IPv4"]));
        set(spec, "ipFamilyPolicy", json!("SingleStack"));
    }
    let wants_node_ports = kind == "NodePort"
        || (kind == "LoadBalancer"
            && spec.get("allocateLoadBalancerNodePorts") != Some(&Value::Bool(false)));
    if !wants_node_ports {
        return Ok(());
    }
    let mut taken = used.node_ports.clone();
    // a dry run's node ports: the ones asked for, checked; the others one above the highest
    // this Service took so far, from 32769 (kube-apiserver's placeholders)
    let mut highest = None::<i64>;
    let ports = spec.get_mut("ports").and_then(Value::as_array_mut);
    for (i, p) in ports.into_iter().flatten().enumerate() {
        let Some(p) = p.as_object_mut() else { continue };
        match p
            .get("nodePort")
            .and_then(Value::as_i64)
            .filter(|n| *n != 0)
        {
            Some(n) if !taken.insert(n) => {
                return Err(invalid(
                    &format!("spec.ports[{i}].nodePort"),
                    n.to_string(),
                    "provided port is already allocated".into(),
                ));
            }
            Some(n) => highest = highest.max(Some(n)),
            None => {
                let n = if dry_run {
                    highest.unwrap_or(32768) + 1
                } else {
                    free_node_port(&taken)
                };
                highest = highest.max(Some(n));
                taken.insert(n);
                p.insert("nodePort".into(), json!(n));
            }
        }
    }
    Ok(())
}

fn free_ip(used: &Used) -> String {
    let base = u32::from(RANGE.0);
    let size = 1u32 << (32 - RANGE.1);
    // the network address and the first address (the `kubernetes` Service's) are not handed out
    loop {
        let ip = Ipv4Addr::from(base + rand::random_range(2..size - 1)).to_string();
        if !used.ips.contains(&ip) {
            return ip;
        }
    }
}

fn free_node_port(taken: &BTreeSet<i64>) -> i64 {
    let (lo, hi) = (i64::from(NODE_PORTS.0), i64::from(NODE_PORTS.1));
    if (lo..=hi).all(|n| taken.contains(&n)) {
        return 0;
    }
    loop {
        let n = rand::random_range(lo..=hi);
        if !taken.contains(&n) {
            return n;
        }
    }
}

/// An update that leaves out what was allocated keeps it: the cluster IPs, and each port's
/// node port (ports matched by port number and protocol), while the type still has them.
pub(crate) fn keep_allocated(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    let Some(old_spec) = old.get("spec").and_then(Value::as_object) else {
        return;
    };
    let Some(spec) = spec_mut(new) else { return };
    if service_type(spec) == "ExternalName" {
        return;
    }
    for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        if spec.get(field).is_none_or(Value::is_null)
            && let Some(v) = old_spec.get(field)
        {
            spec.insert(field.into(), v.clone());
        }
    }
    if !matches!(service_type(spec), "NodePort" | "LoadBalancer") {
        return;
    }
    let key = |p: &Map<String, Value>| {
        let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
        (p.get("port").and_then(Value::as_i64), protocol.to_string())
    };
    let old_ports: Vec<&Map<String, Value>> = old_spec
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .collect();
    for p in each_object(spec, "ports") {
        if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
            continue;
        }
        let kept = old_ports.iter().find(|o| key(o) == key(p));
        if let Some(n) = kept.and_then(|o| o.get("nodePort")) {
            p.insert("nodePort".into(), n.clone());
        }
    }
}

#[cfg(test)]
mod tests;
