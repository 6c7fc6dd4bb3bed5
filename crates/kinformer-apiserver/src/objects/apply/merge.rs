//! structured-merge-diff's value operations for apply: merging an applied configuration into
//! the live object ([`merge`]), the field set a configuration owns ([`to_field_set`]), and
//! removing paths ([`remove_items`]) for the pruning of fields an applier stopped applying
//! ([`prune`]).

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::{Map, Value};

use super::schema::{ListType, MapType, MergeSchema};
use crate::objects::fieldset::{FieldPath, FieldSet, item_element, schema_path};

/// The path elements of a list's items; `None` when one cannot be keyed (the list is then
/// handled as atomic).
fn elements(lt: &ListType, items: &[Value]) -> Option<Vec<String>> {
    items.iter().map(|i| item_element(lt, i)).collect()
}

struct Merger<'a> {
    schema: &'a dyn MergeSchema,
    spath: Vec<String>,
}

impl Merger<'_> {
    fn sp(&self) -> Vec<&str> {
        self.spath.iter().map(|s| s.as_str()).collect()
    }

    fn value(&mut self, lhs: Option<&Value>, rhs: Option<&Value>) -> Option<Value> {
        let (l, r) = match (lhs, rhs) {
            (None, None) => return None,
            (Some(l), None) => return Some(l.clone()),
            (None, Some(r)) => return Some(r.clone()),
            (Some(l), Some(r)) => (l, r),
        };
        Some(match (l, r) {
            (Value::Object(lm), Value::Object(rm)) => {
                if (lm.is_empty() && rm.is_empty())
                    || self.schema.map_at(&self.sp()) == MapType::Atomic
                {
                    return Some(r.clone());
                }
                Value::Object(self.map(lm, rm))
            }
            (Value::Array(la), Value::Array(ra)) => {
                let lt = self.schema.list_at(&self.sp());
                if (la.is_empty() && ra.is_empty()) || lt == ListType::Atomic {
                    return Some(r.clone());
                }
                match self.list(&lt, la, ra) {
                    Some(out) => Value::Array(out),
                    None => r.clone(),
                }
            }
            // A null applied over a granular map or list merges nothing into it.
            (Value::Object(lm), Value::Null)
                if !lm.is_empty() && self.schema.map_at(&self.sp()) == MapType::Granular =>
            {
                l.clone()
            }
            (Value::Array(la), Value::Null)
                if !la.is_empty() && self.schema.list_at(&self.sp()) != ListType::Atomic =>
            {
                l.clone()
            }
            _ => r.clone(),
        })
    }

    fn map(&mut self, lm: &Map<String, Value>, rm: &Map<String, Value>) -> Map<String, Value> {
        let mut out = lm.clone();
        for (k, rv) in rm {
            self.spath.push(k.clone());
            if let Some(v) = self.value(lm.get(k), Some(rv)) {
                out.insert(k.clone(), v);
            }
            self.spath.pop();
        }
        out
    }

    /// structured-merge-diff's list merge: items keep the live order, applied items that are
    /// also live come in the applied order, new applied items follow their predecessors.
    fn list(&mut self, lt: &ListType, la: &[Value], ra: &[Value]) -> Option<Vec<Value>> {
        let lpes = elements(lt, la)?;
        let mut rpes = elements(lt, ra)?;
        let mut lvals: HashMap<&str, &Value> = HashMap::new();
        for (pe, v) in lpes.iter().zip(la) {
            lvals.entry(pe.as_str()).or_insert(v);
        }
        let mut rvals: HashMap<String, &Value> = HashMap::new();
        let mut kept = Vec::new();
        for (pe, v) in rpes.iter().zip(ra) {
            // A duplicate applied key: the first item counts.
            if !rvals.contains_key(pe) {
                rvals.insert(pe.clone(), v);
                kept.push(pe.clone());
            }
        }
        rpes = kept;
        let mut shared: VecDeque<&String> = rpes
            .iter()
            .filter(|p| lvals.contains_key(p.as_str()))
            .collect();
        let mut next_shared = shared.pop_front();
        let mut merged_rhs: HashSet<&str> = HashSet::new();
        let mut out = Vec::with_capacity(la.len().max(ra.len()));
        self.spath.push("[]".into());
        let (ll, rl) = (lpes.len(), rpes.len());
        let (mut li, mut ri) = (0, 0);
        while li < ll || ri < rl {
            if li < ll && ri < rl {
                let pe = &lpes[li];
                if *pe == rpes[ri] {
                    merged_rhs.insert(pe.as_str());
                    out.extend(self.value(lvals.get(pe.as_str()).copied(), Some(rvals[pe])));
                    li += 1;
                    ri += 1;
                    next_shared = shared.pop_front();
                    continue;
                }
                if rvals.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                    li += 1;
                    continue;
                }
            }
            if li < ll {
                let pe = &lpes[li];
                if !rvals.contains_key(pe) {
                    out.push(la[li].clone());
                    li += 1;
                    continue;
                } else if merged_rhs.contains(pe.as_str()) {
                    li += 1;
                }
            }
            if ri < rl {
                let pe = &rpes[ri];
                merged_rhs.insert(pe.as_str());
                out.extend(self.value(lvals.get(pe.as_str()).copied(), Some(rvals[pe])));
                ri += 1;
                if next_shared == Some(pe) {
                    next_shared = shared.pop_front();
                }
            }
        }
        self.spath.pop();
        Some(out)
    }
}

