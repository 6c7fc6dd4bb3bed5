package main

import "fmt"

// scCRDRuleChecks creates CRDs whose x-kubernetes-validations rules kube-apiserver refuses
// when the CRD is written: rules whose own fields are wrong (a message with a line break, an
// unknown reason, a fieldPath naming no field), rules that do not compile (a syntax error, a
// field the schema does not declare, a name nothing declares, an operator between types it has
// no overload for, a rule that is not a bool, a message expression that is not a string), and
// rules it estimates too costly (strings, lists and maps without maxLength, maxItems or maxProperties, which it takes
// to be as large as a request allows), or whose total is too costly, or whose transition rule
// (oldSelf) sits under the items of a list that is not a map list; and CRDs with the same
// rules bounded, which are accepted. Each refused CRD has one rule (or rules whose errors come
// out in one order), as kube-apiserver walks sibling properties in Go's map order.
func scCRDRuleChecks(s *sc) {
	group := "kc-" + s.run + ".example.com"
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	// with sets pairs of keys and values on m.
	with := func(m map[string]any, extra ...any) map[string]any {
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	r := func(rule string, extra ...any) map[string]any { return with(map[string]any{"rule": rule}, extra...) }
	rule := func(text string, extra ...any) []any { return []any{r(text, extra...)} }
	str := func(extra ...any) map[string]any { return with(map[string]any{"type": "string"}, extra...) }
	list := func(items map[string]any, extra ...any) map[string]any {
		return with(map[string]any{"type": "array", "items": items}, extra...)
	}
	object := func(props map[string]any, extra ...any) map[string]any {
		return with(map[string]any{"type": "object", "properties": props}, extra...)
	}
	crd := func(plural string, spec map[string]any, versions ...map[string]any) map[string]any {
		kind := string(rune(plural[0]-'a'+'A')) + plural[1:len(plural)-1]
		return specCRD(group, plural, plural[:len(plural)-1], kind, append([]map[string]any{spec}, versions...)...)
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
	// What compiling a rule finds, each on a spec with three fields.
	fields := map[string]any{
		"replicas": map[string]any{"type": "integer"},
		"name":     str("maxLength", 10),
		"my-field": str("maxLength", 5),
	}
	on := func(rules ...any) map[string]any { return object(fields, "x-kubernetes-validations", rules) }
	refused("syntax-error", "syntaxes", on(r("self.replicas > 1 &&")))
	refused("undefined-field", "undefineds", on(r("self.foo == 1")))
	refused("undefined-field-in-has", "hases", on(r("has(self.foo)")))
	refused("undeclared-reference", "undeclareds", on(r("[1, 2].all(x, x > y)")))
	refused("two-errors", "twoerrors", on(r("self.foo == self.bar")))
	refused("no-overload-equals", "equals", on(r("self.replicas == 'a'")))
	refused("no-overload-int-double", "doubles", on(r("self.replicas == 1.0")))
	refused("no-overload-plus", "pluses", on(r("self.name + 1 == 'a'")))
	refused("no-overload-member", "members", on(r("self.name.startsWith(1)")))
	refused("no-overload-size", "sizes", on(r("size(self.replicas) > 0")))
	refused("no-overload-ternary", "ternaries", on(r("int(self.name) == 1 ? true : 'x'")))
	refused("not-a-bool", "notbools", on(r("self.name.size()")))
	refused("message-expression-not-a-string", "notstrings", on(r("self.replicas > 0", "messageExpression", "self.replicas + 1")))
	refused("message-expression-undefined-field", "msgfields", on(r("self.replicas > 0", "messageExpression", "self.foo")))
	refused("optional-old-self-unused", "optionals", on(r("self.replicas > 0", "optionalOldSelf", true)))
	refused("compile-error-and-optional-old-self", "bothoptionals", on(r("self.name == 1", "message", "m", "reason", "FieldValueForbidden", "fieldPath", ".name", "optionalOldSelf", false)))
	// A rule's own fields, checked first; a wrong one at a node keeps every rule there from
	// being compiled (self.foo is not reported).
	refused("message-line-break", "linebreaks", on(r("self.replicas > 0", "message", "a\nb")))
	refused("message-blank", "blanks", on(r("self.replicas > 0", "message", "   ")))
	refused("multi-line-rule-without-message", "multilines", on(r("self.replicas > 0\n  || self.name == 'a'")))
	refused("message-expression-blank", "msgblanks", on(r("self.replicas > 0", "messageExpression", "  ")))
	refused("field-path-blank", "pathblanks", on(r("self.replicas > 0", "fieldPath", "  ")))
	refused("field-path-not-a-field", "nofields", on(r("self.replicas > 0", "fieldPath", "spec.replicas")))
	refused("reason-and-field-path-block-compiling", "blocks", on(r("self.foo > 0"), r("self.replicas > 0", "reason", "Bad", "fieldPath", ".nope")))
	// Accepted: a property named with a dash read by its escaped name, numbers compared
	// across types, a multi-line rule with a message.
	accepted("escapeds", on(r("self.my__dash__field == 'a' || self.replicas < 1.5"), r("self.replicas > 0\n", "message", "ok"), r("self.replicas > 0", "fieldPath", "['my-field']")))
	// Versions with different schemas are checked one by one (spec.versions[i]); the same
	// schema in every version once (spec.validation).
	refused("versions-differ", "differs", costly, object(map[string]any{"x": map[string]any{"type": "integer"}}))
	refused("versions-same", "sames", costly, costly)
}

// specCRD is a namespaced CRD of group whose versions (v1, the storage version, then v2, ...)
// have an object schema with one property, spec, of each schema given.
func specCRD(group, plural, singular, kind string, specs ...map[string]any) map[string]any {
	versions := make([]any, len(specs))
	for i, spec := range specs {
		versions[i] = map[string]any{
			"name": fmt.Sprintf("v%d", i+1), "served": true, "storage": i == 0,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type": "object", "properties": map[string]any{"spec": spec}}},
		}
	}
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced", "versions": versions,
			"names": map[string]any{"plural": plural, "singular": singular, "kind": kind},
		},
	}
}
