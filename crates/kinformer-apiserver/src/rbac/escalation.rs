//! RBAC's escalation prevention, as kube-apiserver 1.36's RBAC storage enforces it: a user may
//! write a Role or ClusterRole only with rules it holds itself (or with the `escalate` verb on
//! that role), and a RoleBinding or ClusterRoleBinding only to a role whose rules it holds (or
//! with the `bind` verb on that role); a ClusterRole with an `aggregationRule` needs every
//! permission. `system:masters` may do anything; a write that changes only an object's owner
//! references or finalizers is not checked. Refusals are 403 in kube-apiserver's words:
//! `roles.rbac.authorization.k8s.io "x" is forbidden: user "u" (groups=["g"]) is attempting to
//! grant RBAC permissions not currently held:` and the missing rules, compacted and sorted.

use serde_json::Value;

use super::{Attributes, Cache, MASTERS, Role, RoleRef, Rule, authorize, role_of, visit_rules};
use crate::api::Api;
use crate::go_text::go_quote;
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::token::User;

const GROUP: &str = "rbac.authorization.k8s.io";

/// Whether writes of `res` are checked for escalation: the four RBAC kinds.
pub(crate) fn applies(res: &ResourceInfo) -> bool {
    res.group == GROUP
        && matches!(
            res.plural.as_str(),
            "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings"
        )
}

/// Checks that `user` may write `new` (an object of `res` in `namespace`, replacing `old`).
pub(crate) fn check(
    api: &Api,
    cache: &Cache,
    user: &User,
    res: &ResourceInfo,
    namespace: &str,
    new: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if !applies(res) || user.groups.iter().any(|g| g == MASTERS) {
        return Ok(());
    }
    if old.is_some_and(|old| only_gc_fields_differ(new, old)) {
        return Ok(());
    }
    let name = new
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let forbidden = |why: String| ApiError::forbidden(res, name, &why);
    let is_role = res.plural.ends_with("roles");
    if is_role {
        // the `escalate` verb on the role being written (a create names none)
        let attrs = Attributes {
            resource_request: true,
            verb: "escalate".into(),
            group: GROUP.into(),
            namespace: namespace.into(),
            resource: res.plural.clone(),
            name: if old.is_some() {
                name.into()
            } else {
                String::new()
            },
            ..Default::default()
        };
        if authorize(api, cache, user, &attrs).allowed {
            return Ok(());
        }
        let rules: Role = serde_json::from_value(new.clone()).unwrap_or_default();
        confirm_no_escalation(
            api,
            cache,
            user,
            namespace,
            &rules.rules.unwrap_or_default(),
        )
        .map_err(forbidden)?;
        if res.plural == "clusterroles" && new.get("aggregationRule").is_some_and(|a| !a.is_null())
        {
            let everything = [
                Rule {
                    verbs: vec!["*".into()],
                    api_groups: vec!["*".into()],
                    resources: vec!["*".into()],
                    ..Default::default()
                },
                Rule {
                    verbs: vec!["*".into()],
                    non_resource_urls: vec!["*".into()],
                    ..Default::default()
                },
            ];
            confirm_no_escalation(api, cache, user, namespace, &everything).map_err(|_| {
                forbidden("must have cluster-admin privileges to use the aggregationRule".into())
            })?;
        }
        return Ok(());
    }
    let role_ref: RoleRef = new
        .get("roleRef")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default();
    // the `bind` verb on the role bound
    let resource = match role_ref.kind.as_str() {
        "ClusterRole" => "clusterroles",
        "Role" => "roles",
        _ => "",
    };
    if !resource.is_empty() {
        let attrs = Attributes {
            resource_request: true,
            verb: "bind".into(),
            group: new
                .pointer("/roleRef/apiGroup")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .into(),
            namespace: namespace.into(),
            resource: resource.into(),
            name: role_ref.name.clone(),
            ..Default::default()
        };
        if authorize(api, cache, user, &attrs).allowed {
            return Ok(());
        }
    }
    // a missing role is 404, in kube-apiserver's words: the binding's resource, the role's name
    let role = role_of(api, cache, &role_ref, namespace)
        .map_err(|_| ApiError::not_found(res, &role_ref.name))?;
    let rules = role.rules.clone().unwrap_or_default();
    confirm_no_escalation(api, cache, user, namespace, &rules).map_err(forbidden)
}