/// Merges the applied configuration `config` into `live` (structured-merge-diff's
/// `TypedValue.Merge`): scalars and atomic lists and maps are replaced, granular maps merge by
/// key, set and keyed lists by item.
pub(crate) fn merge(
    schema: &dyn MergeSchema,
    live: &Map<String, Value>,
    config: &Map<String, Value>,
) -> Map<String, Value> {
    let mut m = Merger {
        schema,
        spath: Vec::new(),
    };
    m.map(live, config)
}

struct SetWalker<'a> {
    schema: &'a dyn MergeSchema,
    path: FieldPath,
    out: FieldSet,
}

impl SetWalker<'_> {
    fn value(&mut self, v: &Value) {
        let spath = schema_path(&self.path);
        match v {
            Value::Object(m) => {
                if self.schema.map_at(&spath) == MapType::Atomic {
                    return self.out.insert(self.path.clone());
                }
                let named: Vec<bool> = m.keys().map(|k| self.schema.is_field(&spath, k)).collect();
                for ((k, child), named) in m.iter().zip(named) {
                    self.path.push(format!("f:{k}"));
                    self.value(child);
                    let empty_map = child.as_object().is_some_and(|c| c.is_empty());
                    if child.is_null() || empty_map || !named {
                        self.out.insert(self.path.clone());
                    }
                    self.path.pop();
                }
            }
            Value::Array(items) => {
                let lt = self.schema.list_at(&spath);
                let Some(pes) = elements(&lt, items).filter(|_| lt != ListType::Atomic) else {
                    return self.out.insert(self.path.clone());
                };
                let mut seen: HashMap<&str, usize> = HashMap::new();
                for pe in &pes {
                    *seen.entry(pe.as_str()).or_default() += 1;
                }
                let mut done: HashSet<&str> = HashSet::new();
                for (pe, item) in pes.iter().zip(items) {
                    if !done.insert(pe.as_str()) {
                        continue;
                    }
                    self.path.push(pe.clone());
                    // Duplicated items are owned as one leaf, not descended into.
                    if seen[pe.as_str()] == 1 {
                        self.value(item);
                    }
                    self.out.insert(self.path.clone());
                    self.path.pop();
                }
            }
            _ => self.out.insert(self.path.clone()),
        }
    }
}

/// The fields an object (an applied configuration) sets (structured-merge-diff's
/// `ToFieldSet`): leaves, list items, and maps that are empty, null or keys of a map rather
/// than named fields of a struct.
pub(crate) fn to_field_set(schema: &dyn MergeSchema, obj: &Map<String, Value>) -> FieldSet {
    let mut w = SetWalker {
        schema,
        path: Vec::new(),
        out: FieldSet::new(),
    };
    w.value(&Value::Object(obj.clone()));
    w.out
}

/// `set` with every named struct field on its paths made a member
/// (`EnsureNamedFieldsAreMembers`): `.spec.a.b` also owns `.spec` and `.spec.a` when they are
/// struct fields, not when they are map keys.
pub(crate) fn ensure_named(schema: &dyn MergeSchema, set: &FieldSet) -> FieldSet {
    let mut out = set.clone();
    for p in set.iter() {
        for i in 1..p.len() {
            if let Some(name) = p[i - 1].strip_prefix("f:")
                && schema.is_field(&schema_path(&p[..i - 1]), name)
            {
                out.insert(p[..i].to_vec());
            }
        }
    }
    out
}

