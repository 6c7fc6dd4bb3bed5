//! Field sets and the structural comparison behind `metadata.managedFields`, after
//! structured-merge-diff (the library kube-apiserver's field manager uses).
//!
//! A [`FieldSet`] is a set of paths; a path is a list of path elements encoded as in `FieldsV1`:
//! `f:<field>` for a map key or struct field, `k:{"name":"x"}` for an item of a keyed list,
//! `v:<json>` for an item of a set list. [`compare`] walks two versions of an object and
//! returns the paths added, modified and removed, with structured-merge-diff's rules:
//! scalars, atomic lists and maps, and empty maps or lists are leaves; a map, struct or
//! granular list node is itself added (or removed) only when it was absent before (or after),
//! which is why a newly created config map owns `f:data` (`"."`) while a pod's `f:spec`, present
//! in Go's zero object, is never a member.
//!
//! List and map semantics come from a [`MergeSchema`] (see [`super::apply::schema`]).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::apply::schema::{ListType, MapType, MergeSchema};

/// One path: encoded path elements (`f:spec`, `k:{"name":"a"}`, `v:"x"`).
pub(crate) type FieldPath = Vec<String>;

/// A set of field paths (structured-merge-diff's `fieldpath.Set`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSet(BTreeSet<FieldPath>);

impl FieldSet {
    /// The empty set.
    pub(crate) fn new() -> Self {
        FieldSet::default()
    }

    /// Whether the set has no path.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds a path.
    pub(crate) fn insert(&mut self, path: FieldPath) {
        self.0.insert(path);
    }

    /// Whether the set holds exactly this path.
    pub(crate) fn contains(&self, path: &[String]) -> bool {
        self.0.contains(path)
    }

    /// The paths, in lexicographic order of their elements.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &FieldPath> {
        self.0.iter()
    }

    /// Paths in both `self` and `other`.
    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.intersection(&other.0).cloned().collect())
    }

    /// The paths below `pe` (longer than it, starting with it), with `pe` taken off.
    pub(crate) fn with_prefix(&self, pe: &str) -> FieldSet {
        FieldSet(
            self.0
                .iter()
                .filter(|p| p.len() > 1 && p[0] == pe)
                .map(|p| p[1..].to_vec())
                .collect(),
        )
    }

    /// The paths in structured-merge-diff's iteration order (`Set.Iterate`): at each level the
    /// members first, then the children's paths, each group sorted.
    pub(crate) fn iterate_in_go_order(&self) -> Vec<FieldPath> {
        fn walk(set: &FieldSet, prefix: &mut FieldPath, out: &mut Vec<FieldPath>) {
            let mut children: Vec<&String> = Vec::new();
            for p in &set.0 {
                if p.len() == 1 {
                    prefix.push(p[0].clone());
                    out.push(prefix.clone());
                    prefix.pop();
                } else if children.last() != Some(&&p[0]) {
                    children.push(&p[0]);
                }
            }
            for c in children {
                prefix.push(c.clone());
                walk(&set.with_prefix(c), prefix, out);
                prefix.pop();
            }
        }
        let mut out = Vec::new();
        walk(self, &mut Vec::new(), &mut out);
        out
    }

    /// Paths in `self` or `other`.
    pub(crate) fn union(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.union(&other.0).cloned().collect())
    }

    /// Paths in `self` and not in `other` (exact paths: a path's children stay).
    pub(crate) fn difference(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.difference(&other.0).cloned().collect())
    }

    /// Keeps the paths for which `keep` holds.
    pub(crate) fn filter(&self, keep: impl Fn(&FieldPath) -> bool) -> FieldSet {
        FieldSet(self.0.iter().filter(|p| keep(p)).cloned().collect())
    }

    /// Parses a `FieldsV1` object: `{}` marks a member leaf, `"."` marks the enclosing node a
    /// member when it also has children. Anything that is not an object is skipped.
    pub(crate) fn from_fields_v1(v: &Value) -> FieldSet {
        fn walk(v: &Value, path: &mut FieldPath, out: &mut BTreeSet<FieldPath>) {
            let Some(m) = v.as_object() else { return };
            for (k, child) in m {
                if k == "." {
                    if !path.is_empty() {
                        out.insert(path.clone());
                    }
                    continue;
                }
                path.push(k.clone());
                match child.as_object() {
                    Some(c) if c.is_empty() => {
                        out.insert(path.clone());
                    }
                    Some(_) => walk(child, path, out),
                    None => {}
                }
                path.pop();
            }
        }
        let mut out = BTreeSet::new();
        walk(v, &mut Vec::new(), &mut out);
        FieldSet(out)
    }

    /// The `FieldsV1` object of the set.
    pub(crate) fn to_fields_v1(&self) -> Value {
        #[derive(Default)]
        struct Node {
            member: bool,
            children: BTreeMap<String, Node>,
        }
        fn emit(n: &Node) -> Value {
            let mut m = Map::new();
            if n.member && !n.children.is_empty() {
                m.insert(".".into(), Value::Object(Map::new()));
            }
            for (k, c) in &n.children {
                m.insert(k.clone(), emit(c));
            }
            Value::Object(m)
        }
        let mut root = Node::default();
        for path in &self.0 {
            let mut node = &mut root;
            for pe in path {
                node = node.children.entry(pe.clone()).or_default();
            }
            if !path.is_empty() {
                node.member = true;
            }
        }
        emit(&root)
    }
}

