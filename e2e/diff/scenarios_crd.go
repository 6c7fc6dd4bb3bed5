package main

// scCRDValidation registers a CRD whose schema carries the value validations CRD authors
// write (and kube-rs and controller-gen generate), then sends objects that break each one on
// its own (kube-apiserver reports the fields of one object in map order, so every step breaks
// one field, or several checks of one value).
func scCRDValidation(s *sc) {
	group := "kv-" + s.run + ".example.com"
	str := func(extra map[string]any) map[string]any {
		extra["type"] = "string"
		return extra
	}
	props := map[string]any{
		"replicas": map[string]any{"type": "integer", "minimum": 1, "maximum": 10},
		"ratio":    map[string]any{"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1, "exclusiveMaximum": true},
		"step":     map[string]any{"type": "integer", "multipleOf": 5},
		"fstep":    map[string]any{"type": "number", "multipleOf": 0.5},
		"small":    map[string]any{"type": "integer", "format": "int32"},
		"name":     str(map[string]any{"minLength": 3, "maxLength": 8, "pattern": "^[a-z]+$"}),
		"tags":     map[string]any{"type": "array", "minItems": 1, "maxItems": 3, "items": str(map[string]any{"maxLength": 4})},
		"set":      map[string]any{"type": "array", "x-kubernetes-list-type": "set", "items": str(map[string]any{})},
		"ports": map[string]any{
			"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []string{"port"},
			"items": map[string]any{"type": "object", "required": []string{"port"}, "properties": map[string]any{
				"port": map[string]any{"type": "integer"}, "name": str(map[string]any{}),
			}},
		},
		"one-label": map[string]any{"type": "object", "maxProperties": 1, "additionalProperties": str(map[string]any{})},
		"labels":    map[string]any{"type": "object", "maxProperties": 2, "additionalProperties": str(map[string]any{"maxLength": 3})},
		"when":      str(map[string]any{"format": "date-time"}),
		"day":       str(map[string]any{"format": "date"}),
		"id":        str(map[string]any{"format": "uuid"}),
		"cidr":      str(map[string]any{"format": "cidr"}),
		"choice":    str(map[string]any{"anyOf": []any{map[string]any{"pattern": "^a"}, map[string]any{"pattern": "^b"}}}),
		"both":      str(map[string]any{"allOf": []any{map[string]any{"minLength": 2}, map[string]any{"maxLength": 3}}}),
		"all":       str(map[string]any{"allOf": []any{map[string]any{"pattern": "^a"}, map[string]any{"maxLength": 1}}}),
		"one":       map[string]any{"type": "integer", "oneOf": []any{map[string]any{"minimum": 5}, map[string]any{"maximum": 7}}},
		"notx":      str(map[string]any{"not": map[string]any{"pattern": "^x"}}),
		"nul":       str(map[string]any{"nullable": true, "maxLength": 2}),
		"port":      map[string]any{"x-kubernetes-int-or-string": true, "maximum": 100, "pattern": "^[a-z]+$"},
		// an enum as kube-rs derives it: exactly one of its variants' fields
		"source": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"git": map[string]any{"type": "string"}, "image": map[string]any{"type": "string"},
			},
			"oneOf": []any{map[string]any{"required": []string{"git"}}, map[string]any{"required": []string{"image"}}},
		},
	}
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{"spec": map[string]any{
						"type": "object", "minProperties": 1, "properties": props,
					}},
				}},
			}},
		},
	}
	base := s.registerCRD(group, "gadgets", crd)
	gadget := func(name string, spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": group + "/v1", "kind": "Gadget", "metadata": map[string]any{"name": name}, "spec": spec}
	}
	for _, c := range []struct {
		name string
		spec map[string]any
	}{
		{"minimum", map[string]any{"replicas": 0}},
		{"maximum", map[string]any{"replicas": 11}},
		{"exclusive-minimum", map[string]any{"ratio": 0}},
		{"exclusive-maximum", map[string]any{"ratio": 1}},
		{"multiple-of", map[string]any{"step": 7}},
		{"multiple-of-fraction", map[string]any{"fstep": 0.7}},
		{"fraction-for-integer", map[string]any{"replicas": 2.5}},
		{"out-of-int32", map[string]any{"small": 3000000000}},
		{"min-length", map[string]any{"name": "ab"}},
		{"max-length", map[string]any{"name": "abcdefghi"}},
		{"pattern", map[string]any{"name": "AbcD"}},
		{"first-string-check-only", map[string]any{"name": "A"}},
		{"min-items", map[string]any{"tags": []string{}}},
		{"max-items-and-item-types", map[string]any{"tags": []any{1, 2, 3, 4}}},
		{"item-max-length", map[string]any{"tags": []string{"abcde"}}},
		{"set-duplicates", map[string]any{"set": []string{"a", "a", "a", "b", "b"}}},
		{"map-duplicates", map[string]any{"ports": []any{map[string]any{"port": 1}, map[string]any{"port": 1, "name": "x"}}}},
		{"max-properties", map[string]any{"labels": map[string]any{"a": "1", "b": "2", "c": "3"}}},
		{"max-one-property", map[string]any{"one-label": map[string]any{"a": "1", "b": "2"}}},
		{"additional-properties-value", map[string]any{"labels": map[string]any{"a": "1234"}}},
		{"min-properties", map[string]any{}},
		{"format-date-time", map[string]any{"when": "yesterday"}},
		{"format-date", map[string]any{"day": "2023-02-29"}},
		{"format-uuid", map[string]any{"id": "nope"}},
		{"format-cidr", map[string]any{"cidr": "10.0.0.0/33"}},
		{"any-of", map[string]any{"choice": "c"}},
		{"all-of", map[string]any{"both": "abcd"}},
		{"all-of-none", map[string]any{"all": "bc"}},
		{"one-of-two-valid", map[string]any{"one": 6}},
		{"not", map[string]any{"notx": "xy"}},
		{"nullable-null", map[string]any{"nul": nil}},
		{"nullable-too-long", map[string]any{"nul": "abc"}},
		{"int-or-string-number", map[string]any{"port": 101}},
		{"int-or-string-string", map[string]any{"port": "ABC"}},
		{"enum-both-variants", map[string]any{"source": map[string]any{"git": "g", "image": "i"}}},
		{"enum-no-variant", map[string]any{"source": map[string]any{}}},
		{"valid", map[string]any{"replicas": 3, "name": "abc", "choice": "a1", "one": 10, "when": "2024-01-01T00:00:00Z",
			"id": "123e4567-e89b-12d3-a456-426614174000", "set": []string{"a", "b"}, "source": map[string]any{"git": "g"}}},
	} {
		s.call("create-"+c.name, "POST", base, gadget("g-"+c.name, c.spec))
	}
	// the same checks on update and patch
	ok := s.setup("POST", base, gadget("u", map[string]any{"replicas": 3}))
	upd := gadget("u", map[string]any{"replicas": 3, "tags": []string{"a", "b", "c", "d"}})
	upd["metadata"].(map[string]any)["resourceVersion"] = rvOf(ok)
	s.call("update-max-items", "PUT", base+"/u", upd)
	s.callCT("merge-patch-pattern", "PATCH", base+"/u", "application/merge-patch+json",
		map[string]any{"spec": map[string]any{"name": "Upper"}})
	s.call("get-unchanged", "GET", base+"/u", nil)
}