struct Remover<'a> {
    schema: &'a dyn MergeSchema,
    spath: Vec<String>,
    /// Drop a map or list left empty instead of leaving it null (the final object: Go's typed
    /// objects omit what structured-merge-diff leaves null); its parent stays, as it would
    /// hold the null.
    drop_empty: bool,
}

impl Remover<'_> {
    /// `v` without the paths of `set` (relative to `v`); `None` when nothing is left (Go's nil,
    /// stored as null by a parent).
    fn value(&mut self, v: &Value, set: &FieldSet) -> Option<Value> {
        let sp: Vec<&str> = self.spath.iter().map(|s| s.as_str()).collect();
        match v {
            Value::Object(m) => {
                if m.is_empty() || self.schema.map_at(&sp) == MapType::Atomic {
                    return None;
                }
                let mut out = Map::new();
                // Whether a child was left null and dropped: the map itself stays.
                let mut dropped = false;
                for (k, child) in m {
                    let pe = format!("f:{k}");
                    if set.contains(std::slice::from_ref(&pe)) {
                        continue;
                    }
                    let sub = set.with_prefix(&pe);
                    if sub.is_empty() {
                        out.insert(k.clone(), child.clone());
                    } else {
                        self.spath.push(k.clone());
                        let kept = self.value(child, &sub);
                        self.spath.pop();
                        match kept {
                            Some(v) => out.insert(k.clone(), v),
                            None if self.drop_empty => {
                                dropped = true;
                                None
                            }
                            None => out.insert(k.clone(), Value::Null),
                        };
                    }
                }
                (!out.is_empty() || dropped).then_some(Value::Object(out))
            }
            Value::Array(items) => {
                let lt = self.schema.list_at(&sp);
                let pes = elements(&lt, items).filter(|_| lt != ListType::Atomic)?;
                let mut out = Vec::new();
                let mut dropped = false;
                for (pe, item) in pes.iter().zip(items) {
                    if set.contains(std::slice::from_ref(pe)) {
                        continue;
                    }
                    let sub = set.with_prefix(pe);
                    if sub.is_empty() {
                        out.push(item.clone());
                    } else {
                        self.spath.push("[]".into());
                        let kept = self.value(item, &sub);
                        self.spath.pop();
                        match kept {
                            Some(v) => out.push(v),
                            None if self.drop_empty => dropped = true,
                            None => out.push(Value::Null),
                        }
                    }
                }
                (!out.is_empty() || dropped).then_some(Value::Array(out))
            }
            other => Some(other.clone()),
        }
    }
}

/// `obj` without the paths of `set` (structured-merge-diff's `RemoveItems`): a path removes
/// its whole subtree; a map or list left empty becomes null, or is dropped with `drop_empty`.
pub(crate) fn remove_items(
    schema: &dyn MergeSchema,
    obj: &Map<String, Value>,
    set: &FieldSet,
    drop_empty: bool,
) -> Map<String, Value> {
    let mut r = Remover {
        schema,
        spath: Vec::new(),
        drop_empty,
    };
    match r.value(&Value::Object(obj.clone()), set) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// Removes from `merged` what the applier applied last time (`last`) and no longer applies,
/// unless another manager (or the applier's new configuration, in `managed`) owns it
/// (structured-merge-diff's `Updater.prune` with `addBackOwnedItems` and
/// `addBackDanglingItems`).
pub(crate) fn prune(
    schema: &dyn MergeSchema,
    merged: &Map<String, Value>,
    managed: &FieldSet,
    last: &FieldSet,
) -> Map<String, Value> {
    if last.is_empty() {
        return merged.clone();
    }
    let named = |s: &FieldSet| ensure_named(schema, s);
    let fields = |o: &Map<String, Value>| named(&to_field_set(schema, o));
    let last = named(last);
    let pruned = remove_items(schema, merged, &last, false);
    let merged_set = fields(merged);
    let keep = fields(&pruned).union(&named(managed));
    let pruned = remove_items(schema, merged, &merged_set.difference(&keep), false);
    let gone = merged_set.difference(&fields(&pruned)).intersection(&last);
    remove_items(schema, merged, &gone, true)
}
