package main

import "fmt"

// scCRDRulesExtensions checks what CEL adds beyond its core that Kubernetes' environment has:
// cel-go's two-variable comprehensions (all, exists, existsOne with an index or key and a
// value; transformList, transformMap, transformMapEntry, with filters) and sets library
// (sets.contains, sets.equivalent, sets.intersects), Kubernetes' format library
// (format.named, format.<name>(), validate), sortBy, flatten, first and last, and indexing
// of lists and maps a rule builds. First 116 CRDs (dryRun=All), each with one rule, accepted
// or refused as kube-apiserver types and prices it (the cost of a built list's items,
// sortBy's, an unbounded list's; flatten of a list of scalars; list and map literals of
// mixed types, refused by its homogeneous aggregate literals); then a CRD with rules of each kind and objects (dryRun=All) that pass
// and break each: a duplicate key in transformMapEntry (the evaluation error), unsorted
// ports, labels of a team, sets of names, names of each format (a messageExpression giving
// the format's first complaint).
func scCRDRulesExtensions(s *sc) {
	group := "kx-" + s.run + ".example.com"
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All"
	str := func(n int) any { return map[string]any{"type": "string", "maxLength": n} }
	props := map[string]any{
		"names":  map[string]any{"type": "array", "maxItems": 10, "items": str(20)},
		"ports":  map[string]any{"type": "array", "maxItems": 10, "items": map[string]any{"type": "integer"}},
		"free":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"labels": map[string]any{"type": "object", "maxProperties": 10, "additionalProperties": str(20)},
		"name":   str(63),
	}
	for n, rule := range crdRulesExtensionsRules {
		plural := fmt.Sprintf("exts%d", n)
		crd := specCRD(group, plural, fmt.Sprintf("ext%d", n), fmt.Sprintf("Ext%d", n), map[string]any{
			"type": "object", "properties": props,
			"x-kubernetes-validations": []any{map[string]any{"rule": rule}}})
		r, err := s.t.do(s.ctx, "POST", crds, crd)
		if err != nil {
			s.fail("rule %d: %v", n, err)
		}
		var body any = map[string]any{"rule": rule, "accepted": true}
		if r.status != 201 {
			body = r.body
		}
		s.recordAs(fmt.Sprintf("rule-%03d", n), "POST "+crds, r, body)
	}

	rule := func(r, m string) any { return map[string]any{"rule": r, "message": m} }
	rules := []any{
		rule("!has(self.ports) || self.ports.all(i, p, i == 0 || p > self.ports[i - 1])", "ports must increase"),
		rule("!has(self.labels) || self.labels.transformMapEntry(k, v, {v: k}).size() == self.labels.size()", "label values must be unique"),
		rule("!has(self.ports) || self.ports.transformList(i, p, p > 1000, p).size() <= 1", "at most one high port"),
		rule("!has(self.labels) || self.labels.exists(k, v, k.startsWith('team') && v != '')", "a team label"),
		rule("!has(self.labels) || self.labels.existsOne(k, v, v == 'owner')", "one owner"),
		rule("!has(self.labels) || self.labels.transformMap(k, v, v.size()).all(k, n, n <= 8)", "label values up to 8"),
		rule("!has(self.names) || sets.contains(['a', 'b', 'c', 'd'], self.names)", "names from a to d"),
		rule("!has(self.names) || !sets.intersects(self.names, ['x', 'y'])", "no x or y"),
		rule("!has(self.names) || self.names.size() < 3 || sets.equivalent(self.names, ['a', 'b', 'c'])", "three names are a, b and c"),
		rule("!has(self.names) || self.names.sortBy(n, n) == self.names", "names sorted"),
		map[string]any{"rule": "!has(self.name) || !format.dns1123Label().validate(self.name).hasValue()",
			"messageExpression": "'name: ' + format.dns1123Label().validate(self.name).value()[0]"},
		map[string]any{"rule": "!has(self.name) || !format.named('labelValue').value().validate(self.name).hasValue()",
			"messageExpression": "format.labelValue().validate(self.name).value()[0]"},
	}
	crd := specCRD(group, "checks", "check", "Check", map[string]any{
		"type": "object", "x-kubernetes-validations": rules, "properties": props})
	base := s.registerCRD(group, "checks", crd)
	for i, spec := range []map[string]any{
		{"ports": []any{80, 443, 8080}, "labels": map[string]any{"team": "a", "x": "owner"}, "names": []any{"a", "b"}, "name": "ok-name"},
		{"ports": []any{443, 80}},
		{"ports": []any{80, 2000, 3000}},
		{"ports": []any{}},
		{"labels": map[string]any{"team": "a", "b": "a", "x": "owner"}},
		{"labels": map[string]any{"x": "owner"}},
		{"labels": map[string]any{"team": "", "x": "owner"}},
		{"labels": map[string]any{"team": "a"}},
		{"labels": map[string]any{"team": "a", "x": "owner", "y": "owner"}},
		{"labels": map[string]any{"team": "a-long-value", "x": "owner"}},
		{"names": []any{"a", "e"}},
		{"names": []any{"x"}},
		{"names": []any{"a", "b", "d"}},
		{"names": []any{"c", "b", "a"}},
		{"names": []any{}},
		{"name": "Not_A_Label"},
		{"name": "a.b"},
		{"name": "-x-"},
		{"name": "ok-name-x-"},
	} {
		body := map[string]any{"apiVersion": group + "/v1", "kind": "Check",
			"metadata": map[string]any{"name": fmt.Sprintf("c%d", i)}, "spec": spec}
		s.call(fmt.Sprintf("check-%d", i), "POST", base+"?dryRun=All", body)
	}
}

