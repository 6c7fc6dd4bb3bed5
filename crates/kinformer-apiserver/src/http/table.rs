//! `Table` responses (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), which kubectl
//! asks for to print `get` output with the server's columns.
//!
//! Columns follow the real server's printers for pods (Name, Ready, Status, Restarts, Age, and
//! IP/Node at priority 1), deployments, config maps and namespaces; custom resources get their
//! CRD version's `additionalPrinterColumns` (or Name and Age, with kube-apiserver's
//! descriptions); every other resource gets the default convertor's Name and Age. Row objects follow `includeObject` (`Metadata` by
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

/// kube-apiserver's description of a custom resource's Name column (`ObjectMeta`'s `name`).
const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// kube-apiserver's description of the Age column a CRD without printer columns gets
/// (`ObjectMeta`'s `creationTimestamp`).
const CREATED_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// A custom resource's columns, as apiextensions-apiserver's table convertor makes them: Name,
/// then the version's `additionalPrinterColumns` (each described by its `description`, else
/// by its JSONPath), or an Age column when it declares none.
fn custom_columns(res: &ResourceInfo) -> Vec<Value> {
    let mut cols = vec![json!({"name": "Name", "type": "string", "format": "name",
                               "description": NAME_DESCRIPTION, "priority": 0})];
    let Some(printer) = &res.printer_columns else {
        cols.push(json!({"name": "Age", "type": "date", "format": "",
                         "description": CREATED_DESCRIPTION, "priority": 0}));
        return cols;
    };
    for c in printer.iter() {
        let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
        let description = match s("description") {
            "" => format!(
                "Custom resource definition column (in JSONPath format): {}",
                s("jsonPath")
            ),
            d => d.to_string(),
        };
        cols.push(
            json!({"name": s("name"), "type": s("type"), "format": s("format"),
                         "description": description,
                         "priority": c.get("priority").and_then(Value::as_i64).unwrap_or(0)}),
        );
    }
    cols
}

/// A custom resource's cells: its name, then each printer column's value (the first the
/// column's JSONPath finds, as the column's type shows it; null when there is none), or its
/// age when its CRD declares no columns.
fn custom_cells(res: &ResourceInfo, obj: &Value) -> Vec<Value> {
    let name = Value::String(obj["metadata"]["name"].as_str().unwrap_or("").to_string());
    let Some(printer) = &res.printer_columns else {
        return vec![name, json!(age(obj))];
    };
    let mut cells = vec![name];
    for c in printer.iter() {
        let path = c.get("jsonPath").and_then(Value::as_str).unwrap_or("");
        let ty = c.get("type").and_then(Value::as_str).unwrap_or("");
        let found = first_match(obj, path);
        cells.push(found.map_or(Value::Null, |v| cell(ty, v)));
    }
    cells
}

/// The first value a column's JSONPath (Kubernetes' dialect: `.spec.replicas`,
/// `.status.conditions[?(@.type=="Ready")].status`) finds in `obj`.
fn first_match<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    use jsonpath_rust::JsonPath;
    let path = path.trim();
    let query = match path.strip_prefix('$') {
        Some(_) => path.to_string(),
        None => format!("${path}"),
    };
    obj.query(&query).ok()?.into_iter().next()
}

/// A column's cell for `value`, as apiextensions-apiserver's table convertor shows a value
/// of the column's `type`: a string column prints it (JSON for objects and arrays), the other
/// types keep values of their type (`date`: the age of a timestamp), anything else is null.
fn cell(ty: &str, value: &Value) -> Value {
    match (ty, value) {
        (_, Value::Null) => Value::Null,
        ("string", Value::String(s)) => json!(s),
        ("string", Value::Object(_) | Value::Array(_)) => json!(value.to_string()),
        ("string", Value::Number(n)) => json!(n.to_string()),
        ("string", Value::Bool(b)) => json!(b.to_string()),
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => json!(i),
            None => n.as_f64().map_or(Value::Null, |f| json!(f as i64)),
        },
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, |f| json!(f)),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(t)) => match t.parse::<jiff::Timestamp>() {
            Ok(t) => json!(human_duration(
                jiff::Timestamp::now().as_second() - t.as_second()
            )),
            Err(_) => json!("<invalid>"),
        },
        _ => Value::Null,
    }
}

fn columns(res: &ResourceInfo) -> Vec<Value> {
    if res.crd_name.is_some() {
        return custom_columns(res);
    }
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
    if res.crd_name.is_some() {
        return custom_cells(res, obj);
    }
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
    fn custom_resources_get_their_printer_columns() {
        let mut res = ResourceInfo::new(
            "example.com",
            "v1",
            "Widget",
            "widgets",
            crate::resource::Scope::Namespaced,
        );
        res.crd_name = Some("widgets.example.com".into());
        let widget = json!({"metadata": {"name": "w", "creationTimestamp": "2020-01-01T00:00:00Z"},
                            "spec": {"size": 3, "color": {"r": 1}, "ratio": 1.5},
                            "status": {"conditions": [{"type": "Synced", "status": "False"},
                                                      {"type": "Ready", "status": "True"}]}});
        // no columns: Name and Age, described as kube-apiserver describes them
        let t = table(
            &res,
            std::slice::from_ref(&widget),
            json!({}),
            IncludeObject::None,
        );
        assert_eq!(t["columnDefinitions"][1]["name"], "Age");
        assert_eq!(t["columnDefinitions"][1]["type"], "date");
        assert!(
            t["columnDefinitions"][0]["description"]
                .as_str()
                .unwrap()
                .starts_with("Name must be unique")
        );
        assert!(t["rows"][0]["cells"][1].as_str().unwrap().ends_with('y'));
        res.printer_columns = Some(std::sync::Arc::new(vec![
            json!({"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 1}),
            json!({"name": "Ready", "type": "string", "description": "is it",
                   "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}),
            json!({"name": "Color", "type": "string", "jsonPath": ".spec.color"}),
            json!({"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"}),
            json!({"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"}),
            json!({"name": "Wrong", "type": "boolean", "jsonPath": ".spec.size"}),
            json!({"name": "Created", "type": "date", "jsonPath": ".metadata.creationTimestamp"}),
        ]));
        let t = table(&res, &[widget], json!({}), IncludeObject::None);
        let cols = t["columnDefinitions"].as_array().unwrap();
        assert_eq!(
            cols[1],
            json!({"name": "Size", "type": "integer", "format": "", "priority": 1,
            "description": "Custom resource definition column (in JSONPath format): .spec.size"})
        );
        assert_eq!(cols[2]["description"], "is it");
        let cells = &t["rows"][0]["cells"];
        assert_eq!(cells[0], "w");
        assert_eq!(cells[1], 3);
        assert_eq!(cells[2], "True");
        assert_eq!(cells[3], r#"{"r":1}"#);
        assert_eq!(cells[4], 1.5);
        assert_eq!(cells[5], Value::Null);
        assert_eq!(cells[6], Value::Null);
        assert!(cells[7].as_str().unwrap().ends_with('y'));
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
