//! Telling apart informers that share a name (`Pod` typed and dynamic, `Event` in `v1` and in
//! `events.k8s.io/v1`), the one way everywhere names key a map or a series: the factory's
//! [`wait_for_cache_sync`](crate::SharedInformerFactory::wait_for_cache_sync) and the metrics'
//! `name` label.

use std::collections::HashMap;

/// What tells apart informers that share a name: the API version of the objects (`v1`,
/// `apps/v1`) and, for a dynamic informer, `dynamic`.
pub(crate) fn qualifier(api_version: Option<String>, dynamic: bool) -> String {
    match (api_version, dynamic) {
        (Some(v), true) => format!("{v}, dynamic"),
        (Some(v), false) => v,
        (None, true) => "dynamic".to_owned(),
        (None, false) => String::new(),
    }
}

/// One distinct name per `(name, qualifier)`, in order: a name only one entry has is kept;
/// entries that share a name get their qualifier (`Event (events.k8s.io/v1)`), and entries
/// still alike after that a number from the second on (`Event (v1) #2`).
pub(crate) fn distinct_names(entries: &[(String, String)]) -> Vec<String> {
    let mut sharing: HashMap<&str, usize> = HashMap::new();
    for (name, _) in entries {
        *sharing.entry(name).or_default() += 1;
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    entries
        .iter()
        .map(|(name, qualifier)| {
            let name = if sharing[name.as_str()] < 2 || qualifier.is_empty() {
                name.clone()
            } else {
                format!("{name} ({qualifier})")
            };
            let n = seen.entry(name.clone()).or_default();
            *n += 1;
            if *n == 1 {
                name
            } else {
                format!("{name} #{n}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(name: &str, qualifier: &str) -> (String, String) {
        (name.to_owned(), qualifier.to_owned())
    }

    #[test]
    fn names_only_one_informer_has_are_kept() {
        let names = distinct_names(&[
            e("Pod", "v1"),
            e("Pod (metadata)", "v1"),
            e("ConfigMap", "v1"),
        ]);
        assert_eq!(names, ["Pod", "Pod (metadata)", "ConfigMap"]);
    }

    #[test]
    fn a_shared_name_gets_the_api_version_and_whether_it_is_dynamic() {
        let names = distinct_names(&[
            e("Event", "v1"),
            e("Event", "events.k8s.io/v1"),
            e("ConfigMap", "v1"),
            e("ConfigMap", "v1, dynamic"),
        ]);
        assert_eq!(
            names,
            [
                "Event (v1)",
                "Event (events.k8s.io/v1)",
                "ConfigMap (v1)",
                "ConfigMap (v1, dynamic)"
            ]
        );
    }

    #[test]
    fn entries_still_alike_are_numbered_from_the_second_on() {
        let names = distinct_names(&[e("Foo", ""), e("Foo", ""), e("Foo", "x/v1"), e("Bar", "")]);
        assert_eq!(names, ["Foo", "Foo #2", "Foo (x/v1)", "Bar"]);
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn the_qualifier_names_the_api_version_and_dynamic_informers() {
        assert_eq!(qualifier(Some("apps/v1".into()), false), "apps/v1");
        assert_eq!(qualifier(Some("apps/v1".into()), true), "apps/v1, dynamic");
        assert_eq!(qualifier(None, true), "dynamic");
        assert_eq!(qualifier(None, false), "");
    }
}
