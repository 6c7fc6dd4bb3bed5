package main

import (
	"time"
)

// scMutatingPolicy binds MutatingAdmissionPolicies (GA in 1.36) to writes in the scenario's
// namespace (labelled for them): an ApplyConfiguration that adds a label and a sidecar to a
// Deployment's pod template (merged by name, defaulted after it), on create, update, apply
// and dry run; a ValidatingAdmissionPolicy that requires the label the mutation adds; a value
// on an atomic list refused, then passed over under Ignore; JSONPatch with variables,
// jsonpatch.escapeKey, a test that fails (the patch discarded) and a bad path; a
// matchCondition; IfNeeded policies run again in the second pass; and the policies and
// bindings as stored (defaults, generation).
func scMutatingPolicy(s *sc) {
	label := "map-" + s.run
	// the namespace label's key is fixed and its value the run (recorded in the binding,
	// where the run is normalized in values but not in keys)
	nsKey := "diff.kinformer.dev/map"
	maps := "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies"
	bindings := "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings"
	vaps := "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
	vapBindings := "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
	nsPatch := map[string]any{"metadata": map[string]any{"labels": map[string]any{nsKey: s.run}}}
	if r, err := s.t.doAs(s.ctx, "PATCH", "/api/v1/namespaces/"+s.ns, ctMerge, "", nsPatch); err != nil || r.status != 200 {
		s.fail("label the namespace: %v %v", err, r)
	}
	rules := func(group, resource string) map[string]any {
		return map[string]any{"resourceRules": []any{map[string]any{"apiGroups": []any{group},
			"apiVersions": []any{"v1"}, "resources": []any{resource}, "operations": []any{"CREATE", "UPDATE"}}}}
	}
	apply := func(expr string) map[string]any {
		return map[string]any{"patchType": "ApplyConfiguration", "applyConfiguration": map[string]any{"expression": expr}}
	}
	jsonPatch := func(expr string) map[string]any {
		return map[string]any{"patchType": "JSONPatch", "jsonPatch": map[string]any{"expression": expr}}
	}
	// policy creates a policy (recorded: its defaults) and a binding selecting the labelled
	// namespace (recorded for the first policy only).
	policy := func(name string, spec map[string]any, record bool) {
		body := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1",
			"kind": "MutatingAdmissionPolicy", "metadata": map[string]any{"name": name}, "spec": spec}
		binding := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1",
			"kind": "MutatingAdmissionPolicyBinding", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"policyName": name, "matchResources": map[string]any{
				"namespaceSelector": map[string]any{"matchLabels": map[string]any{nsKey: s.run}}}}}
		if record {
			s.call("create-policy", "POST", maps, body)
			s.call("create-binding", "POST", bindings, binding)
		} else {
			s.setup("POST", maps, body)
			s.setup("POST", bindings, binding)
		}
		s.cleanups = append(s.cleanups, func() {
			_, _ = s.t.do(s.ctx, "DELETE", bindings+"/"+name, nil)
			_, _ = s.t.do(s.ctx, "DELETE", maps+"/"+name, nil)
		})
	}
	// waitFor repeats a dry-run create of body until done (policies reach kube-apiserver's
	// admission through its informers), at most 20s; not recorded.
	waitFor := func(path string, body map[string]any, done func(*response) bool) {
		deadline := time.Now().Add(20 * time.Second)
		for {
			r, err := s.t.do(s.ctx, "POST", path+"?dryRun=All", body)
			if err == nil && done(r) {
				return
			}
			if time.Now().After(deadline) {
				s.fail("the policy was not applied within 20s: %v", r)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	deployments := "/apis/apps/v1/namespaces/" + s.ns + "/deployments"
	deployment := func(name string) map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{"replicas": 1,
				"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}}}}}
	}
	labelled := func(key string) func(*response) bool {
		return func(r *response) bool {
			if r.status != 201 {
				return false
			}
			m, _ := r.body.(map[string]any)
			meta, _ := m["metadata"].(map[string]any)
			labels, _ := meta["labels"].(map[string]any)
			_, ok := labels[key]
			return ok
		}
	}

	// 1. a sidecar and a label on Deployments; a VAP requiring the label sees the mutation
	p1 := label + "-sidecar"
	policy(p1, map[string]any{
		"matchConstraints":   rules("apps", "deployments"),
		"reinvocationPolicy": "Never",
		"mutations": []any{apply(`Object{
			metadata: Object.metadata{labels: {"mesh": "injected"}},
			spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{
				containers: [Object.spec.template.spec.containers{name: "proxy", image: "envoy:1.30"}]}}}}`)},
	}, true)
	s.call("get-policy", "GET", maps+"/"+p1, nil)
	waitFor(deployments, deployment("probe"), labelled("mesh"))
	vap := label + "-require-mesh"
	s.setup("POST", vaps, map[string]any{"apiVersion": "admissionregistration.k8s.io/v1",
		"kind": "ValidatingAdmissionPolicy", "metadata": map[string]any{"name": vap},
		"spec": map[string]any{"matchConstraints": map[string]any{"resourceRules": rules("apps", "deployments")["resourceRules"],
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{nsKey: s.run}}},
			"validations": []any{
				map[string]any{"expression": "has(object.metadata.labels) && 'mesh' in object.metadata.labels", "message": "not meshed"},
				map[string]any{"expression": "object.metadata.name != 'vap-probe'", "message": "probe"}}}})
	s.setup("POST", vapBindings, map[string]any{"apiVersion": "admissionregistration.k8s.io/v1",
		"kind": "ValidatingAdmissionPolicyBinding", "metadata": map[string]any{"name": vap},
		"spec": map[string]any{"policyName": vap, "validationActions": []any{"Deny"}}})
	s.cleanups = append(s.cleanups, func() {
		_, _ = s.t.do(s.ctx, "DELETE", vapBindings+"/"+vap, nil)
		_, _ = s.t.do(s.ctx, "DELETE", vaps+"/"+vap, nil)
	})
	waitFor(deployments, deployment("vap-probe"), func(r *response) bool { return r.status >= 400 })
	s.call("create-mutated", "POST", deployments, deployment("web"))
	s.call("get-mutated", "GET", deployments+"/web", nil)
	s.call("create-dry-run", "POST", deployments+"?dryRun=All", deployment("dry"))
	s.callCT("apply-mutated", "PATCH", deployments+"/api?fieldManager=diff", ctApply, deployment("api"))
	s.callCT("scale-through-patch", "PATCH", deployments+"/web", ctMerge, map[string]any{"spec": map[string]any{"replicas": 2}})

	// 2. an atomic list refused (Fail); the same passed over under Ignore, the next mutation kept
	p2 := label + "-atomic"
	policy(p2, map[string]any{
		"matchConstraints":   rules("", "configmaps"),
		"reinvocationPolicy": "Never",
		"matchConditions": []any{map[string]any{"name": "atomic",
			"expression": "has(object.metadata.labels) && object.metadata.labels['case'] == 'atomic'"}},
		"mutations": []any{apply(`Object{metadata: Object.metadata{ownerReferences: [Object.metadata.ownerReferences{apiVersion: "v1", kind: "ConfigMap", name: "x", uid: "6c1c6f6e-0000-4000-8000-000000000000"}]}}`)},
	}, false)
	p3 := label + "-ignore"
	policy(p3, map[string]any{
		"matchConstraints":   rules("", "configmaps"),
		"failurePolicy":      "Ignore",
		"reinvocationPolicy": "Never",
		"matchConditions": []any{map[string]any{"name": "ignore",
			"expression": "has(object.metadata.labels) && object.metadata.labels['case'] == 'ignore'"}},
		"mutations": []any{
			apply(`Object{metadata: Object.metadata{labels: {"first": "applied"}, ownerReferences: [Object.metadata.ownerReferences{apiVersion: "v1", kind: "ConfigMap", name: "x", uid: "6c1c6f6e-0000-4000-8000-000000000000"}]}}`),
			apply(`Object{metadata: Object.metadata{annotations: {"after": "kept"}}}`),
		},
	}, false)
	// 3. JSONPatch with variables, escapeKey, a failed test, a missing path
	p4 := label + "-patch"
	policy(p4, map[string]any{
		"matchConstraints":   rules("", "configmaps"),
		"reinvocationPolicy": "Never",
		"variables":          []any{map[string]any{"name": "op", "expression": "request.operation.lowerAscii()"}},
		"matchConditions": []any{map[string]any{"name": "patch",
			"expression": "has(object.metadata.labels) && object.metadata.labels['case'].startsWith('patch')"}},
		"mutations": []any{jsonPatch(`
			(object.metadata.labels['case'] == 'patch-test' ?
				[JSONPatch{op: "add", path: "/metadata/annotations", value: {"before-test": "x"}},
				 JSONPatch{op: "test", path: "/metadata/labels/case", value: "other"}] : []) +
			(object.metadata.labels['case'] == 'patch-missing' ?
				[JSONPatch{op: "add", path: "/spec/missing", value: "x"}] : []) +
			[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("seen-" + variables.op), value: "yes"},
			 JSONPatch{op: "replace", path: "/data", value: {"replaced": variables.op}}]`)},
	}, false)
	// 4. IfNeeded policies: each increments an annotation; the second pass runs the IfNeeded ones again
	inc := `Object{metadata: Object.metadata{annotations: {"count": string(int(object.metadata.annotations["count"]) + 1)}}}`
	for i, reinvocation := range []string{"IfNeeded", "IfNeeded", "Never"} {
		policy(label+"-count-"+string(rune('a'+i)), map[string]any{
			"matchConstraints":   rules("", "configmaps"),
			"reinvocationPolicy": reinvocation,
			"matchConditions": []any{map[string]any{"name": "count",
				"expression": "has(object.metadata.labels) && object.metadata.labels['case'] == 'count'"}},
			"mutations": []any{apply(inc)},
		}, false)
	}
	cm := func(name, c string) map[string]any {
		return configMap(name, map[string]string{"case": c}, map[string]string{"a": "1"})
	}
	waitFor(s.cms(""), cm("probe", "atomic"), func(r *response) bool { return r.status >= 400 })
	waitFor(s.cms(""), cm("probe", "ignore"), func(r *response) bool {
		m, _ := r.body.(map[string]any)
		meta, _ := m["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		return r.status == 201 && ann["after"] == "kept"
	})
	waitFor(s.cms(""), cm("probe", "patch"), labelled("seen-create"))
	counted := func(r *response) bool {
		m, _ := r.body.(map[string]any)
		meta, _ := m["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		return r.status == 201 && ann["count"] == "5"
	}
	countCM := func(name string) map[string]any {
		c := cm(name, "count")
		c["metadata"].(map[string]any)["annotations"] = map[string]any{"count": "0"}
		return c
	}
	waitFor(s.cms(""), countCM("probe"), counted)
	s.call("create-atomic-refused", "POST", s.cms(""), cm("atomic", "atomic"))
	s.call("create-ignored-failure", "POST", s.cms(""), cm("ignored", "ignore"))
	s.call("create-json-patch", "POST", s.cms(""), cm("patched", "patch"))
	s.call("update-json-patch", "PUT", s.cm("patched"), cm("patched", "patch"))
	s.call("create-json-patch-failed-test", "POST", s.cms(""), cm("tested", "patch-test"))
	s.call("create-json-patch-missing-path", "POST", s.cms(""), cm("missing", "patch-missing"))
	s.call("create-counted", "POST", s.cms(""), countCM("counted"))
	s.call("create-not-matched", "POST", s.cms(""), cm("plain", "none"))
}
