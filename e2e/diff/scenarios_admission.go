package main

import (
	"strings"
	"time"
)

// scAdmissionPolicy binds ValidatingAdmissionPolicies to writes in the scenario's namespace
// (labelled for it) and makes writes that pass and break them: validations with and without
// message, messageExpression and reason, variables, matchConditions, a binding's
// namespaceSelector and objectSelector, params from a custom resource (missing, then present),
// oldObject on updates, DELETE, failurePolicy Fail and Ignore over an expression that fails,
// Warn and Audit bindings (their Warning headers), matchPolicy's resource rules with
// resourceNames and excludeResourceRules, a dry run, and a Deployment's scale subresource
// (not matched by a rule on deployments).
func scAdmissionPolicy(s *sc) {
	label := "vap-" + s.run
	vaps := "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
	bindings := "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
	nsPatch := map[string]any{"metadata": map[string]any{"labels": map[string]any{label: "on"}}}
	if r, err := s.t.doAs(s.ctx, "PATCH", "/api/v1/namespaces/"+s.ns, ctMerge, "", nsPatch); err != nil || r.status != 200 {
		s.fail("label the namespace: %v %v", err, r)
	}
	rule := func(groups, resources, ops []any) map[string]any {
		return map[string]any{"apiGroups": groups, "apiVersions": []any{"*"}, "resources": resources, "operations": ops}
	}
	cmRules := []any{rule([]any{""}, []any{"configmaps"}, []any{"CREATE", "UPDATE"})}
	policy := func(name string, spec map[string]any) {
		s.setup("POST", vaps, map[string]any{"apiVersion": "admissionregistration.k8s.io/v1",
			"kind": "ValidatingAdmissionPolicy", "metadata": map[string]any{"name": name}, "spec": spec})
		s.cleanups = append(s.cleanups, func() { _, _ = s.t.do(s.ctx, "DELETE", vaps+"/"+name, nil) })
	}
	bind := func(name, policyName string, actions []any, extra map[string]any) {
		spec := map[string]any{"policyName": policyName, "validationActions": actions,
			"matchResources": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{label: "on"}}}}
		for k, v := range extra {
			spec[k] = v
		}
		s.setup("POST", bindings, map[string]any{"apiVersion": "admissionregistration.k8s.io/v1",
			"kind": "ValidatingAdmissionPolicyBinding", "metadata": map[string]any{"name": name}, "spec": spec})
		s.cleanups = append(s.cleanups, func() { _, _ = s.t.do(s.ctx, "DELETE", bindings+"/"+name, nil) })
	}
	// waitDenied repeats a dry-run create of body until the server refuses it (policies
	// reach kube-apiserver's admission through its informers), at most 15s; not recorded.
	waitDenied := func(path string, body map[string]any, done func(*response) bool) {
		deadline := time.Now().Add(15 * time.Second)
		for {
			r, err := s.t.do(s.ctx, "POST", path+"?dryRun=All", body)
			if err == nil && done(r) {
				return
			}
			if time.Now().After(deadline) {
				s.fail("the policy was not applied within 15s: %v", r)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	refused := func(r *response) bool { return r.status >= 400 }
	cm := func(name string, labels map[string]string, data map[string]string) map[string]any {
		return configMap(name, labels, data)
	}
	warned := func(r *response) {
		ws := []string{}
		for _, w := range r.warnings {
			ws = append(ws, strings.ReplaceAll(w, s.run, "<run>"))
		}
		s.fact("warnings", ws)
	}

	// 1. validations, variables, matchConditions, on configmaps in the labelled namespace
	p1 := label + "-shape"
	policy(p1, map[string]any{
		"matchConstraints": map[string]any{"resourceRules": cmRules},
		"variables": []any{
			map[string]any{"name": "keys", "expression": "has(object.data) ? object.data.size() : 0"},
		},
		"matchConditions": []any{
			map[string]any{"name": "not-exempt", "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"},
		},
		"validations": []any{
			map[string]any{"expression": "variables.keys <= 3"},
			map[string]any{"expression": "!has(object.data) || !('forbidden' in object.data)", "message": "  no forbidden key  ", "reason": "Forbidden"},
			map[string]any{"expression": "!object.metadata.name.startsWith('bad')",
				"messageExpression": "'name ' + object.metadata.name + ' is not allowed (' + string(variables.keys) + ' keys)'"},
			map[string]any{"expression": "oldObject == null || !has(oldObject.data) || !has(object.data) || !('v' in oldObject.data) || !('v' in object.data) || int(object.data.v) >= int(oldObject.data.v)",
				"message": "v may only grow"},
		},
	})
	bind(p1+"-deny", p1, []any{"Deny"}, nil)
	many := map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}
	waitDenied(s.cms(""), cm("probe", nil, many), refused)
	s.call("create-ok", "POST", s.cms(""), cm("c1", nil, map[string]string{"v": "1"}))
	s.call("create-too-many-keys", "POST", s.cms(""), cm("c2", nil, many))
	s.call("create-forbidden-key", "POST", s.cms(""), cm("c3", nil, map[string]string{"forbidden": "x"}))
	s.call("create-bad-name-message-expression", "POST", s.cms(""), cm("bad-1", nil, map[string]string{"a": "1"}))
	s.call("create-exempt-by-match-condition", "POST", s.cms(""), cm("bad-2", map[string]string{"exempt": "yes"}, many))
	s.call("create-dry-run-refused", "POST", s.cms("dryRun=All"), cm("c4", nil, many))
	s.call("update-v-grows", "PUT", s.cm("c1"), cm("c1", nil, map[string]string{"v": "2"}))
	s.call("update-v-shrinks", "PUT", s.cm("c1"), cm("c1", nil, map[string]string{"v": "0"}))
	s.callCT("patch-too-many-keys", "PATCH", s.cm("c1"), ctMerge, map[string]any{"data": many})
	s.callCT("apply-forbidden-key", "PATCH", s.cm("c1")+"?fieldManager=diff", ctApply,
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c1"}, "data": map[string]any{"forbidden": "1"}})
	s.call("get-after-refusals", "GET", s.cm("c1"), nil)
	// the default namespace is not labelled: not bound there
	s.call("create-elsewhere", "POST", "/api/v1/namespaces/default/configmaps?dryRun=All", cm(label+"-x", nil, many))

	// 2. params from a custom resource, through an objectSelector: missing (Deny), then
	// present (a built-in paramKind would meet kube-apiserver's shared param informer, which
	// stops for good once no binding names its kind: the second run against the same server
	// would never see its params)
	group := "kp-" + s.run + ".example.com"
	limits := s.registerCRD(group, "limits", specCRD(group, "limits", "limit", "Limit", map[string]any{
		"type": "object", "properties": map[string]any{"max": map[string]any{"type": "integer"}}}))
	p2 := label + "-params"
	policy(p2, map[string]any{
		"paramKind":        map[string]any{"apiVersion": group + "/v1", "kind": "Limit"},
		"matchConstraints": map[string]any{"resourceRules": cmRules},
		"validations": []any{
			map[string]any{"expression": "!has(object.data) || object.data.size() <= params.spec.max",
				"messageExpression": "'at most ' + string(params.spec.max) + ' keys'"},
		},
	})
	checked := map[string]string{"checked": "yes"}
	bind(p2+"-deny", p2, []any{"Deny"}, map[string]any{
		"paramRef": map[string]any{"name": "limits", "namespace": s.ns, "parameterNotFoundAction": "Deny"},
		"matchResources": map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{label: "on"}},
			"objectSelector":    map[string]any{"matchLabels": map[string]any{"checked": "yes"}},
		},
	})
	waitDenied(s.cms(""), cm("probe", checked, nil), refused)
	s.call("create-params-missing", "POST", s.cms(""), cm("p1", checked, map[string]string{"a": "1"}))
	s.call("create-unselected", "POST", s.cms(""), cm("p2", nil, map[string]string{"a": "1"}))
	s.setup("POST", limits, map[string]any{"apiVersion": group + "/v1", "kind": "Limit",
		"metadata": map[string]any{"name": "limits"}, "spec": map[string]any{"max": 1}})
	waitDenied(s.cms(""), cm("probe", checked, nil), func(r *response) bool { return r.status == 201 })
	s.call("create-within-params", "POST", s.cms(""), cm("p3", checked, map[string]string{"a": "1"}))
	s.call("create-beyond-params", "POST", s.cms(""), cm("p4", checked, map[string]string{"a": "1", "b": "2"}))

	// 3. failures: Fail refuses, Ignore lets through; Warn and Audit only warn
	p3 := label + "-fail"
	policy(p3, map[string]any{
		"failurePolicy": "Fail",
		"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
			"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "resources": []any{"configmaps"},
			"operations": []any{"CREATE"}, "resourceNames": []any{"f1", "f2"}}}},
		"validations": []any{map[string]any{"expression": "object.data.missing == 'x'"}},
	})
	bind(p3+"-deny", p3, []any{"Deny"}, nil)
	p4 := label + "-ignore"
	policy(p4, map[string]any{
		"failurePolicy":    "Ignore",
		"matchConstraints": map[string]any{"resourceRules": cmRules},
		"validations":      []any{map[string]any{"expression": "object.data.missing == 'x'"}},
	})
	bind(p4+"-deny", p4, []any{"Deny"}, nil)
	p5 := label + "-warn"
	policy(p5, map[string]any{
		"matchConstraints": map[string]any{"resourceRules": cmRules,
			"excludeResourceRules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"},
				"resources": []any{"configmaps"}, "operations": []any{"*"}, "resourceNames": []any{"limits"}}}},
		"validations": []any{
			map[string]any{"expression": "has(object.metadata.labels) && 'owner' in object.metadata.labels", "message": "configmaps should name an owner"},
		},
	})
	bind(p5+"-warn", p5, []any{"Warn", "Audit"}, nil)
	waitDenied(s.cms(""), cm("f1", nil, map[string]string{"a": "1"}), refused)
	waitDenied(s.cms(""), cm("probe", nil, map[string]string{"a": "1"}), func(r *response) bool { return len(r.warnings) > 0 })
	s.call("create-failing-expression-fail", "POST", s.cms(""), cm("f1", nil, map[string]string{"a": "1"}))
	s.call("create-failing-expression-other-name", "POST", s.cms(""), cm("f3", nil, map[string]string{"a": "1"}))
	warned(s.call("create-warned", "POST", s.cms(""), cm("w1", nil, map[string]string{"a": "1"})))
	warned(s.call("create-with-owner", "POST", s.cms(""), cm("w2", map[string]string{"owner": "me"}, map[string]string{"a": "1"})))
	warned(s.call("create-warned-and-denied", "POST", s.cms(""), cm("w3", nil, many)))
	warned(s.call("create-excluded-name", "POST", s.cms(""), cm("limits", nil, map[string]string{"max": "2"})))

	// 4. DELETE, and a Deployment: its scale subresource is not "deployments"
	p6 := label + "-delete"
	policy(p6, map[string]any{
		"matchConstraints": map[string]any{"resourceRules": []any{
			rule([]any{""}, []any{"configmaps"}, []any{"DELETE"}),
			rule([]any{"apps"}, []any{"deployments"}, []any{"CREATE", "UPDATE"}),
		}},
		"validations": []any{
			map[string]any{"expression": "request.operation != 'DELETE' || object == null && oldObject.metadata.name != 'c1'", "message": "c1 is kept"},
			map[string]any{"expression": "request.operation == 'DELETE' || object.spec.replicas <= 2",
				"messageExpression": "request.kind.kind + ' ' + request.name + ': at most 2 replicas, not ' + string(object.spec.replicas)"},
		},
	})
	bind(p6+"-deny", p6, []any{"Deny"}, nil)
	deadline := time.Now().Add(15 * time.Second)
	for {
		r, err := s.t.do(s.ctx, "DELETE", s.cm("c1")+"?dryRun=All", nil)
		if err == nil && r.status >= 400 {
			break
		}
		if time.Now().After(deadline) {
			s.fail("the delete policy was not applied within 15s: %v", r)
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.call("delete-kept", "DELETE", s.cm("c1"), nil)
	s.call("delete-other", "DELETE", s.cm("p2"), nil)
	deploys := "/apis/apps/v1/namespaces/" + s.ns + "/deployments"
	deploy := func(name string, replicas int) map[string]any {
		labels := map[string]any{"app": name}
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{"replicas": replicas, "selector": map[string]any{"matchLabels": labels},
				"template": map[string]any{"metadata": map[string]any{"labels": labels},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}}}
	}
	s.call("create-deployment-too-many", "POST", deploys, deploy("d1", 3))
	// (the created deployment is shown by its replicas: the embedded server does not default
	// pod templates)
	created := s.callCT("create-deployment", "POST", deploys, "application/json", deploy("d2", 2))
	s.res.Steps[len(s.res.Steps)-1].Body = toGeneric(map[string]any{"replicas": field(created.body, "spec", "replicas")})
	s.callCT("scale-deployment", "PATCH", deploys+"/d2/scale", ctMerge, map[string]any{"spec": map[string]any{"replicas": 5}})
	s.callCT("patch-deployment-replicas", "PATCH", deploys+"/d2", ctMerge, map[string]any{"spec": map[string]any{"replicas": 6}})
	s.callReduced("deployment-replicas", "GET", deploys+"/d2", func(r *response) any {
		return map[string]any{"replicas": field(r.body, "spec", "replicas")}
	})

	// 5. a policy and a binding as stored: their defaults
	s.call("policy-defaults", "POST", vaps, map[string]any{"apiVersion": "admissionregistration.k8s.io/v1",
		"kind": "ValidatingAdmissionPolicy", "metadata": map[string]any{"name": label + "-defaults"},
		"spec": map[string]any{
			"matchConstraints": map[string]any{"resourceRules": []any{rule([]any{""}, []any{"secrets"}, []any{"CREATE"})}},
			"validations":      []any{map[string]any{"expression": "true"}}}})
	s.cleanups = append(s.cleanups, func() { _, _ = s.t.do(s.ctx, "DELETE", vaps+"/"+label+"-defaults", nil) })
	s.call("binding-defaults", "POST", bindings, map[string]any{"apiVersion": "admissionregistration.k8s.io/v1",
		"kind": "ValidatingAdmissionPolicyBinding", "metadata": map[string]any{"name": label + "-defaults"},
		"spec": map[string]any{"policyName": label + "-defaults", "validationActions": []any{"Deny"},
			"matchResources": map[string]any{"excludeResourceRules": []any{rule([]any{""}, []any{"secrets"}, []any{"CREATE"})}}}})
	s.cleanups = append(s.cleanups, func() { _, _ = s.t.do(s.ctx, "DELETE", bindings+"/"+label+"-defaults", nil) })
}
