package main

import "time"

// scCRDRules registers a CRD whose schema carries x-kubernetes-validations (CEL) rules as CRD
// authors write them (kube-rs's `#[x_kube(validation)]`, controller-gen's XValidation
// markers): rules on objects, strings, integers, numbers, list items and the root; message,
// messageExpression, fieldPath and reason; a transition rule (oldSelf) on a field and on the
// items of a map list; a rule meeting a missing field; and rules left unchecked because the
// object's types are wrong; and a rule added to the CRD after an object was stored (ratcheting).
// Each step breaks one rule.
func scCRDRules(s *sc) {
	group := "kc-" + s.run + ".example.com"
	rule := func(r string, extra ...string) map[string]any {
		m := map[string]any{"rule": r}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	rules := func(rs ...map[string]any) []any {
		out := make([]any, len(rs))
		for i, r := range rs {
			out[i] = r
		}
		return out
	}
	props := map[string]any{
		"replicas":    map[string]any{"type": "integer"},
		"maxReplicas": map[string]any{"type": "integer"},
		"name": map[string]any{"type": "string", "maxLength": 20,
			"x-kubernetes-validations": rules(rule("self.startsWith('w-')"))},
		"size": map[string]any{"type": "integer",
			"x-kubernetes-validations": rules(rule("self % 2 == 0", "messageExpression", "self > 100 ? 'a large size must be even' : 'a small size must be even'"))},
		"ratio": map[string]any{"type": "number",
			"x-kubernetes-validations": rules(rule("self < 1.5", "message", "ratio must be below 1.5"))},
		"mode": map[string]any{"type": "string", "maxLength": 20,
			"x-kubernetes-validations": rules(rule("self != 'forbidden'", "message", "this mode is forbidden", "reason", "FieldValueForbidden"))},
		"immutable": map[string]any{"type": "string", "maxLength": 20,
			"x-kubernetes-validations": rules(rule("self == oldSelf", "message", "Value is immutable"))},
		"a":   map[string]any{"type": "string", "maxLength": 20},
		"b":   map[string]any{"type": "string", "maxLength": 20},
		"opt": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "integer"}}},
		"items": map[string]any{
			"type": "array", "maxItems": 10, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []string{"name"},
			"items": map[string]any{"type": "object", "required": []string{"name"}, "properties": map[string]any{
				"name": map[string]any{"type": "string", "maxLength": 20},
				"weight": map[string]any{"type": "integer",
					"x-kubernetes-validations": rules(rule("self >= oldSelf", "message", "weight may not decrease"))},
			}, "x-kubernetes-validations": rules(rule("!has(self.weight) || self.weight >= 0", "message", "weight must not be negative"))},
		},
	}
	spec := map[string]any{
		"type": "object", "properties": props,
		"x-kubernetes-validations": rules(
			rule("!has(self.replicas) || !has(self.maxReplicas) || self.replicas <= self.maxReplicas", "message", "replicas must not exceed maxReplicas"),
			rule("!has(self.a) || has(self.b)", "message", "b is required with a", "fieldPath", ".b", "reason", "FieldValueRequired"),
			rule("!has(self.opt) || self.opt.x > 0", "message", "opt.x must be positive"),
		),
	}
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "rulers." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "rulers", "singular": "ruler", "kind": "Ruler"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "properties": map[string]any{"spec": spec},
					"x-kubernetes-validations": rules(rule("self.metadata.name.size() <= 30", "message", "the name may have 30 characters at most")),
				}},
			}},
		},
	}
	base := s.registerCRD(group, "rulers", crd)
	ruler := func(name string, spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": group + "/v1", "kind": "Ruler", "metadata": map[string]any{"name": name}, "spec": spec}
	}
	for _, c := range []struct {
		name string
		spec map[string]any
	}{
		{"valid", map[string]any{"replicas": 2, "maxReplicas": 3, "name": "w-a", "size": 4, "ratio": 1, "mode": "m", "a": "x", "b": "y",
			"opt": map[string]any{"x": 1}, "items": []any{map[string]any{"name": "i", "weight": 1}}}},
		{"object-rule", map[string]any{"replicas": 4, "maxReplicas": 3}},
		{"string-rule-no-message", map[string]any{"name": "x"}},
		{"message-expression", map[string]any{"size": 3}},
		{"number-rule", map[string]any{"ratio": 2.5}},
		{"number-rule-integer-value", map[string]any{"ratio": 2}},
		{"reason-forbidden", map[string]any{"mode": "forbidden"}},
		{"field-path-required", map[string]any{"a": "x"}},
		{"item-rule", map[string]any{"items": []any{map[string]any{"name": "i", "weight": -1}}}},
		{"no-such-key", map[string]any{"opt": map[string]any{}}},
		{"blocked-by-type", map[string]any{"replicas": "three", "size": 3}},
	} {
		s.call("create-"+c.name, "POST", base, ruler("r-"+c.name, c.spec))
	}
	s.call("create-root-rule", "POST", base, ruler("r-this-name-is-far-too-long-for-the-rule", map[string]any{}))
	// transition rules: on create they are not evaluated; on update they compare with the old
	ok := s.setup("POST", base, ruler("u", map[string]any{"immutable": "a", "items": []any{map[string]any{"name": "i", "weight": 5}}}))
	put := func(step string, spec map[string]any) {
		u := ruler("u", spec)
		u["metadata"].(map[string]any)["resourceVersion"] = rvOf(ok)
		s.call(step, "PUT", base+"/u", u)
	}
	put("update-immutable", map[string]any{"immutable": "b", "items": []any{map[string]any{"name": "i", "weight": 5}}})
	put("update-weight-decrease", map[string]any{"immutable": "a", "items": []any{map[string]any{"name": "i", "weight": 4}}})
	put("update-new-item-any-weight", map[string]any{"immutable": "a", "items": []any{map[string]any{"name": "i", "weight": 5}, map[string]any{"name": "j", "weight": 1}}})
	s.callCT("merge-patch-immutable", "PATCH", base+"/u", "application/merge-patch+json",
		map[string]any{"spec": map[string]any{"immutable": "c"}})
	s.call("get-after", "GET", base+"/u", nil)
	crdRatcheting(s, rule, rules)
}

