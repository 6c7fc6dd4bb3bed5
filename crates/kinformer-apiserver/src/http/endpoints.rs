//! Where a webhook (an admission or a conversion webhook) is reached: its `clientConfig.url`,
//! or its `clientConfig.service` through the Service's EndpointSlices (else its Endpoints), as
//! kube-apiserver with `--enable-aggregator-routing` reaches a Service.

use serde_json::Value;

use crate::admission::webhook::call::Endpoint;
use crate::api::Api;

/// Where a webhook with the `clientConfig` `cc` is reached (an admission or a conversion
/// webhook's): its URL, or its Service's first ready endpoint.
pub(crate) fn endpoint_of(api: &Api, cc: &Value) -> Result<Endpoint, String> {
    if let Some(url) = cc.get("url").and_then(Value::as_str) {
        return Endpoint::of_url(url);
    }
    let Some(svc) = cc.get("service") else {
        return Err("webhook has no clientConfig.url or clientConfig.service".into());
    };
    let get = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or_default();
    let (ns, name) = (get("namespace"), get("name"));
    let path = Some(get("path")).filter(|p| !p.is_empty()).unwrap_or("/");
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
    let (address, target) = service_endpoint(api, ns, name, port)?;
    let host = if address.contains(':') {
        format!("[{address}]")
    } else {
        address
    };
    Ok(Endpoint {
        base: format!("https://{host}:{target}"),
        path: path.to_string(),
        server_name: Some(format!("{name}.{ns}.svc")),
    })
}

/// The first ready address and port behind port `port` of Service `ns/name`: its
/// EndpointSlices', else its Endpoints'.
fn service_endpoint(api: &Api, ns: &str, name: &str, port: i64) -> Result<(String, i64), String> {
    let missing = || format!("service \"{name}\" not found");
    let svc_res = api
        .registry
        .find("", "v1", "services")
        .ok_or_else(missing)?;
    let svc = api
        .get(&svc_res, Some(ns), name)
        .map_err(|_| missing())?
        .to_value();
    let ports = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(sp) = ports
        .iter()
        .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
    else {
        return Err(format!(
            "no service port {port} found for service \"{name}\""
        ));
    };
    let port_name = sp.get("name").and_then(Value::as_str).unwrap_or("");
    let no_endpoints = || format!("no endpoints available for service \"{name}\"");
    if let Some(r) = api
        .registry
        .find("discovery.k8s.io", "v1", "endpointslices")
        && let Ok((_, slices)) = api
            .store
            .list(&r.group_resource(), None, &format!("{ns}/"), "")
    {
        for s in slices.iter() {
            if s.labels
                .get("kubernetes.io/service-name")
                .map(String::as_str)
                != Some(name)
            {
                continue;
            }
            let v = s.to_value();
            let Some(p) = named_port(v.get("ports"), port_name) else {
                continue;
            };
            for e in v
                .get("endpoints")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if e.pointer("/conditions/ready").and_then(Value::as_bool) == Some(false) {
                    continue;
                }
                if let Some(a) = e
                    .get("addresses")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(Value::as_str)
                {
                    return Ok((a.to_string(), p));
                }
            }
        }
    }
    let ep_res = api
        .registry
        .find("", "v1", "endpoints")
        .ok_or_else(no_endpoints)?;
    let ep = api
        .get(&ep_res, Some(ns), name)
        .map_err(|_| no_endpoints())?
        .to_value();
    for subset in ep
        .get("subsets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(p) = named_port(subset.get("ports"), port_name) else {
            continue;
        };
        if let Some(a) = subset.pointer("/addresses/0/ip").and_then(Value::as_str) {
            return Ok((a.to_string(), p));
        }
    }
    Err(no_endpoints())
}

/// The number of the port named `name` (`""`: the unnamed one) in an EndpointSlice's or an
/// Endpoints subset's `ports`.
fn named_port(ports: Option<&Value>, name: &str) -> Option<i64> {
    ports
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == name)
        .and_then(|p| p.get("port").and_then(Value::as_i64))
}