// crdRulesExtensionsRules are scCRDRulesExtensions' rules, one CRD each.
var crdRulesExtensionsRules = []string{
	"'labels: ' + self.labels.transformList(k, v, k)[0] == 'x'",
	"self.labels.transformList(k, v, v)[0].size() < 5",
	"self.names.transformList(i, n, n + n).all(x, x.size() < 50)",
	"self.names.transformList(i, n, n + n)[0].contains('a')",
	"self.names.transformList(i, n, i > 1, n)[0] == 'a'",
	"self.labels.transformMap(k, v, v + v)['a'] == 'x'",
	"self.labels.transformMapEntry(k, v, {v: k})['a'] == 'x'",
	"self.labels.transformMapEntry(k, v, {v: k}).all(k, k.size() < 5)",
	"self.names.all(i, n, n.size() < 5)",
	"self.names.exists(i, n, self.names[i] == n)",
	"self.names.existsOne(i, n, n == 'a')",
	"self.labels.all(k, v, k.startsWith(v))",
	"self.free.all(i, v, v.startsWith('a'))",
	"self.free.transformList(i, v, v).size() > 0",
	"self.free.transformList(i, v, v)[0] == 'a'",
	"self.ports.transformList(i, p, p * 2).sum() < 100",
	"self.ports.all(i, p, self.ports.all(j, q, i == j || p != q))",
	"self.names.sortBy(n, n.size()) == self.names",
	"self.names.first().hasValue()",
	"self.names.last().hasValue()",
	"[1, 2, 3].transformList(i, v, v * 2)[1] == 4",
	"(self.ports.size() > 1 ? [1, 2] : [3])[0] == 1",
	"(self.names + ['x'])[0].size() < 30",
	"['abc', 'de'][0].contains(self.name)",
	"{'a': 'bcd'}['a'].contains(self.name)",
	"self.labels.transformMap(k, v, k == 'a', v).size() < 3",
	"self.names.transformList(i, n, [n])[0][0] == 'a'",
	"self.labels.exists(k, v, self.labels.exists(k2, v2, k != k2 && v == v2))",
	"self.names.map(n, n + n)[0].contains('x')",
	"self.names.filter(n, n.size() > 1)[0].contains('x')",
	"self.names.sortBy(n, n) == self.names",
	"self.names.sortBy(n, n.size())[0].contains('a')",
	"self.free.sortBy(n, n.size()) == self.free",
	"self.ports.sortBy(p, -p)[0] == 1",
	"self.labels.transformList(k, v, v).sortBy(x, x)[0] == 'a'",
	"self.names.sort() == self.names",
	"self.names.map(n, n.size()).sum() < 100",
	"self.names.transformList(i, n, n.size()).sum() < 100",
	"self.names.exists(n, self.names.exists(m, n != m && n.startsWith(m)))",
	"self.names.all(i, n, self.labels.exists(k, v, k == n && v.size() > i))",
	"self.labels.transformMapEntry(k, v, {k + '-x': v + v}).all(k, v, k.size() < 50 && v.size() < 50)",
	"self.labels.transformMapEntry(k, v, {k: [v]}).all(k, v, v[0].contains('a'))",
	"self.names.transformList(i, n, {n: i}).all(m, m.size() == 1)",
	"self.free.transformMap(i, v, v.size()).size() < 10",
	"self.names.transformList(i, n, n)[0].matches('^a')",
	"self.names.transformList(i, n, n.lowerAscii()).exists(x, x.matches('^[a-z]+$'))",
	"self.labels.exists(k, v, v.contains(k))",
	"self.labels.transformList(k, v, k + v).exists(x, x.contains('a'))",
	"self.names.existsOne(i, n, n.contains('x'))",
	"self.names.exists_one(n, n.contains('x'))",
	"(self.names.size() > 2 ? self.names : ['x']).all(n, n.size() < 5)",
	"(self.names.size() > 2 ? ['abc'] : ['x'])[0].contains(self.name)",
	"[[1, 2], [3]].transformList(i, l, l.size()) == [2, 1]",
	"self.ports.transformList(i, p, i).all(x, x < 10)",
	"self.labels.all(k, v, self.names.exists(n, n == v))",
	"self.names.sort()[0].contains('a')",
	"self.names.reverse()[0].contains('a')",
	"self.names.distinct()[0].contains('a')",
	"self.names.slice(0, 1)[0].contains('a')",
	"self.free.sort()[0].contains('a')",
	"self.name.split('-')[0].contains('a')",
	"self.labels.transformList(k, v, v).sort()[0].contains('a')",
	"self.free.sortBy(n, n)[0] == 'a'",
	"self.ports.sortBy(p, p) == self.ports",
	"self.names.sortBy(n, -n.size())[0].size() < 20",
	"[3, 1].sortBy(x, x)[0] == 1",
	"self.names.map(n, [n, n])[0][1].contains('a')",
	"lists.range(5).transformList(i, v, v * 2)[0] == 0",
	"sets.contains(self.names, ['a'])",
	"sets.equivalent(self.names, self.names)",
	"sets.intersects(self.names, ['x', 'y'])",
	"sets.contains(self.ports, [1, 2])",
	"sets.contains(self.names, [1])",
	"sets.contains(self.free, ['a'])",
	"sets.intersects(self.labels.transformList(k, v, v), self.names)",
	"!format.dns1123Label().validate(self.name).hasValue()",
	"!format.named('uri').value().validate(self.name).hasValue()",
	"format.named('nope').hasValue()",
	"format.dns1123Subdomain().validate(self.name).orValue([]).size() == 0",
	"format.uuid() == format.named('uuid').value()",
	"format.dns1123Label().validate(self.name).value()[0] == 'x'",
	"format.nope().validate(self.name).hasValue()",
	"format.qualifiedName().validate(self.name) == optional.none()",
	"self.names.all(n, !format.labelValue().validate(n).hasValue())",
	"self.labels.all(k, v, !format.qualifiedName().validate(k).hasValue() && !format.labelValue().validate(v).hasValue())",
	"format.datetime().validate(self.name).hasValue() || format.date().validate(self.name).hasValue()",
	"format.byte().validate(self.name).hasValue()",
	"sets.contains(format.dns1123Label().validate(self.name).orValue([]), ['x'])",
	"self.names.flatten().size() >= 0",
	"['a'].flatten().size() == 1",
	"[['a'], ['b']].flatten().size() == 2",
	"self.names.flatten(1).size() >= 0",
	"[].flatten().size() == 0",
	"self.ports.flatten().size() >= 0",
	"self.names.first().value() == 'a'",
	"self.names.last().orValue('z') != 'b'",
	"self.labels.transformList(k, v, [v]).flatten().size() < 20",
	"[[1], 2].flatten().size() == 2",
	"[[1], 2].flatten().size() == 2",
	"[1, 2.0].size() == 2",
	"[1, 'a', 2.0].size() == 3",
	"['a', self.name].size() == 2",
	"[1, self.ports[0]].size() == 2",
	"['a', self.ports[0]].size() == 2",
	"{'a': 1, 'b': 'x'}.size() == 2",
	"{'a': 1, 2: 3}.size() == 2",
	"{'a': 1, 2: 'x'}.size() == 2",
	"[null, 1].size() == 2",
	"[1, null].size() == 2",
	"[[1], ['a']].size() == 2",
	"[1, dyn('a')].size() == 2",
	"[duration('1s'), 1].size() == 2",
	"[1u, 1].size() == 2",
	"[self.names, ['a']].size() == 2",
	"[self.names, [1]].size() == 2",
	"[{'a': 1}, {'b': 'x'}].size() == 2",
}
