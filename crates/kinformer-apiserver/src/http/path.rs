//! Parsing Kubernetes REST paths.

use std::sync::Arc;

use crate::api::Registry;
use crate::resource::ResourceInfo;

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target {
    /// `/`: the paths the server serves.
    Root,
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`.
    GroupVersion(String, String),
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz`.
    Health,
    /// A resource collection, object or subresource.
    Resource {
        /// The resource.
        resource: Arc<ResourceInfo>,
        /// Namespace in the path (`None` for cluster-scoped or all-namespaces paths).
        namespace: Option<String>,
        /// Object name.
        name: Option<String>,
        /// Subresource (`status`).
        subresource: Option<String>,
    },
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3` (`None`) or `/openapi/v3/{gv}` (`Some(gv)`).
    OpenApiV3(Option<String>),
    /// Nothing known under a group the server builds in (the core group, `apps`, ...): a 404
    /// `Status`.
    NotFound,
    /// A path no handler takes: outside the API, an unknown group, or a group served only by
    /// custom resources (an unknown version or resource in it). kube-apiserver answers these
    /// from its mux's fallback with `404 page not found` in plain text, not a `Status`.
    NoRoute,
}

fn valid_segment(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains('%')
}

/// Resolves a path against the registry.
pub(crate) fn parse_path(registry: &Registry, path: &str) -> Target {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        [""] => return Target::Root,
        ["version"] => return Target::Version,
        ["healthz" | "livez" | "readyz", ..] => return Target::Health,
        ["api"] => return Target::CoreVersions,
        ["openapi", "v2"] => return Target::OpenApiV2,
        ["openapi", "v3"] => return Target::OpenApiV3(None),
        ["openapi", "v3", gv @ ..] => return Target::OpenApiV3(Some(gv.join("/"))),
        ["apis"] => return Target::Groups,
        ["apis", g] => {
            return if registry.all().iter().any(|r| r.group == *g) {
                Target::Group(g.to_string())
            } else {
                Target::NoRoute
            };
        }
        ["api", v, rest @ ..] => ("", *v, rest),
        // an empty group is no group kube-apiserver serves (the core group is under /api)
        ["apis", "", ..] => return Target::NoRoute,
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Target::NoRoute,
    };
    // what kube-apiserver answers for an unknown version or resource of this group (looked up
    // only then, not on every request)
    let not_found = || {
        if group.is_empty() || registry.has_builtin_group(group) {
            Target::NotFound
        } else {
            Target::NoRoute
        }
    };
    if !registry.has_group_version(group, version) {
        return not_found();
    }
    if rest.is_empty() {
        return Target::GroupVersion(group.to_string(), version.to_string());
    }
    if rest.iter().any(|s| !valid_segment(s)) {
        return Target::NotFound;
    }
    let resource_target = |res: Arc<ResourceInfo>, ns: Option<&str>, tail: &[&str]| {
        let (name, sub) = match tail {
            [] => (None, None),
            [n] => (Some(n.to_string()), None),
            [n, s] => (Some(n.to_string()), Some(s.to_string())),
            // kube-apiserver's handler of custom resources reads the subresource from the
            // path's third part and ignores the rest; built-in kinds' routes are exact
            [n, s, ..] if res.crd_name.is_some() => (Some(n.to_string()), Some(s.to_string())),
            _ => return Target::NotFound,
        };
        Target::Resource {
            resource: res,
            namespace: ns.map(|s| s.to_string()),
            name,
            subresource: sub,
        }
    };
    if let ["namespaces", ns, plural, tail @ ..] = rest
        && let Some(res) = registry.find(group, version, plural)
        && res.namespaced()
    {
        return resource_target(res, Some(ns), tail);
    }
    let [plural, tail @ ..] = rest else {
        return Target::NotFound;
    };
    match registry.find(group, version, plural) {
        // A namespaced resource by name needs its namespace in the path.
        Some(res) if res.namespaced() && !tail.is_empty() => not_found(),
        Some(res) => resource_target(res, None, tail),
        None => not_found(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Parts = (String, Option<String>, Option<String>, Option<String>);

    fn parts(t: Target) -> Option<Parts> {
        match t {
            Target::Resource {
                resource,
                namespace,
                name,
                subresource,
            } => Some((resource.plural.clone(), namespace, name, subresource)),
            _ => None,
        }
    }

    #[test]
    fn resolves_paths() {
        let r = Registry::new();
        let s = |x: &str| Some(x.to_string());
        assert_eq!(
            parts(parse_path(&r, "/api/v1/pods")),
            Some(("pods".into(), None, None, None))
        );
        assert_eq!(
            parts(parse_path(&r, "/api/v1/namespaces/a/pods")),
            Some(("pods".into(), s("a"), None, None))
        );
        assert_eq!(
            parts(parse_path(&r, "/api/v1/namespaces/a/pods/p/status")),
            Some(("pods".into(), s("a"), s("p"), s("status")))
        );
        assert_eq!(
            parts(parse_path(&r, "/api/v1/namespaces/a")),
            Some(("namespaces".into(), None, s("a"), None))
        );
        assert_eq!(
            parts(parse_path(&r, "/api/v1/namespaces/a/status")),
            Some(("namespaces".into(), None, s("a"), s("status")))
        );
        assert_eq!(
            parts(parse_path(&r, "/api/v1/nodes/n1")),
            Some(("nodes".into(), None, s("n1"), None))
        );
        assert_eq!(
            parts(parse_path(&r, "/apis/apps/v1/namespaces/d/deployments/x")),
            Some(("deployments".into(), s("d"), s("x"), None))
        );
        assert_eq!(parse_path(&r, "/api/v1/pods/p"), Target::NotFound);
        assert_eq!(parse_path(&r, "/api/v1/widgets"), Target::NotFound);
        assert_eq!(parse_path(&r, "/api/v2/pods"), Target::NotFound);
        assert_eq!(
            parse_path(&r, "/api/v1/namespaces/a/pods/p/status/x"),
            Target::NotFound
        );
        assert_eq!(
            parse_path(&r, "/api/v1/namespaces/../pods"),
            Target::NotFound
        );
        assert_eq!(parse_path(&r, "/apis/apps"), Target::Group("apps".into()));
        assert_eq!(
            parse_path(&r, "/api/v1"),
            Target::GroupVersion("".into(), "v1".into())
        );
        assert_eq!(parse_path(&r, "/"), Target::Root);
        assert_eq!(parse_path(&r, "/foo"), Target::NoRoute);
        assert_eq!(parse_path(&r, "/apis/nope.example.com"), Target::NoRoute);
        assert_eq!(parse_path(&r, "/apis//v1/pods"), Target::NoRoute);
        assert_eq!(parse_path(&r, "/apis//x//deployments"), Target::NoRoute);
        assert_eq!(
            parse_path(&r, "/apis/nope.example.com/v1/foos"),
            Target::NoRoute
        );
        assert_eq!(
            parse_path(&r, "/apis/apps/v2/deployments"),
            Target::NotFound
        );
        assert_eq!(parse_path(&r, "/apis/apps/v1/foos"), Target::NotFound);
    }
}
