//! Custom objects read from storage through their CRD's current schema.

use serde_json::{Map, Value};

/// A stored custom object as kube-apiserver decodes it from storage (its schema coercer and
/// defaulter, run on every read from etcd): pruned by the structural schema of the version it
/// is stored in, non-nullable nulls dropped, defaults set; nothing is validated. `apiVersion`,
/// `kind` and `metadata` at the root are kept as they are.
pub(crate) fn coerce_stored(schema: &Value, obj: &mut Map<String, Value>) {
    let keep: Vec<(String, Value)> = ["apiVersion", "kind", "metadata"]
        .iter()
        .filter_map(|k| obj.remove(*k).map(|v| (k.to_string(), v)))
        .collect();
    let mut rest = Value::Object(std::mem::take(obj));
    super::combinators::reset_budget();
    // the causes a write would be refused for are not a read's concern
    super::walk(schema, &mut rest, None, "", 0, &mut Vec::new(), true);
    if let Value::Object(m) = rest {
        *obj = m;
    }
    for (k, v) in keep {
        obj.insert(k, v);
    }
}
