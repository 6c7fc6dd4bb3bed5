//! The Kubernetes version the server plays: the one the application selected with its
//! k8s-openapi version feature (exactly one per build), which also chose kinformer-proto's
//! schema table. The served kinds (`resource.rs`), `/version`, the OpenAPI document and
//! seeded nodes follow it.

/// The minor version (`36` of `1.36`).
pub(crate) fn minor() -> &'static str {
    let version = kinformer_proto::kubernetes_version();
    version.strip_prefix("1.").unwrap_or(version)
}

/// `v1.<minor>.0`: the version the server reports (`/version`, OpenAPI, seeded nodes).
pub(crate) fn git_version() -> String {
    format!("v1.{}.0", minor())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_version_is_the_k8s_openapi_feature() {
        // the tests build with v1_36 (the e2e tier's kube-apiserver)
        assert_eq!(super::minor(), "36");
        assert_eq!(super::git_version(), "v1.36.0");
    }
}
