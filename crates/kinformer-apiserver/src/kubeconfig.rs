//! Kubeconfig files pointing at the embedded server.

use base64::Engine;

/// The kubeconfig for `server`; with `tls` = (CA PEM, token), the CA as
/// `certificate-authority-data` and the token as the user's bearer token.
pub(crate) fn yaml(server: &str, tls: Option<&(String, String)>) -> String {
    let (ca, user) = match tls {
        Some((ca_pem, token)) => (
            format!(
                "    certificate-authority-data: {}\n",
                base64::engine::general_purpose::STANDARD.encode(ca_pem)
            ),
            format!("\n    token: {token}"),
        ),
        None => (String::new(), " {}".to_string()),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kinformer\n  cluster:\n    server: {server}\n{ca}contexts:\n- name: kinformer\n  context:\n    cluster: kinformer\n    user: kinformer\n    namespace: default\ncurrent-context: kinformer\nusers:\n- name: kinformer\n  user:{user}\npreferences: {{}}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_kubeconfig_carries_the_ca_and_token() {
        let y = yaml(
            "https://127.0.0.1:1",
            Some(&("PEM".to_string(), "tok".to_string())),
        );
        let kc = kube::config::Kubeconfig::from_yaml(&y).unwrap();
        let cluster = kc.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("https://127.0.0.1:1"));
        assert_eq!(cluster.certificate_authority_data.as_deref(), Some("UEVN"));
        let user = kc.auth_infos[0].auth_info.as_ref().unwrap();
        assert!(user.token.is_some());
        let plain = kube::config::Kubeconfig::from_yaml(&yaml("http://x", None)).unwrap();
        assert!(
            plain.auth_infos[0]
                .auth_info
                .as_ref()
                .unwrap()
                .token
                .is_none()
        );
    }
}