/// What changed between two versions of an object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Comparison {
    /// Paths present only in the new version.
    pub added: FieldSet,
    /// Leaf paths present in both with different values.
    pub modified: FieldSet,
    /// Paths present only in the old version.
    pub removed: FieldSet,
}

/// The path element of a list item, or `None` when the item cannot be keyed (then the list
/// is treated as atomic). A key field the item omits takes its schema default, as
/// structured-merge-diff does.
pub(crate) fn item_element(lt: &ListType, item: &Value) -> Option<String> {
    match lt {
        ListType::Atomic => None,
        ListType::Set => Some(format!("v:{item}")),
        ListType::Map(keys) => {
            let obj = item.as_object()?;
            let key: Map<String, Value> = keys
                .iter()
                .filter_map(|k| {
                    obj.get(&k.name)
                        .or(k.default.as_ref())
                        .map(|v| (k.name.clone(), v.clone()))
                })
                .collect();
            if key.is_empty() {
                return None;
            }
            Some(format!("k:{}", Value::Object(key)))
        }
    }
}

/// The schema path of a field path: field names, `[]` for list items.
pub(crate) fn schema_path(path: &[String]) -> Vec<&str> {
    path.iter()
        .map(|pe| pe.strip_prefix("f:").unwrap_or("[]"))
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Map,
    List,
    Scalar,
}

fn shape(v: &Value) -> Shape {
    match v {
        Value::Object(_) => Shape::Map,
        Value::Array(_) => Shape::List,
        _ => Shape::Scalar,
    }
}

struct Walker<'a> {
    schema: &'a dyn MergeSchema,
    path: FieldPath,
    spath: Vec<String>,
    out: Comparison,
}

impl Walker<'_> {
    fn leaf(&mut self, lhs: Option<&Value>, rhs: Option<&Value>) {
        match (lhs, rhs) {
            (None, Some(_)) => self.out.added.insert(self.path.clone()),
            (Some(_), None) => self.out.removed.insert(self.path.clone()),
            (Some(a), Some(b)) if a != b => self.out.modified.insert(self.path.clone()),
            _ => {}
        }
    }

    fn node(&mut self, lhs: Option<&Value>, rhs: Option<&Value>) {
        if lhs.is_none() {
            self.out.added.insert(self.path.clone());
        } else if rhs.is_none() {
            self.out.removed.insert(self.path.clone());
        }
    }

    fn spath(&self) -> Vec<&str> {
        self.spath.iter().map(|s| s.as_str()).collect()
    }

    /// Compares one node; `None` = absent, `Some(null)` = present and null.
    fn compare(&mut self, lhs: Option<&Value>, rhs: Option<&Value>) {
        let l = lhs.filter(|v| !v.is_null());
        let r = rhs.filter(|v| !v.is_null());
        let sh = match (l, r) {
            (Some(a), Some(b)) if shape(a) != shape(b) => Shape::Scalar,
            (_, Some(b)) => shape(b),
            (Some(a), None) => shape(a),
            (None, None) => Shape::Scalar,
        };
        match sh {
            Shape::Scalar => self.leaf(lhs, rhs),
            Shape::Map => {
                let lm = l.and_then(|v| v.as_object());
                let rm = r.and_then(|v| v.as_object());
                let empty = lm.is_none_or(|m| m.is_empty()) && rm.is_none_or(|m| m.is_empty());
                if empty || self.schema.map_at(&self.spath()) == MapType::Atomic {
                    return self.leaf(lhs, rhs);
                }
                self.fields(lm, rm);
                self.node(lhs, rhs);
            }
            Shape::List => {
                let la = l
                    .and_then(|v| v.as_array())
                    .map(|a| a.as_slice())
                    .unwrap_or(&[]);
                let ra = r
                    .and_then(|v| v.as_array())
                    .map(|a| a.as_slice())
                    .unwrap_or(&[]);
                let lt = self.schema.list_at(&self.spath());
                if (la.is_empty() && ra.is_empty()) || lt == ListType::Atomic {
                    return self.leaf(lhs, rhs);
                }
                let mut items: BTreeMap<String, (Option<&Value>, Option<&Value>)> = BTreeMap::new();
                for (side, list) in [(0, la), (1, ra)] {
                    for item in list {
                        let Some(pe) = item_element(&lt, item) else {
                            // Unkeyable item: the list is compared as a whole.
                            return self.leaf(lhs, rhs);
                        };
                        let e = items.entry(pe).or_default();
                        // The first occurrence of a key wins, as structured-merge-diff does.
                        if side == 0 && e.0.is_none() {
                            e.0 = Some(item);
                        } else if side == 1 && e.1.is_none() {
                            e.1 = Some(item);
                        }
                    }
                }
                self.spath.push("[]".into());
                for (pe, (li, ri)) in items {
                    self.path.push(pe);
                    self.compare(li, ri);
                    self.path.pop();
                }
                self.spath.pop();
                self.node(lhs, rhs);
            }
        }
    }

    fn fields(&mut self, lm: Option<&Map<String, Value>>, rm: Option<&Map<String, Value>>) {
        let keys: BTreeSet<&String> = lm
            .into_iter()
            .flat_map(|m| m.keys())
            .chain(rm.into_iter().flat_map(|m| m.keys()))
            .collect();
        for k in keys {
            self.path.push(format!("f:{k}"));
            self.spath.push(k.clone());
            self.compare(lm.and_then(|m| m.get(k)), rm.and_then(|m| m.get(k)));
            self.spath.pop();
            self.path.pop();
        }
    }
}