// crdRatcheting stores an object, then adds a rule and a maxLength it breaks to its CRD: an
// update that leaves the breaking values alone is accepted (validation ratcheting; the rule's
// failure as a warning), one that changes either is refused.
func crdRatcheting(s *sc, rule func(string, ...string) map[string]any, rules func(...map[string]any) []any) {
	group := "kr-" + s.run + ".example.com"
	crdPath := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/legacies." + group
	schema := func(withRule bool) map[string]any {
		name := map[string]any{"type": "string", "maxLength": 20}
		note := map[string]any{"type": "string", "maxLength": 20}
		if withRule {
			name["x-kubernetes-validations"] = rules(rule("self.startsWith('w-')"))
			note["maxLength"] = 4
		}
		return map[string]any{"openAPIV3Schema": map[string]any{
			"type": "object", "properties": map[string]any{"spec": map[string]any{
				"type": "object", "properties": map[string]any{"name": name, "note": note, "other": map[string]any{"type": "string", "maxLength": 20}},
			}, "status": map[string]any{"type": "object", "properties": map[string]any{"phase": map[string]any{"type": "string", "maxLength": 20}}}},
		}}
	}
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "legacies." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "legacies", "singular": "legacy", "kind": "Legacy"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true, "schema": schema(false),
				"subresources": map[string]any{"status": map[string]any{}}}},
		},
	}
	base := s.registerCRD(group, "legacies", crd)
	legacy := func(name string, spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": group + "/v1", "kind": "Legacy", "metadata": map[string]any{"name": name}, "spec": spec}
	}
	stored := s.setup("POST", base, legacy("old", map[string]any{"name": "legacy", "note": "too long", "other": "a"}))
	// the rule comes after the object
	current := s.setup("GET", crdPath, nil)
	tightened := current.body.(map[string]any)
	tightened["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["schema"] = schema(true)
	s.setup("PUT", crdPath, tightened)
	// until the server enforces it (a real server swaps the resource's storage asynchronously)
	enforced := false
	for i := 0; i < 100 && !enforced; i++ {
		r, err := s.t.do(s.ctx, "POST", base+"?dryRun=All", legacy("probe", map[string]any{"name": "x"}))
		enforced = err == nil && r.status == 422
		if !enforced {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !enforced {
		s.fail("the new rule was not enforced within 10s")
	}
	putTo := func(step, sub string, spec map[string]any) {
		o := legacy("old", spec)
		o["metadata"].(map[string]any)["resourceVersion"] = rvOf(stored)
		if sub == "/status" {
			o["status"] = map[string]any{"phase": "Ready"}
		}
		r := s.call(step, "PUT", base+"/old"+sub, o)
		if r.warnings == nil {
			s.fact("warnings", []string{})
		} else {
			s.fact("warnings", r.warnings)
		}
	}
	put := func(step string, spec map[string]any) { putTo(step, "", spec) }
	put("ratchet-changed-value", map[string]any{"name": "changed", "note": "too long", "other": "a"})
	put("ratchet-changed-schema-value", map[string]any{"name": "legacy", "note": "longer still", "other": "a"})
	// a status write cannot change the spec: the stored one is what is checked
	putTo("status-write-with-a-breaking-spec", "/status", map[string]any{"name": "changed", "note": "longer still", "other": "a"})
	stored = s.setup("GET", base+"/old", nil)
	put("ratchet-unchanged-values", map[string]any{"name": "legacy", "note": "too long", "other": "b"})
}
