package main

// scCRDCost creates CRDs whose x-kubernetes-validations rules kube-apiserver estimates too
// costly (strings, lists and maps without maxLength, maxItems or maxProperties, which it takes
// to be as large as a request allows), or whose total is too costly, or whose transition rule
// (oldSelf) sits under the items of a list that is not a map list; and CRDs with the same
// rules bounded, which are accepted. Each refused CRD has one rule (or rules whose errors come
// out in one order), as kube-apiserver walks sibling properties in Go's map order.
func scCRDCost(s *sc) {
	group := "kc-" + s.run + ".example.com"
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	rule := func(r string, extra ...string) []any {
		m := map[string]any{"rule": r}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return []any{m}
	}
	str := func(extra ...any) map[string]any {
		m := map[string]any{"type": "string"}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	list := func(items map[string]any, extra ...any) map[string]any {
		m := map[string]any{"type": "array", "items": items}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	object := func(props map[string]any, extra ...any) map[string]any {
		m := map[string]any{"type": "object", "properties": props}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	crd := func(plural string, spec map[string]any, versions ...map[string]any) map[string]any {
		vs := []any{map[string]any{
			"name": "v1", "served": true, "storage": true,
			"schema": map[string]any{"openAPIV3Schema": object(map[string]any{"spec": spec})},
		}}
		for i, v := range versions {
			vs = append(vs, map[string]any{
				"name": "v" + string(rune('2'+i)), "served": true, "storage": false,
				"schema": map[string]any{"openAPIV3Schema": object(map[string]any{"spec": v})},
			})
		}
		kind := string(rune(plural[0]-'a'+'A')) + plural[1:len(plural)-1]
		return map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": plural + "." + group},
			"spec": map[string]any{
				"group": group, "scope": "Namespaced", "versions": vs,
				"names": map[string]any{"plural": plural, "singular": plural[:len(plural)-1], "kind": kind},
			},
		}
	}
	refused := func(step, plural string, spec map[string]any, versions ...map[string]any) {
		if r := s.call(step, "POST", crds, crd(plural, spec, versions...)); r.status == 201 {
			s.cleanups = append(s.cleanups, func() { _, _ = s.t.do(s.ctx, "DELETE", crds+"/"+plural+"."+group, nil) })
		}
	}
	// An accepted CRD's body differs in ways this scenario is not about (what the first
	// response holds before the CRD's controllers ran), so only its acceptance is checked.
	accepted := func(plural string, spec map[string]any) {
		s.setup("POST", crds, crd(plural, spec))
		s.cleanups = append(s.cleanups, func() { _, _ = s.t.do(s.ctx, "DELETE", crds+"/"+plural+"."+group, nil) })
	}
	tags := func(items map[string]any, extra ...any) map[string]any {
		return object(map[string]any{"tags": list(items, extra...)})
	}
	// A rule on each item of a list of 100 unbounded strings: 3.1x the per-rule budget.
	costly := tags(str("x-kubernetes-validations", rule("self.matches('^a')")), "maxItems", 100)
	refused("rule-over-budget", "costlies", costly)
	// The same with maxLength: accepted.
	accepted("boundeds", tags(str("maxLength", 63, "x-kubernetes-validations", rule("self.matches('^a')")), "maxItems", 100))
	// Over both the rule's budget and the schema's total.
	refused("rule-and-total-over-budget", "totals", tags(str("x-kubernetes-validations", rule("self.contains('abc')")), "maxItems", 1000))
	// Nested loops over bounded items.
	refused("nested-loops", "loops", object(map[string]any{"tags": list(str("maxLength", 1000), "maxItems", 1000,
		"x-kubernetes-validations", rule("self.all(x, self.exists(y, x == y))"))}))
	// A rule on an unbounded list: more than 100x.
	refused("unbounded-list", "unboundeds", object(map[string]any{"tags": list(str(),
		"x-kubernetes-validations", rule("self.all(x, self.exists(y, x == y))"))}))
	// A rule on each value of an unbounded map.
	refused("map-values", "maps", object(map[string]any{"m": map[string]any{"type": "object",
		"additionalProperties": str("x-kubernetes-validations", rule("self.contains('abc')"))}}))
	// kubernetes/kubernetes#124234: a messageExpression concatenating a number made a string.
	refused("message-expression", "messages", object(map[string]any{"config": object(
		map[string]any{"attempts": map[string]any{"type": "integer"}},
		"x-kubernetes-validations", rule("self.attempts >= 0", "messageExpression", "'invalid attempts: ' + string(self.attempts)"))}))
	// Just over the budget: the factor with six decimals.
	refused("factor-six-decimals", "decimals", object(map[string]any{"tags": list(str(),
		"x-kubernetes-validations", rule("self.all(x, x.size() < 10 && x.size() > 0 && x != '')"))}))
	// A list and a map whose rules add up over the total, the list's over its own budget too.
	keyword := rule("self.contains('keyword')")
	refused("total-of-two", "twos", object(map[string]any{
		"list":  list(str("maxLength", 5000, "x-kubernetes-validations", keyword), "maxItems", 100000),
		"map":   map[string]any{"type": "object", "maxProperties": 1000, "additionalProperties": str("maxLength", 5000, "x-kubernetes-validations", keyword)},
		"field": map[string]any{"type": "integer", "x-kubernetes-validations": rule("self > 50 && self < 100")},
	}))
	// oldSelf under a set list's items: nothing pairs an old item with a new one.
	refused("old-self-in-set", "sets", tags(str("maxLength", 100, "x-kubernetes-validations", rule("self == oldSelf")),
		"maxItems", 100, "x-kubernetes-list-type", "set"))
	// Both: oldSelf under an unbounded list of unbounded strings.
	refused("old-self-and-cost", "olds", tags(str("x-kubernetes-validations", rule("self == oldSelf"))))
	// Versions with different schemas are checked one by one (spec.versions[i]); the same
	// schema in every version once (spec.validation).
	refused("versions-differ", "differs", costly, object(map[string]any{"x": map[string]any{"type": "integer"}}))
	refused("versions-same", "sames", costly, costly)
}
