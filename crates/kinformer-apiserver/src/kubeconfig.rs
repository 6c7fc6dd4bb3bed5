//! Kubeconfig files pointing at the embedded server.

/// A kubeconfig (YAML) with one cluster, user and context named `kinformer`, namespace
/// `default`, no authentication.
///
/// ```
/// let yaml = kinformer_apiserver::kubeconfig::kubeconfig_yaml("http://127.0.0.1:8080");
/// assert!(yaml.contains("server: http://127.0.0.1:8080"));
/// ```
pub fn kubeconfig_yaml(server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kinformer\n  cluster:\n    server: {server}\ncontexts:\n- name: kinformer\n  context:\n    cluster: kinformer\n    user: kinformer\n    namespace: default\ncurrent-context: kinformer\nusers:\n- name: kinformer\n  user: {{}}\npreferences: {{}}\n"
    )
}
