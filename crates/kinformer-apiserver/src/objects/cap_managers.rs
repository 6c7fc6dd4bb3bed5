//! kube-apiserver's cap on Update managers (`capmanagers.go`): past ten Update entries, the
//! oldest are merged, per apiVersion, into an `ancient-changes` entry (which takes the merged
//! entry's time) until ten are left. Apply entries are never merged.

use std::collections::HashMap;

use super::managed_entries::Entry;

/// kube-apiserver's `DefaultMaxUpdateManagers`.
pub(crate) const MAX_UPDATE_MANAGERS: usize = 10;

/// The manager the oldest Update entries are merged into.
const BUCKET: &str = "ancient-changes";

/// Merges the oldest Update entries of `entries` as kube-apiserver does.
pub(crate) fn cap_update_managers(entries: &mut Vec<Entry>) {
    let mut updaters: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].operation != "Apply")
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by(|&a, &b| {
        let key = |e: &Entry| (e.time.clone().unwrap_or_default(), e.identifier());
        key(&entries[a]).cmp(&key(&entries[b]))
    });
    let mut first_of_version: HashMap<String, usize> = HashMap::new();
    let mut removed = vec![false; entries.len()];
    let mut length = updaters.len();
    for &i in &updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let version = entries[i].api_version.clone();
        let Some(&first) = first_of_version.get(&version) else {
            first_of_version.insert(version, i);
            continue;
        };
        let bucket = (0..entries.len()).find(|&b| {
            !removed[b]
                && entries[b].manager == BUCKET
                && entries[b].operation == "Update"
                && entries[b].api_version == version
                && entries[b].subresource.is_empty()
        });
        let bucket = bucket.unwrap_or_else(|| {
            entries[first].manager = BUCKET.into();
            entries[first].subresource.clear();
            first
        });
        entries[bucket].set = entries[i].set.union(&entries[bucket].set);
        entries[bucket].time = entries[i].time.clone();
        removed[i] = true;
        length -= 1;
    }
    let mut i = 0;
    entries.retain(|_| {
        i += 1;
        !removed[i - 1]
    });
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use crate::objects::managed_fields::{Writer, update_managed_fields};
    use crate::objects::test_util::res;

    #[test]
    fn the_oldest_update_managers_merge_into_ancient_changes() {
        let r = res("configmaps");
        let mut obj: Option<Map<String, Value>> = None;
        for i in 0..11 {
            let mut new = obj.clone().unwrap_or_else(|| {
                json!({"metadata": {"name": "c"}, "data": {}})
                    .as_object()
                    .unwrap()
                    .clone()
            });
            new["data"][format!("k{i}")] = json!("v");
            let w = Writer {
                manager: format!("m{i:02}"),
                subresource: None,
            };
            update_managed_fields(&r, obj.as_ref(), &mut new, &w);
            // Distinct times, oldest first.
            for e in new["metadata"]["managedFields"].as_array_mut().unwrap() {
                if e["manager"] == w.manager.as_str() {
                    e["time"] = json!(format!("2000-01-01T00:00:{i:02}Z"));
                }
            }
            obj = Some(new);
        }
        let entries = obj.unwrap()["metadata"]["managedFields"].clone();
        let entries = entries.as_array().unwrap();
        assert_eq!(entries.len(), 10);
        let bucket = entries
            .iter()
            .find(|e| e["manager"] == "ancient-changes")
            .unwrap();
        assert_eq!(bucket["operation"], "Update");
        assert_eq!(bucket["time"], "2000-01-01T00:00:01Z");
        assert_eq!(
            bucket["fieldsV1"],
            json!({"f:data": {".": {}, "f:k0": {}, "f:k1": {}}})
        );
        assert!(
            !entries
                .iter()
                .any(|e| e["manager"] == "m00" || e["manager"] == "m01")
        );
    }
}