/// Compares two versions of an object (both JSON objects; `old` may be Go's zero object of
/// the kind for a create) under `schema`.
pub(crate) fn compare(
    schema: &dyn MergeSchema,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
) -> Comparison {
    let mut w = Walker {
        schema,
        path: Vec::new(),
        spath: Vec::new(),
        out: Comparison::default(),
    };
    w.fields(Some(old), Some(new));
    w.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::apply::schema::BuiltinSchema;
    use crate::objects::test_util;
    use serde_json::json;

    fn compare(plural: &str, old: &Map<String, Value>, new: &Map<String, Value>) -> Comparison {
        let r = test_util::res(plural);
        super::compare(&BuiltinSchema { res: &r }, old, new)
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn fields_v1_round_trips() {
        let v = json!({"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:finalizers": {".": {}, "v:\"a/b\"": {}}}});
        let s = FieldSet::from_fields_v1(&v);
        assert!(s.contains(&["f:data".to_string()]));
        assert!(s.contains(&["f:data".to_string(), "f:k".to_string()]));
        assert!(!s.contains(&["f:metadata".to_string()]));
        assert_eq!(s.to_fields_v1(), v);
    }

    #[test]
    fn new_maps_are_members_present_structs_are_not() {
        let c = compare(
            "pods",
            &obj(
                json!({"metadata": {"creationTimestamp": null}, "spec": {"containers": null}, "status": {}}),
            ),
            &obj(
                json!({"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i", "resources": {}, "ports": [{"containerPort": 80, "protocol": "TCP"}]}], "restartPolicy": "Always"}}),
            ),
        );
        let fields = c.added.to_fields_v1();
        assert_eq!(
            fields,
            json!({
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:containers": {"k:{\"name\":\"c\"}": {
                        ".": {}, "f:image": {}, "f:name": {}, "f:resources": {},
                        "f:ports": {".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}}
                    }},
                    "f:restartPolicy": {}
                }
            })
        );
        assert!(c.removed.contains(&["f:status".to_string()]));
    }

    #[test]
    fn modified_and_removed_leaves() {
        let c = compare(
            "configmaps",
            &obj(json!({"data": {"a": "1", "b": "2"}, "metadata": {"finalizers": ["x"]}})),
            &obj(json!({"data": {"a": "9"}, "metadata": {}})),
        );
        assert_eq!(c.modified.to_fields_v1(), json!({"f:data": {"f:a": {}}}));
        assert_eq!(
            c.removed.to_fields_v1(),
            json!({"f:data": {"f:b": {}}, "f:metadata": {"f:finalizers": {".": {}, "v:\"x\"": {}}}})
        );
        assert!(c.added.is_empty());
    }

    #[test]
    fn unknown_lists_are_atomic() {
        let c = compare(
            "configmaps",
            &obj(json!({})),
            &obj(json!({"x": [1, 2], "y": []})),
        );
        assert_eq!(c.added.to_fields_v1(), json!({"f:x": {}, "f:y": {}}));
    }
}
