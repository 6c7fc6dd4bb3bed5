//! Resolving the resource a user names (`pods`, `po`, `pod`, `apps/v1/deployments`) and
//! suggesting the closest known names when nothing matches.

use crate::error::CliError;

/// The typed resources `kinformer watch` knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// core/v1 pods.
    Pods,
    /// core/v1 nodes.
    Nodes,
    /// core/v1 configmaps.
    ConfigMaps,
    /// core/v1 secrets.
    Secrets,
    /// core/v1 services.
    Services,
    /// core/v1 namespaces.
    Namespaces,
    /// core/v1 events.
    Events,
    /// apps/v1 deployments.
    Deployments,
}

/// Every known resource with its names: plural first, then singular and short names.
pub const TABLE: &[(Known, &[&str])] = &[
    (Known::Pods, &["pods", "pod", "po"]),
    (Known::Nodes, &["nodes", "node", "no"]),
    (Known::ConfigMaps, &["configmaps", "configmap", "cm"]),
    (Known::Secrets, &["secrets", "secret"]),
    (Known::Services, &["services", "service", "svc"]),
    (Known::Namespaces, &["namespaces", "namespace", "ns"]),
    (Known::Events, &["events", "event", "ev"]),
    (Known::Deployments, &["deployments", "deployment", "deploy"]),
];

/// What a user's resource argument means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// A typed resource.
    Known(Known),
    /// `group/version/plural` (core group: `v1/plural` or `/v1/plural`), served via
    /// `DynamicObject` after discovery.
    Dynamic {
        /// API group (empty for core).
        group: String,
        /// Version.
        version: String,
        /// Plural resource name.
        plural: String,
    },
}

/// Resolves a resource argument (case-insensitive for known names).
///
/// # Errors
/// [`CliError::UnknownResource`] with the closest known names.
pub fn resolve(arg: &str) -> Result<Resolved, CliError> {
    let lower = arg.trim().to_ascii_lowercase();
    if let Some((k, _)) = TABLE
        .iter()
        .find(|(_, names)| names.contains(&lower.as_str()))
    {
        return Ok(Resolved::Known(*k));
    }
    let parts: Vec<&str> = arg.trim().split('/').collect();
    match parts.as_slice() {
        [group, version, plural] if !version.is_empty() && !plural.is_empty() => {
            Ok(Resolved::Dynamic {
                group: (*group).to_string(),
                version: (*version).to_string(),
                plural: (*plural).to_string(),
            })
        }
        [version, plural] if version.starts_with('v') && !plural.is_empty() => {
            Ok(Resolved::Dynamic {
                group: String::new(),
                version: (*version).to_string(),
                plural: (*plural).to_string(),
            })
        }
        _ => Err(CliError::UnknownResource {
            name: arg.to_string(),
            suggestions: suggest(&lower),
        }),
    }
}

/// The known names closest to `name` by edit distance (at most three, best first; ties in
/// table order).
pub fn suggest(name: &str) -> Vec<String> {
    let mut scored: Vec<(usize, usize, &str)> = TABLE
        .iter()
        .flat_map(|(_, names)| names.iter())
        .enumerate()
        .map(|(i, n)| (edit_distance(name, n), i, *n))
        .collect();
    scored.sort();
    let mut out: Vec<String> = Vec::new();
    for (_, _, n) in scored {
        if out.len() == 3 {
            break;
        }
        if !out.iter().any(|o| o == n) {
            out.push(n.to_string());
        }
    }
    out
}

/// Levenshtein distance (insertions, deletions, substitutions; by chars).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plural_singular_and_short_names_resolve() {
        assert_eq!(resolve("pods").unwrap(), Resolved::Known(Known::Pods));
        assert_eq!(resolve("Pod").unwrap(), Resolved::Known(Known::Pods));
        assert_eq!(resolve("po").unwrap(), Resolved::Known(Known::Pods));
        assert_eq!(resolve("cm").unwrap(), Resolved::Known(Known::ConfigMaps));
        assert_eq!(
            resolve("deploy").unwrap(),
            Resolved::Known(Known::Deployments)
        );
        assert_eq!(resolve("ns").unwrap(), Resolved::Known(Known::Namespaces));
    }

    #[test]
    fn group_version_plural_is_dynamic() {
        assert_eq!(
            resolve("example.com/v1/widgets").unwrap(),
            Resolved::Dynamic {
                group: "example.com".into(),
                version: "v1".into(),
                plural: "widgets".into()
            }
        );
        assert_eq!(
            resolve("v1/endpoints").unwrap(),
            Resolved::Dynamic {
                group: String::new(),
                version: "v1".into(),
                plural: "endpoints".into()
            }
        );
    }

    #[test]
    fn unknown_names_suggest_the_closest() {
        let Err(CliError::UnknownResource { suggestions, .. }) = resolve("podz") else {
            panic!("podz must not resolve");
        };
        assert_eq!(suggestions[0], "pods");
        let Err(CliError::UnknownResource { suggestions, .. }) = resolve("deploymnts") else {
            panic!("deploymnts must not resolve");
        };
        assert_eq!(suggestions[0], "deployments");
    }

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("pods", "pods"), 0);
        assert_eq!(edit_distance("pod", "pods"), 1);
        assert_eq!(edit_distance("podz", "pods"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
