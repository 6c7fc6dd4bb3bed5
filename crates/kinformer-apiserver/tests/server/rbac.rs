//! RBAC as a controller author tests their operator's permissions: a kube-rs client that
//! impersonates the operator's ServiceAccount (kube's `AuthInfo::impersonate`, kubectl's
//! `--as`) is refused what its Role does not grant, in kube-apiserver's words, and allowed once
//! a binding grants it; the bootstrap `view`/`edit`/`admin` roles are aggregated, a ClusterRole
//! labelled to aggregate extends them; access reviews answer from the same rules; and
//! `ServerConfig::rbac(false)` turns all of it off.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use kinformer_apiserver::{RunningServer, ServerConfig, start};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

use crate::common;

/// A client of `s` acting as `user` (in `groups`), through impersonation.
async fn client_as(s: &RunningServer, user: &str, groups: &[&str]) -> kube::Client {
    common::kube_client(s, None, Some(user), groups).await
}

/// The error code and message of a refused call, or 200.
fn outcome<T>(r: Result<T, kube::Error>) -> (u16, String) {
    match r {
        Ok(_) => (200, String::new()),
        Err(kube::Error::Api(e)) => (e.code, e.message),
        Err(e) => panic!("{e}"),
    }
}

fn object<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).unwrap()
}

/// What `client` may do, as `kubectl auth can-i` asks: (allowed, reason).
async fn can_i(client: &kube::Client, ns: &str, verb: &str, resource: &str) -> (bool, String) {
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review: SelfSubjectAccessReview = object(json!({
        "spec": {"resourceAttributes": {"namespace": ns, "verb": verb, "resource": resource}}
    }));
    let answer = reviews
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    let status = answer.status.unwrap();
    (status.allowed, status.reason.unwrap_or_default())
}

