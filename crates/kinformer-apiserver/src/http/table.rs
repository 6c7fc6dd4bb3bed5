//! `Table` responses (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), which kubectl
//! asks for to print `get` output with the server's columns.
//!
//! Columns follow the real server's printers for pods (Name, Ready, Status, Restarts, Age, and
//! IP/Node at priority 1), deployments, config maps and namespaces; every other resource gets
//! the default convertor's Name and Age. Row objects follow `includeObject` (`Metadata` by
//! default: a `PartialObjectMetadata`).

use serde_json::{Map, Value, json};

use crate::resource::ResourceInfo;

/// What each row carries in `object` (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    /// Nothing.
    None,
    /// A `PartialObjectMetadata` (the default).
    Metadata,
    /// The full object.
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query value (default `Metadata`).
    pub(crate) fn parse(v: Option<&str>) -> Self {
        match v {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

/// Whether the `Accept` header asks for a `meta.k8s.io/v1` Table.
pub(crate) fn wants_table(accept: &str) -> bool {
    accept.split(',').any(|clause| {
        let parts: Vec<&str> = clause.split(';').map(|p| p.trim()).collect();
        parts.contains(&"as=Table") && parts.contains(&"g=meta.k8s.io") && parts.contains(&"v=v1")
    })
}

fn col(name: &str, ty: &str, format: &str, priority: u8) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": "", "priority": priority})
}

fn columns(res: &ResourceInfo) -> Vec<Value> {
    let name = col("Name", "string", "name", 0);
    let age = col("Age", "string", "", 0);
    match (res.group.as_str(), res.plural.as_str()) {
        ("", "pods") => vec![
            name,
            col("Ready", "string", "", 0),
            col("Status", "string", "", 0),
            col("Restarts", "string", "", 0),
            age,
            col("IP", "string", "", 1),
            col("Node", "string", "", 1),
        ],
        ("apps", "deployments") => vec![
            name,
            col("Ready", "string", "", 0),
            col("Up-to-date", "integer", "", 0),
            col("Available", "integer", "", 0),
            age,
        ],
        ("", "configmaps") => vec![name, col("Data", "integer", "", 0), age],
        ("", "namespaces") => vec![name, col("Status", "string", "", 0), age],
        _ => vec![name, age],
    }
}

/// kubectl's short human duration ("45s", "5m10s", "3h", "12d").
pub(crate) fn human_duration(secs: i64) -> String {
    if secs < 0 {
        return "0s".into();
    }
    let (m, h, d) = (secs / 60, secs / 3600, secs / 86400);
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        let s = secs % 60;
        if s == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{s}s")
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        let rm = m % 60;
        if rm == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{rm}m")
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 192 {
        let rh = h % 24;
        if rh == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{rh}h")
        }
    } else if d < 730 {
        format!("{d}d")
    } else {
        format!("{}y", d / 365)
    }
}

fn age(obj: &Value) -> String {
    let created = obj["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    match created {
        Some(t) => human_duration(jiff::Timestamp::now().as_second() - t.as_second()),
        None => "<unknown>".into(),
    }
}

fn cells(res: &ResourceInfo, obj: &Value) -> Vec<Value> {
    let name = Value::String(obj["metadata"]["name"].as_str().unwrap_or("").to_string());
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    match (res.group.as_str(), res.plural.as_str()) {
        ("", "pods") => {
            let total = obj["spec"]["containers"]
                .as_array()
                .map(|a| a.len())
                .unwrap_or(0);
            let statuses = obj["status"]["containerStatuses"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let ready = statuses.iter().filter(|c| c["ready"] == true).count();
            let restarts: i64 = statuses
                .iter()
                .filter_map(|c| c["restartCount"].as_i64())
                .sum();
            let mut status = s(&obj["status"]["phase"]);
            if let Some(reason) = obj["status"]["reason"].as_str() {
                status = reason.to_string();
            }
            if obj["metadata"]["deletionTimestamp"].is_string() {
                status = "Terminating".into();
            }
            if status.is_empty() {
                status = "Pending".into();
            }
            let ip = obj["status"]["podIP"]
                .as_str()
                .unwrap_or("<none>")
                .to_string();
            let node = obj["spec"]["nodeName"]
                .as_str()
                .unwrap_or("<none>")
                .to_string();
            vec![
                name,
                json!(format!("{ready}/{total}")),
                json!(status),
                json!(restarts.to_string()),
                json!(age(obj)),
                json!(ip),
                json!(node),
            ]
        }
        ("apps", "deployments") => {
            let want = obj["spec"]["replicas"].as_i64().unwrap_or(1);
            let st = &obj["status"];
            let ready = st["readyReplicas"].as_i64().unwrap_or(0);
            vec![
                name,
                json!(format!("{ready}/{want}")),
                json!(st["updatedReplicas"].as_i64().unwrap_or(0)),
                json!(st["availableReplicas"].as_i64().unwrap_or(0)),
                json!(age(obj)),
            ]
        }
        ("", "configmaps") => {
            let n = obj["data"].as_object().map(|m| m.len()).unwrap_or(0)
                + obj["binaryData"].as_object().map(|m| m.len()).unwrap_or(0);
            vec![name, json!(n), json!(age(obj))]
        }
        ("", "namespaces") => {
            let phase = obj["status"]["phase"]
                .as_str()
                .unwrap_or("Active")
                .to_string();
            vec![name, json!(phase), json!(age(obj))]
        }
        _ => vec![name, json!(age(obj))],
    }
}

fn row(res: &ResourceInfo, obj: &Value, include: IncludeObject) -> Value {
    let mut r = Map::new();
    r.insert("cells".into(), Value::Array(cells(res, obj)));
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            r.insert(
                "object".into(),
                json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}),
            );
        }
        IncludeObject::Object => {
            r.insert("object".into(), obj.clone());
        }
    }
    Value::Object(r)
}

/// A Table of `objects` with the given list metadata.
pub(crate) fn table(
    res: &ResourceInfo,
    objects: &[Value],
    metadata: Value,
    include: IncludeObject,
) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns(res),
        "rows": objects.iter().map(|o| row(res, o, include)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::builtin_resources;

    #[test]
    fn negotiation_and_durations() {
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
        assert!(!wants_table(
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
        ));
        assert_eq!(human_duration(45), "45s");
        assert_eq!(human_duration(310), "5m10s");
        assert_eq!(human_duration(3 * 3600), "3h");
        assert_eq!(human_duration(12 * 86400), "12d");
    }

    #[test]
    fn pod_rows_have_the_real_columns() {
        let pods = builtin_resources().remove(0);
        let pod = crate::seed::pod("default", "p", 3);
        let t = table(
            &pods,
            &[pod],
            json!({"resourceVersion": "5"}),
            IncludeObject::Metadata,
        );
        let names: Vec<_> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node"]
        );
        assert_eq!(t["rows"][0]["cells"][0], "p");
        assert_eq!(t["rows"][0]["cells"][1], "1/1");
        assert_eq!(t["rows"][0]["cells"][2], "Running");
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    }
}
