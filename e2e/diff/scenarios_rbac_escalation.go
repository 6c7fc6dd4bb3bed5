package main

import "time"

// scRBACEscalation: RBAC's escalation prevention as an operator meets it when it
// writes Roles and RoleBindings for what it manages (through impersonation of
// its ServiceAccount): a role with rules it holds, one with more (403 naming
// what it lacks, compacted and sorted), a patch adding a verb, a binding to a
// role it holds and to roles it does not (its own ClusterRole, the bootstrap
// view role), a binding to a missing role, a change of finalizers alone, the
// bind verb on one ClusterRole and the escalate verb on roles, and ClusterRoles
// (rules not held, an aggregationRule).
func scRBACEscalation(s *sc) {
	rbac := "/apis/rbac.authorization.k8s.io/v1/"
	rbacNS := rbac + "namespaces/" + s.ns + "/"
	op := "system:serviceaccount:" + s.ns + ":operator"
	s.setup("POST", "/api/v1/namespaces/"+s.ns+"/serviceaccounts",
		map[string]any{"metadata": map[string]any{"name": "operator"}})
	rule := func(group, resource string, verbs ...string) map[string]any {
		return map[string]any{"apiGroups": []any{group}, "resources": []any{resource}, "verbs": verbs}
	}
	role := func(name string, rules ...any) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": name}, "rules": rules}
	}
	binding := func(name, kind, roleName string, subjects ...any) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": name},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": roleName},
			"subjects": subjects}
	}
	operator := map[string]any{"kind": "ServiceAccount", "name": "operator", "namespace": s.ns}
	// what the operator may do: write roles and bindings here, read and list config maps;
	// create ClusterRoles
	s.setup("POST", rbacNS+"roles", role("manager",
		map[string]any{"apiGroups": []any{"rbac.authorization.k8s.io"}, "resources": []any{"roles", "rolebindings"},
			"verbs": []any{"create", "get", "update", "patch"}},
		rule("", "configmaps", "get", "list")))
	s.setup("POST", rbacNS+"rolebindings", binding("operator-manager", "Role", "manager", operator))
	clusterName := "kd-" + s.run + "-esc"
	s.setup("POST", rbac+"clusterroles", role(clusterName+"-creator", rule("rbac.authorization.k8s.io", "clusterroles", "create")))
	s.cleanups = append(s.cleanups, func() { _, _ = s.t.do(s.ctx, "DELETE", rbac+"clusterroles/"+clusterName+"-creator", nil) })
	s.setup("POST", rbac+"clusterrolebindings", binding(clusterName+"-creator", "ClusterRole", clusterName+"-creator", operator))
	s.cleanups = append(s.cleanups, func() { _, _ = s.t.do(s.ctx, "DELETE", rbac+"clusterrolebindings/"+clusterName+"-creator", nil) })
	s.setup("POST", rbac+"clusterroles", role(clusterName+"-secrets", rule("", "secrets", "get", "watch")))
	s.cleanups = append(s.cleanups, func() { _, _ = s.t.do(s.ctx, "DELETE", rbac+"clusterroles/"+clusterName+"-secrets", nil) })

	as := func(name, method, path string, body any) *response {
		ct := "application/json"
		if method == "PATCH" {
			ct = ctMerge
		}
		r, err := s.t.doWith(s.ctx, method, path, ct, "", [][2]string{{"Impersonate-User", op}}, body)
		if err != nil {
			s.fail("%s: %s %s: %v", name, method, path, err)
		}
		s.recordAs(name, method+" "+path+" (as the operator)", r, r.body)
		return r
	}
	// a real server authorizes (and resolves rules) from informers: wait (bounded, not
	// recorded) until the operator may do what it was just granted
	may := func(verb, group, resource, name, ns string) {
		review := map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
			"spec": map[string]any{"resourceAttributes": map[string]any{"namespace": ns, "verb": verb,
				"group": group, "resource": resource, "name": name}}}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			r, err := s.t.doWith(s.ctx, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
				"application/json", "", [][2]string{{"Impersonate-User", op}}, review)
			if err == nil && field(r.body, "status", "allowed") == true {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		s.fail("the operator may not %s %s %s within 10s", verb, resource, name)
	}
	may("create", "rbac.authorization.k8s.io", "clusterroles", "", "")
	may("list", "", "configmaps", "", s.ns)

	as("create-role-held", "POST", rbacNS+"roles", role("cm-reader", rule("", "configmaps", "get", "list")))
	as("create-role-escalating", "POST", rbacNS+"roles", role("cm-writer",
		rule("", "configmaps", "get", "list", "create", "delete"), rule("", "secrets", "get")))
	as("patch-role-escalating", "PATCH", rbacNS+"roles/cm-reader", map[string]any{
		"rules": []any{rule("", "configmaps", "get", "list", "watch")}})
	as("bind-role-held", "POST", rbacNS+"rolebindings", binding("cm-reader", "Role", "cm-reader", operator))
	as("bind-clusterrole-not-held", "POST", rbacNS+"rolebindings", binding("secrets", "ClusterRole", clusterName+"-secrets", operator))
	as("bind-view", "POST", rbacNS+"rolebindings", binding("view", "ClusterRole", "view", operator))
	as("bind-missing-role", "POST", rbacNS+"rolebindings", binding("missing", "Role", "missing", operator))
	// a role the operator could not write: finalizers alone may change, anything else not
	s.setup("POST", rbacNS+"roles", role("big", rule("", "secrets", "*")))
	as("finalizers-only", "PATCH", rbacNS+"roles/big", map[string]any{
		"metadata": map[string]any{"finalizers": []any{"example.com/keep"}}})
	as("labels-too", "PATCH", rbacNS+"roles/big", map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"a": "b"}}})
	if r, err := s.t.doAs(s.ctx, "PATCH", rbacNS+"roles/big", ctMerge, "",
		map[string]any{"metadata": map[string]any{"finalizers": nil}}); err != nil || r.status != 200 {
		s.fail("drop the finalizer: %v %v", err, r)
	}
	// the bind verb on that ClusterRole alone
	s.setup("POST", rbacNS+"roles", role("binder", map[string]any{"apiGroups": []any{"rbac.authorization.k8s.io"},
		"resources": []any{"clusterroles"}, "verbs": []any{"bind"}, "resourceNames": []any{clusterName + "-secrets"}}))
	s.setup("POST", rbacNS+"rolebindings", binding("operator-binder", "Role", "binder", operator))
	may("bind", "rbac.authorization.k8s.io", "clusterroles", clusterName+"-secrets", s.ns)
	as("bind-clusterrole-with-bind", "POST", rbacNS+"rolebindings", binding("secrets", "ClusterRole", clusterName+"-secrets", operator))
	// ClusterRoles: rules the operator does not hold, an aggregationRule
	as("create-clusterrole-escalating", "POST", rbac+"clusterroles", role(clusterName+"-pods", rule("", "pods", "get")))
	agg := role(clusterName + "-agg")
	agg["aggregationRule"] = map[string]any{"clusterRoleSelectors": []any{
		map[string]any{"matchLabels": map[string]any{"kd-" + s.run: "esc"}}}}
	as("create-clusterrole-aggregating", "POST", rbac+"clusterroles", agg)
	// the escalate verb on roles
	s.setup("POST", rbacNS+"roles", role("escalator", rule("rbac.authorization.k8s.io", "roles", "escalate")))
	s.setup("POST", rbacNS+"rolebindings", binding("operator-escalator", "Role", "escalator", operator))
	may("escalate", "rbac.authorization.k8s.io", "roles", "", s.ns)
	as("create-role-with-escalate", "POST", rbacNS+"roles", role("cm-writer",
		rule("", "configmaps", "get", "list", "create", "delete"), rule("", "secrets", "get")))
	// whatever was created by mistake goes (not recorded)
	for _, n := range []string{"-pods", "-agg"} {
		name := clusterName + n
		s.cleanups = append(s.cleanups, func() { _, _ = s.t.do(s.ctx, "DELETE", rbac+"clusterroles/"+name, nil) })
	}
}