#[tokio::test]
async fn an_operators_service_account_gets_what_its_roles_grant() {
    let s = start(ServerConfig::default()).await.unwrap();
    let admin = s.client();
    let operator = client_as(&s, "system:serviceaccount:shop:operator", &[]).await;
    let pods: Api<Pod> = Api::namespaced(operator.clone(), "shop");
    let (code, message) = outcome(pods.list(&ListParams::default()).await);
    assert_eq!(code, 403);
    assert_eq!(
        message,
        r#"pods is forbidden: User "system:serviceaccount:shop:operator" cannot list resource "pods" in API group "" in the namespace "shop""#
    );
    assert!(!can_i(&operator, "shop", "list", "pods").await.0);

    // the operator's manifest: a Role and a RoleBinding to its ServiceAccount
    let role: Role = object(json!({
        "metadata": {"name": "operator"},
        "rules": [{"apiGroups": [""], "resources": ["pods", "configmaps"], "verbs": ["get", "list", "watch"]}],
    }));
    Api::<Role>::namespaced(admin.clone(), "shop")
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: RoleBinding = object(json!({
        "metadata": {"name": "operator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "operator"},
        "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": "shop"}],
    }));
    Api::<RoleBinding>::namespaced(admin.clone(), "shop")
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    assert_eq!(outcome(pods.list(&ListParams::default()).await).0, 200);
    assert_eq!(
        can_i(&operator, "shop", "list", "pods").await,
        (
            true,
            r#"RBAC: allowed by RoleBinding "operator/shop" of Role "operator" to ServiceAccount "operator/shop""#
                .to_string()
        )
    );
    // only in its namespace, only what the Role says
    let elsewhere: Api<Pod> = Api::namespaced(operator.clone(), "other");
    assert_eq!(outcome(elsewhere.list(&ListParams::default()).await).0, 403);
    let cms: Api<ConfigMap> = Api::namespaced(operator.clone(), "shop");
    let (code, message) = outcome(
        cms.create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": "c"}})),
        )
        .await,
    );
    assert_eq!(code, 403);
    assert!(
        message.contains(r#"cannot create resource "configmaps""#),
        "{message}"
    );
    let deployments: Api<Deployment> = Api::namespaced(operator.clone(), "shop");
    let (code, message) = outcome(deployments.list(&ListParams::default()).await);
    assert_eq!(code, 403);
    assert!(message.contains(r#"in API group "apps""#), "{message}");
    // a binding to a role that does not exist says so
    let dangling: RoleBinding = object(json!({
        "metadata": {"name": "dangling"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "missing"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dan"}],
    }));
    Api::<RoleBinding>::namespaced(admin.clone(), "shop")
        .create(&PostParams::default(), &dangling)
        .await
        .unwrap();
    let dan = client_as(&s, "dan", &[]).await;
    let (_, message) = outcome(
        Api::<Pod>::namespaced(dan, "shop")
            .list(&ListParams::default())
            .await,
    );
    assert!(
        message.ends_with(r#": RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found"#),
        "{message}"
    );
    s.shutdown().await;
}

/// A client of a TLS server `s` with a service account's `token` instead of the server's,
/// impersonating `user` when given.
async fn client_with_token(s: &RunningServer, token: &str, user: Option<&str>) -> kube::Client {
    common::kube_client(s, Some(token), user, &[]).await
}

#[tokio::test]
async fn a_service_account_token_is_authorized_as_its_account_and_may_not_impersonate() {
    let s = start(ServerConfig::default().tls(true)).await.unwrap();
    let admin = s.client();
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(admin.clone(), "default");
    sas.create(
        &PostParams::default(),
        &object(json!({"metadata": {"name": "robot"}})),
    )
    .await
    .unwrap();
    let tr: k8s_openapi::api::authentication::v1::TokenRequest =
        object(json!({"spec": {"expirationSeconds": 3600}}));
    let tr = sas
        .create_token_request("robot", &PostParams::default(), &tr)
        .await
        .unwrap();
    let token = serde_json::to_value(&tr).unwrap()["status"]["token"]
        .as_str()
        .unwrap()
        .to_string();
    let robot = client_with_token(&s, &token, None).await;
    // discovery and its own access reviews are every authenticated user's
    assert!(robot.apiserver_version().await.is_ok());
    assert!(!can_i(&robot, "default", "list", "pods").await.0);
    let (code, message) = outcome(
        Api::<Pod>::namespaced(robot, "default")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(
        (code, message.as_str()),
        (
            403,
            r#"pods is forbidden: User "system:serviceaccount:default:robot" cannot list resource "pods" in API group "" in the namespace "default""#
        )
    );
    // impersonating someone: kube-apiserver 1.36's constrained impersonation refuses with the
    // first check it made (may the account list pods while impersonating a user?)
    let as_jane = client_with_token(&s, &token, Some("jane")).await;
    let (code, message) = outcome(
        Api::<Pod>::namespaced(as_jane, "default")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(
        (code, message.as_str()),
        (
            403,
            r#"pods is forbidden: User "system:serviceaccount:default:robot" cannot impersonate-on:user-info:list resource "pods" in API group "" in the namespace "default""#
        )
    );
    s.shutdown().await;
}

#[tokio::test]
async fn the_bootstrap_roles_are_aggregated_and_extended() {
    let s = start(ServerConfig::default()).await.unwrap();
    let roles: Api<ClusterRole> = Api::all(s.client());
    // as kube-controller-manager aggregates them: view ⊂ edit ⊂ admin
    let rules = |r: &ClusterRole| r.rules.clone().unwrap_or_default();
    let view = roles.get("view").await.unwrap();
    let edit = roles.get("edit").await.unwrap();
    let admin = roles.get("admin").await.unwrap();
    assert!(rules(&view).len() > 5, "{view:?}");
    for r in rules(&view) {
        assert!(rules(&edit).contains(&r), "{r:?}");
    }
    for r in rules(&edit) {
        assert!(rules(&admin).contains(&r), "{r:?}");
    }
    assert_eq!(
        view.metadata.labels.as_ref().unwrap()["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    let managers: Vec<String> = view
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(
        managers.contains(&"clusterrole-aggregation-controller".to_string()),
        "{managers:?}"
    );
    let cluster_admin = roles.get("cluster-admin").await.unwrap();
    assert_eq!(
        serde_json::to_value(rules(&cluster_admin)).unwrap(),
        json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
               {"nonResourceURLs": ["*"], "verbs": ["*"]}])
    );

    // a CRD's operator ships a ClusterRole that extends view
    let viewer = client_as(&s, "viewer", &["readers"]).await;
    let binding: RoleBinding = object(json!({
        "metadata": {"name": "readers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "readers"}],
    }));
    Api::<RoleBinding>::namespaced(s.client(), "shop")
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    assert!(can_i(&viewer, "shop", "list", "pods").await.0);
    assert!(!can_i(&viewer, "shop", "list", "secrets").await.0);
    assert!(!can_i(&viewer, "shop", "list", "widgets").await.0);
    let extension: ClusterRole = object(json!({
        "metadata": {"name": "widgets-view",
                     "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": [""], "resources": ["widgets"], "verbs": ["list"]}],
    }));
    roles
        .create(&PostParams::default(), &extension)
        .await
        .unwrap();
    // the aggregation controller runs on the server's task: poll, as a test of a real cluster would
    let mut allowed = false;
    for _ in 0..200 {
        if can_i(&viewer, "shop", "list", "widgets").await.0 {
            allowed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(allowed, "view did not take the aggregated rule");
    assert!(
        rules(&roles.get("admin").await.unwrap()).iter().any(|r| r
            .resources
            .as_ref()
            .is_some_and(|x| x.contains(&"widgets".to_string()))),
        "admin aggregates edit, which aggregates view"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn without_rbac_everyone_may_do_everything() {
    let s = start(ServerConfig::default().rbac(false)).await.unwrap();
    let someone = client_as(&s, "system:serviceaccount:shop:operator", &[]).await;
    let pods: Api<Pod> = Api::namespaced(someone.clone(), "shop");
    assert_eq!(outcome(pods.list(&ListParams::default()).await).0, 200);
    assert!(can_i(&someone, "shop", "delete", "nodes").await.0);
    let roles: Api<ClusterRole> = Api::all(s.client());
    assert!(
        roles
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    s.shutdown().await;
}

#[tokio::test]
async fn an_operator_may_grant_only_what_it_holds() {
    let s = start(ServerConfig::default()).await.unwrap();
    let admin = s.client();
    let user = "system:serviceaccount:shop:operator";
    let operator = client_as(&s, user, &[]).await;
    let admin_roles: Api<Role> = Api::namespaced(admin.clone(), "shop");
    let admin_bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), "shop");
    let pp = PostParams::default();
    // the operator may write roles and bindings, and read config maps
    let manager = object(json!({"metadata": {"name": "manager"}, "rules": [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
         "verbs": ["create", "get", "update", "patch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}));
    admin_roles.create(&pp, &manager).await.unwrap();
    let bind = |name: &str, kind: &str, role: &str| -> RoleBinding {
        object(json!({"metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": "shop"}]}))
    };
    admin_bindings
        .create(&pp, &bind("operator-manager", "Role", "manager"))
        .await
        .unwrap();
    let roles: Api<Role> = Api::namespaced(operator.clone(), "shop");
    let bindings: Api<RoleBinding> = Api::namespaced(operator.clone(), "shop");
    let reader = object(json!({"metadata": {"name": "reader"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}));
    assert_eq!(outcome(roles.create(&pp, &reader).await).0, 200);
    let writer: Role = object(json!({"metadata": {"name": "writer"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create", "delete"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}));
    let (code, message) = outcome(roles.create(&pp, &writer).await);
    assert_eq!(code, 403);
    assert_eq!(
        message,
        format!(
            "roles.rbac.authorization.k8s.io \"writer\" is forbidden: user \"{user}\" (groups=[\"system:serviceaccounts\" \"system:serviceaccounts:shop\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
             {{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"create\" \"delete\"]}}\n\
             {{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}}"
        )
    );
    // binding what it holds, and what it does not (the bootstrap view role)
    assert_eq!(
        outcome(
            bindings
                .create(&pp, &bind("reader", "Role", "reader"))
                .await
        )
        .0,
        200
    );
    let (code, message) = outcome(
        bindings
            .create(&pp, &bind("view", "ClusterRole", "view"))
            .await,
    );
    assert_eq!(code, 403);
    assert!(
        message.starts_with("rolebindings.rbac.authorization.k8s.io \"view\" is forbidden: "),
        "{message}"
    );
    let (code, message) = outcome(bindings.create(&pp, &bind("gone", "Role", "gone")).await);
    assert_eq!(
        (code, message.as_str()),
        (
            404,
            r#"rolebindings.rbac.authorization.k8s.io "gone" not found"#
        )
    );
    // the escalate verb on roles lets it write any role
    let escalator = object(json!({"metadata": {"name": "escalator"}, "rules": [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]}]}));
    admin_roles.create(&pp, &escalator).await.unwrap();
    admin_bindings
        .create(&pp, &bind("operator-escalator", "Role", "escalator"))
        .await
        .unwrap();
    assert_eq!(outcome(roles.create(&pp, &writer).await).0, 200);
    // the admin (system:masters) is never checked
    let everything: ClusterRole = object(json!({"metadata": {"name": "everything"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}));
    Api::<ClusterRole>::all(admin)
        .create(&pp, &everything)
        .await
        .unwrap();
}
