package main

import (
	"encoding/json"
	"sort"
	"strings"
	"time"
)

// scRBAC: authorization as a controller author's tests meet it, through
// impersonation (kubectl's --as, kube-rs's AuthInfo::impersonate) by the
// admin: a ServiceAccount with a Role and RoleBindings, a user and a group,
// the bootstrap view role (aggregated by kube-controller-manager), a binding
// to a missing role (the denial's RBAC reason), impersonation refused,
// access reviews (SelfSubjectAccessReview, SubjectAccessReview,
// LocalSubjectAccessReview, SelfSubjectRulesReview: its rules compared as a
// set, since a real server visits the bindings in no set order), a
// ClusterRole aggregated into view and what the aggregated role then holds,
// and RBAC names (path segments, not DNS names).
func scRBAC(s *sc) {
	rbacNS := "/apis/rbac.authorization.k8s.io/v1/namespaces/" + s.ns
	robot := "system:serviceaccount:" + s.ns + ":robot"
	s.setup("POST", "/api/v1/namespaces/"+s.ns+"/serviceaccounts",
		map[string]any{"metadata": map[string]any{"name": "robot"}})
	s.setup("POST", s.cms(""), configMap("a", nil, map[string]string{"k": "1"}))
	as := func(name, user string, groups []string, method, path string, body any) *response {
		var hs [][2]string
		if user != "" {
			hs = append(hs, [2]string{"Impersonate-User", user})
		}
		for _, g := range groups {
			hs = append(hs, [2]string{"Impersonate-Group", g})
		}
		ct := "application/json"
		if method == "PATCH" {
			ct = ctMerge
		}
		r, err := s.t.doWith(s.ctx, method, path, ct, "", hs, body)
		if err != nil {
			s.fail("%s: %s %s: %v", name, method, path, err)
		}
		s.recordAs(name, method+" "+path+" (as "+user+")", r, r.body)
		return r
	}
	// A real server authorizes from informers: a binding just written takes a moment to
	// count. settled waits (bounded, not recorded) until a request as user says it does.
	settled := func(user string, groups []string, path string, ok func(*response) bool) {
		var hs [][2]string
		hs = append(hs, [2]string{"Impersonate-User", user})
		for _, g := range groups {
			hs = append(hs, [2]string{"Impersonate-Group", g})
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			r, err := s.t.doWith(s.ctx, "GET", path, "application/json", "", hs, nil)
			if err == nil && ok(r) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	allowed := func(r *response) bool { return r.status == 200 }
	ssar := func(verb, resource, sub, name string) map[string]any {
		return map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
			"spec": map[string]any{"resourceAttributes": map[string]any{"namespace": s.ns, "verb": verb,
				"resource": resource, "subresource": sub, "name": name}}}
	}
	const ssarPath = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"

	as("robot-list-configmaps", robot, nil, "GET", s.cms(""), nil)
	s.call("create-role", "POST", rbacNS+"/roles", map[string]any{
		"metadata": map[string]any{"name": "cm-reader"},
		"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"},
			"verbs": []any{"get", "list"}}},
	})
	s.call("create-rolebinding", "POST", rbacNS+"/rolebindings", map[string]any{
		"metadata": map[string]any{"name": "robot-cm"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "robot"}},
	})
	settled(robot, nil, s.cms(""), allowed)
	as("robot-list-configmaps-bound", robot, nil, "GET", s.cms(""), nil)
	as("robot-get-configmap", robot, nil, "GET", s.cm("a"), nil)
	as("robot-watch-configmaps", robot, nil, "GET", s.cms("watch=1&timeoutSeconds=1"), nil)
	as("robot-create-configmap", robot, nil, "POST", s.cms(""), configMap("b", nil, nil))
	as("robot-patch-configmap", robot, nil, "PATCH", s.cm("a"), map[string]any{"data": map[string]any{"k": "2"}})
	as("robot-delete-configmap", robot, nil, "DELETE", s.cm("a"), nil)
	as("robot-list-secrets", robot, nil, "GET", "/api/v1/namespaces/"+s.ns+"/secrets", nil)
	as("robot-list-pods", robot, nil, "GET", "/api/v1/namespaces/"+s.ns+"/pods", nil)
	as("robot-list-all-configmaps", robot, nil, "GET", "/api/v1/configmaps", nil)
	as("robot-discovery", robot, nil, "GET", "/apis/authorization.k8s.io/v1", nil)
	as("robot-metrics", robot, nil, "GET", "/metrics", nil)
	as("robot-ssar-allowed", robot, nil, "POST", ssarPath, ssar("list", "configmaps", "", ""))
	as("robot-ssar-denied", robot, nil, "POST", ssarPath, ssar("create", "configmaps", "", ""))
	// the bootstrap view role, aggregated: pods (and their logs), not secrets
	s.call("bind-view", "POST", rbacNS+"/rolebindings", map[string]any{
		"metadata": map[string]any{"name": "robot-view"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "robot", "namespace": s.ns}},
	})
	settled(robot, nil, "/api/v1/namespaces/"+s.ns+"/pods", allowed)
	as("robot-list-pods-view", robot, nil, "GET", "/api/v1/namespaces/"+s.ns+"/pods", nil)
	as("robot-list-secrets-view", robot, nil, "GET", "/api/v1/namespaces/"+s.ns+"/secrets", nil)
	as("robot-ssar-pod-logs", robot, nil, "POST", ssarPath, ssar("get", "pods", "log", "p"))
	as("robot-ssar-deployment-scale", robot, nil, "POST", ssarPath, ssar("get", "deployments", "scale", ""))
	// a user in a group, then a binding to the group
	as("jane-list-configmaps", "jane", []string{"devs"}, "GET", s.cms(""), nil)
	s.call("bind-group", "POST", rbacNS+"/rolebindings", map[string]any{
		"metadata": map[string]any{"name": "devs-cm"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"}},
	})
	settled("jane", []string{"devs"}, s.cms(""), allowed)
	as("jane-list-configmaps-bound", "jane", []string{"devs"}, "GET", s.cms(""), nil)
	as("jane-without-group", "jane", nil, "GET", s.cms(""), nil)
	as("jane-whoami", "jane", []string{"devs"}, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
		map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
	as("robot-whoami", robot, nil, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
		map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
	// a binding to a role that does not exist: the denial says so
	s.call("bind-missing-role", "POST", rbacNS+"/rolebindings", map[string]any{
		"metadata": map[string]any{"name": "dangling"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "missing"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dan"}},
	})
	settled("dan", nil, s.cms(""), func(r *response) bool {
		return strings.Contains(str(r.body, "message"), "RBAC:")
	})
	as("dan-list-configmaps", "dan", nil, "GET", s.cms(""), nil)
	// impersonation: refused to a service account, groups without a user
	r, err := s.t.doWith(s.ctx, "GET", s.cms(""), "application/json", "", [][2]string{
		{"Impersonate-User", robot}, {"Impersonate-Group", "system:masters"}}, nil)
	if err != nil {
		s.fail("robot-as-masters: %v", err)
	}
	s.recordAs("robot-as-masters", "GET configmaps (as robot in system:masters)", r, r.body)
	as("groups-without-user", "", []string{"devs"}, "GET", s.cms(""), nil)
	r, err = s.t.doWith(s.ctx, "GET", s.cms(""), "application/json", "", [][2]string{
		{"Impersonate-Uid", "u-1"}, {"Impersonate-Extra-Scopes", "a"}, {"Impersonate-Group", "g1"}, {"Impersonate-Group", "g2"}}, nil)
	if err != nil {
		s.fail("uid-without-user: %v", err)
	}
	s.recordAs("uid-without-user", "GET configmaps (uid, extra and groups, no user)", r, r.body)
	// the admin impersonates a user with a uid and extras: whoami says so
	r, err = s.t.doWith(s.ctx, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", "application/json", "", [][2]string{
		{"Impersonate-User", "kim"}, {"Impersonate-Uid", "u-1"}, {"Impersonate-Extra-Scopes", "a"},
		{"Impersonate-Extra-Scopes", "b"}, {"Impersonate-Extra-Team%2Fname", "x"}},
		map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
	if err != nil {
		s.fail("kim-whoami: %v", err)
	}
	s.recordAs("kim-whoami", "POST selfsubjectreviews (as kim, uid and extras)", r, r.body)
	as("node-list-configmaps", "system:node:n1", nil, "GET", s.cms(""), nil)
	// a service account may not impersonate (its token as the bearer)
	tr := s.setup("POST", "/api/v1/namespaces/"+s.ns+"/serviceaccounts/robot/token",
		map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": map[string]any{}})
	token := str(field(tr.body, "status"), "token")
	r, err = s.t.doWith(s.ctx, "GET", s.cms(""), "application/json", token, [][2]string{{"Impersonate-User", "jane"}}, nil)
	if err != nil {
		s.fail("robot-impersonates: %v", err)
	}
	s.recordAs("robot-impersonates", "GET configmaps (robot's token, as jane)", r, r.body)
	for _, w := range []struct{ name, user, group string }{
		{"robot-impersonates-sa", "system:serviceaccount:" + s.ns + ":default", ""},
		{"robot-impersonates-sa-group", "system:serviceaccount:" + s.ns + ":default", "devs"},
		{"robot-impersonates-node", "system:node:n1", ""},
		{"robot-impersonates-group", "jane", "system:masters"},
	} {
		hs := [][2]string{{"Impersonate-User", w.user}}
		if w.group != "" {
			hs = append(hs, [2]string{"Impersonate-Group", w.group})
		}
		r, err = s.t.doWith(s.ctx, "GET", "/api", "application/json", token, hs, nil)
		if err != nil {
			s.fail("%s: %v", w.name, err)
		}
		s.recordAs(w.name, "GET /api (robot's token, as "+w.user+" "+w.group+")", r, r.body)
	}
	r, err = s.t.doWith(s.ctx, "GET", s.cms(""), "application/json", token, nil, nil)
	if err != nil {
		s.fail("robot-token: %v", err)
	}
	s.recordAs("robot-token-list-configmaps", "GET configmaps (robot's token)", r, r.body)
	// access reviews by the admin about others
	sar := func(spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
	}
	// (one binding allows each: a real server visits bindings in no set order, and names
	// the first that allows)
	attrs := map[string]any{"namespace": s.ns, "verb": "list", "resource": "configmaps"}
	s.call("sar-robot", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
		sar(map[string]any{"user": robot, "groups": []any{"system:serviceaccounts"},
			"resourceAttributes": map[string]any{"namespace": s.ns, "verb": "list", "resource": "pods"}}))
	s.call("sar-devs", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
		sar(map[string]any{"groups": []any{"devs"}, "resourceAttributes": attrs}))
	s.call("sar-nobody", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
		sar(map[string]any{"resourceAttributes": attrs}))
	s.call("sar-path", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
		sar(map[string]any{"user": "someone", "groups": []any{"system:authenticated"},
			"nonResourceAttributes": map[string]any{"verb": "get", "path": "/api"}}))
	s.call("lsar", "POST", "/apis/authorization.k8s.io/v1/namespaces/"+s.ns+"/localsubjectaccessreviews",
		map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
			"metadata": map[string]any{"namespace": s.ns},
			"spec":     map[string]any{"user": "dan", "resourceAttributes": attrs}})
	s.call("lsar-other-namespace", "POST", "/apis/authorization.k8s.io/v1/namespaces/"+s.ns+"/localsubjectaccessreviews",
		map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
			"metadata": map[string]any{"namespace": s.ns},
			"spec": map[string]any{"user": "dan", "resourceAttributes": map[string]any{
				"namespace": "elsewhere", "verb": "list", "resource": "configmaps"}}})
	s.call("ssar-admin", "POST", ssarPath, ssar("delete", "nodes", "", "n"))
	s.call("ssar-no-attributes", "POST", ssarPath, map[string]any{"apiVersion": "authorization.k8s.io/v1",
		"kind": "SelfSubjectAccessReview", "spec": map[string]any{}})
	// what robot may do here: the rules as a set
	r, err = s.t.doWith(s.ctx, "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", "application/json", "",
		[][2]string{{"Impersonate-User", robot}},
		map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
			"spec": map[string]any{"namespace": s.ns}})
	if err != nil {
		s.fail("robot-rules: %v", err)
	}
	s.recordAs("robot-rules", "POST selfsubjectrulesreviews (as robot; rules sorted)", r, sortedRules(r.body))
	// a ClusterRole aggregated into view: view gets its rule, and robot with it
	agg := "kd-" + s.run + "-agg"
	crPath := "/apis/rbac.authorization.k8s.io/v1/clusterroles"
	defer func() { _, _ = s.t.do(s.ctx, "DELETE", crPath+"/"+agg, nil) }()
	s.call("create-aggregated", "POST", crPath, map[string]any{
		"metadata": map[string]any{"name": agg, "labels": map[string]any{
			"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
		"rules": []any{map[string]any{"apiGroups": []any{"example.com"}, "resources": []any{"widgets-" + s.run},
			"verbs": []any{"get"}}},
	})
	hasWidgets := func(r *response) bool {
		b, _ := json.Marshal(field(r.body, "rules"))
		return strings.Contains(string(b), "widgets-"+s.run)
	}
	s.pollUntil(crPath+"/view", 10e9, hasWidgets)
	widgetReview := map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
		"spec": map[string]any{"resourceAttributes": map[string]any{"namespace": s.ns, "verb": "get",
			"group": "example.com", "resource": "widgets-" + s.run}}}
	as("robot-ssar-aggregated", robot, nil, "POST", ssarPath, widgetReview)
	s.call("delete-aggregated", "DELETE", crPath+"/"+agg, nil)
	s.pollUntil(crPath+"/view", 10e9, func(r *response) bool { return !hasWidgets(r) })
	as("robot-ssar-aggregated-gone", robot, nil, "POST", ssarPath, widgetReview)
	// RBAC names are path segments
	s.call("role-name-with-colon", "POST", rbacNS+"/roles", map[string]any{
		"metadata": map[string]any{"name": "team:Reader_1"}, "rules": []any{}})
	s.call("role-name-with-slash", "POST", rbacNS+"/roles", map[string]any{
		"metadata": map[string]any{"name": "a%b"}, "rules": []any{}})
}

// sortedRules is a SelfSubjectRulesReview with its status's rule lists in
// a fixed order (each rule by its JSON).
func sortedRules(body any) any {
	m, ok := body.(map[string]any)
	if !ok {
		return body
	}
	st, ok := m["status"].(map[string]any)
	if !ok {
		return body
	}
	for _, k := range []string{"resourceRules", "nonResourceRules"} {
		list, _ := st[k].([]any)
		sort.SliceStable(list, func(i, j int) bool {
			a, _ := json.Marshal(list[i])
			b, _ := json.Marshal(list[j])
			return string(a) < string(b)
		})
	}
	return body
}
