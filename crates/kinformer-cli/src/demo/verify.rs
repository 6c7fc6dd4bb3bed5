//! Convergence checks: a cache or a handler's view against the server's exact state.

use kinformer::object::namespace_name_key;
use kinformer_apiserver::RunningServer;

use super::view::KeyRvs;

/// The server's exact state of `resource` as key → resourceVersion.
pub fn truth(server: &RunningServer, resource: &str) -> KeyRvs {
    server
        .state(resource, None)
        .map(|s| {
            s.objects
                .into_iter()
                .map(|o| {
                    (
                        namespace_name_key(&o.namespace, &o.name),
                        o.resource_version,
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// How `actual` differs from `expected` (None when equal): missing keys, extra keys and
/// resourceVersion mismatches, the first few of each.
pub fn diff(what: &str, expected: &KeyRvs, actual: &KeyRvs) -> Option<String> {
    if expected == actual {
        return None;
    }
    let missing: Vec<&String> = expected
        .keys()
        .filter(|k| !actual.contains_key(*k))
        .collect();
    let extra: Vec<&String> = actual
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .collect();
    let stale: Vec<String> = expected
        .iter()
        .filter_map(|(k, rv)| match actual.get(k) {
            Some(a) if a != rv => Some(format!("{k} (has rv {a}, server {rv})")),
            _ => None,
        })
        .collect();
    Some(format!(
        "{what}: {} objects vs server {}; missing {} {:?}; extra {} {:?}; stale {} {:?}",
        actual.len(),
        expected.len(),
        missing.len(),
        missing.iter().take(3).collect::<Vec<_>>(),
        extra.len(),
        extra.iter().take(3).collect::<Vec<_>>(),
        stale.len(),
        stale.iter().take(3).collect::<Vec<_>>(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(&str, &str)]) -> KeyRvs {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn equal_maps_have_no_diff() {
        let a = m(&[("ns/a", "1"), ("ns/b", "2")]);
        assert_eq!(diff("x", &a, &a.clone()), None);
    }

    #[test]
    fn diff_names_missing_extra_and_stale_keys() {
        let expected = m(&[("ns/a", "1"), ("ns/b", "2")]);
        let actual = m(&[("ns/b", "1"), ("ns/c", "3")]);
        let d = diff("pods", &expected, &actual).expect("maps differ");
        assert!(d.contains("missing 1 [\"ns/a\"]"), "{d}");
        assert!(d.contains("extra 1 [\"ns/c\"]"), "{d}");
        assert!(d.contains("ns/b (has rv 1, server 2)"), "{d}");
    }
}
