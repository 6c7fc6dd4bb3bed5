//! The Kubernetes version the server plays: the one the application selected with its
//! k8s-openapi version feature (exactly one per build). The served kinds, discovery,
//! `/version` and the OpenAPI document follow it.

// The minor version (`1.<MINOR>`) of the k8s-openapi build: exactly one of these expands.
k8s_openapi::k8s_if_1_33! { pub(crate) const MINOR: u32 = 33; }
k8s_openapi::k8s_if_1_34! { pub(crate) const MINOR: u32 = 34; }
k8s_openapi::k8s_if_1_35! { pub(crate) const MINOR: u32 = 35; }
k8s_openapi::k8s_if_1_36! { pub(crate) const MINOR: u32 = 36; }
k8s_openapi::k8s_if_1_37! { pub(crate) const MINOR: u32 = 37; }

/// `v1.<MINOR>.0`: the version the server reports (`/version`, OpenAPI, seeded nodes).
pub(crate) fn git_version() -> String {
    format!("v1.{MINOR}.0")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_minor_is_the_k8s_openapi_feature() {
        // the tests build with v1_35 (the e2e tier's kube-apiserver)
        assert_eq!(super::MINOR, 35);
        assert_eq!(super::git_version(), "v1.35.0");
    }
}