/// `ConfirmNoEscalation`: whether the rules `user` holds in `namespace` cover `rules`; if not,
/// what it is attempting to grant, in kube-apiserver's words.
fn confirm_no_escalation(
    api: &Api,
    cache: &Cache,
    user: &User,
    namespace: &str,
    rules: &[Rule],
) -> Result<(), String> {
    let mut owned = Vec::new();
    let errors = visit_rules(api, cache, user, namespace, &mut |_, r| {
        owned.push(r.clone());
        true
    });
    let missing: Vec<Rule> = rules
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owned.iter().any(|o| covers(o, sub)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut described: Vec<String> = compact(missing).iter().map(compact_string).collect();
    described.sort();
    described.dedup();
    let groups: Vec<String> = user.groups.iter().map(|g| go_quote(g)).collect();
    let mut msg = format!(
        "user {} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.username),
        groups.join(" "),
        described.join("\n")
    );
    if !errors.is_empty() {
        msg.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
    }
    Err(msg)
}

/// `BreakdownRule`: one rule per group, resource, verb and resource name (and per path and
/// verb).
fn breakdown(rule: &Rule) -> Vec<Rule> {
    let mut out = Vec::new();
    for g in &rule.api_groups {
        for r in &rule.resources {
            for v in &rule.verbs {
                let one = |names: Vec<String>| Rule {
                    verbs: vec![v.clone()],
                    api_groups: vec![g.clone()],
                    resources: vec![r.clone()],
                    resource_names: names,
                    non_resource_urls: Vec::new(),
                };
                if rule.resource_names.is_empty() {
                    out.push(one(Vec::new()));
                } else {
                    out.extend(rule.resource_names.iter().map(|n| one(vec![n.clone()])));
                }
            }
        }
    }
    for u in &rule.non_resource_urls {
        for v in &rule.verbs {
            out.push(Rule {
                verbs: vec![v.clone()],
                non_resource_urls: vec![u.clone()],
                ..Default::default()
            });
        }
    }
    out
}

/// `ruleCovers`: whether `owner` allows all of `sub` (one broken-down rule).
fn covers(owner: &Rule, sub: &Rule) -> bool {
    let has = |set: &[String], x: &str| set.iter().any(|s| s == x);
    let has_all = |set: &[String], xs: &[String]| xs.iter().all(|x| has(set, x));
    let verbs = has(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, "*") || has_all(&owner.api_groups, &sub.api_groups);
    let resources = has(&owner.resources, "*")
        || sub.resources.iter().all(|r| {
            has(&owner.resources, r)
                || r.split_once('/')
                    .is_some_and(|(_, sub)| has(&owner.resources, &format!("*/{sub}")))
        });
    let paths = sub.non_resource_urls.iter().all(|p| {
        owner.non_resource_urls.iter().any(|o| {
            o == p
                || o.strip_suffix('*')
                    .is_some_and(|prefix| p.starts_with(prefix))
        })
    });
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && paths && names
}

/// `CompactRules`: rules of one group, resource and at most one resource name merged into
/// one with all their verbs (the others as they are).
fn compact(rules: Vec<Rule>) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    let mut simple: Vec<Rule> = Vec::new();
    for r in rules {
        let is_simple = r.non_resource_urls.is_empty()
            && r.resource_names.len() <= 1
            && r.api_groups.len() == 1
            && r.resources.len() == 1;
        if !is_simple {
            out.push(r);
            continue;
        }
        match simple.iter_mut().find(|s| {
            s.api_groups == r.api_groups
                && s.resources == r.resources
                && s.resource_names == r.resource_names
        }) {
            Some(s) => s.verbs.extend(r.verbs),
            None => simple.push(r),
        }
    }
    out.extend(simple);
    out
}

/// `CompactString`: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}`.
fn compact_string(r: &Rule) -> String {
    let quoted = |l: &[String]| {
        let q: Vec<String> = l.iter().map(|s| go_quote(s)).collect();
        format!("[{}]", q.join(" "))
    };
    let mut parts = Vec::new();
    for (label, list) in [
        ("APIGroups", &r.api_groups),
        ("Resources", &r.resources),
        ("NonResourceURLs", &r.non_resource_urls),
        ("ResourceNames", &r.resource_names),
        ("Verbs", &r.verbs),
    ] {
        if !list.is_empty() {
            parts.push(format!("{label}:{}", quoted(list)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// `IsOnlyMutatingGCFields`: whether `new` differs from `old` only in its owner references,
/// finalizers and managed fields (and what the server stamps on every write).
fn only_gc_fields_differ(new: &Value, old: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in [
                "ownerReferences",
                "finalizers",
                "managedFields",
                "resourceVersion",
                "generation",
            ] {
                m.remove(k);
            }
        }
        v
    };
    strip(new) == strip(old)
}

#[cfg(test)]
mod tests;
