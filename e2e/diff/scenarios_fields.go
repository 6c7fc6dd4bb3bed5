package main

import (
	"encoding/json"
	"strings"
)

// scFieldValidation writes objects with fields their kind does not declare, and keys given
// twice, under each fieldValidation, and records the answers and their Warning headers.
func scFieldValidation(s *sc) {
	warned := func(r *response) {
		if r.warnings == nil {
			s.fact("warnings", []string{})
			return
		}
		s.fact("warnings", r.warnings)
	}
	cms := s.cms("")
	with := func(q string) string {
		if strings.Contains(cms, "?") {
			return cms + "&" + q
		}
		return cms + "?" + q
	}
	// raw JSON bodies: Go maps cannot hold a key twice, and their order is the body's
	unknown := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME","labelz":{"a":"b"}},"data":{"a":"1"},"extra":true,"zeta":{"q":1}}`
	body := func(name string) json.RawMessage { return json.RawMessage(strings.ReplaceAll(unknown, "NAME", name)) }
	warned(s.call("create-unknown-warn", "POST", cms, body("w")))
	warned(s.call("create-unknown-strict", "POST", with("fieldValidation=Strict"), body("s")))
	warned(s.call("create-unknown-ignore", "POST", with("fieldValidation=Ignore"), body("i")))
	warned(s.call("create-field-validation-unsupported", "POST", with("fieldValidation=Bogus"), body("b")))
	dups := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","name":"d"},"zz":1,"data":{"a":"1","a":"2"},"aa":2}`)
	warned(s.call("create-duplicates-strict", "POST", with("fieldValidation=Strict"), dups))
	warned(s.call("create-duplicates-warn", "POST", cms, dups))
	pod := json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"x","foo":1,"ports":[{"containerPort":80,"bar":2}],"resources":{"limits":{"cpu":"1","zz":"2"}}}],"baz":3}}`)
	warned(s.call("create-pod-nested-strict", "POST", "/api/v1/namespaces/"+s.ns+"/pods?fieldValidation=Strict", pod))
	// the warnings go with an error too: kube-apiserver records them while it decodes
	warned(s.call("create-unknown-already-exists", "POST", cms, body("w")))
	invalidName := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"UPPER"},"zz":1}`)
	warned(s.call("create-unknown-invalid", "POST", cms, invalidName))
	warned(s.call("get-unknown-dropped", "GET", s.cm("w"), nil))
	w := s.setup("GET", s.cm("w"), nil)
	put := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w","resourceVersion":"` + rvOf(w) + `"},"data":{"b":"2"},"zz":1}`)
	warned(s.call("update-unknown-strict", "PUT", s.cm("w")+"?fieldValidation=Strict", put))
	warned(s.call("update-unknown-warn", "PUT", s.cm("w"), put))
	warned(s.call("update-field-validation-unsupported", "PUT", s.cm("w")+"?fieldValidation=Bogus", put))
	warned(s.callCT("patch-field-validation-unsupported", "PATCH", s.cm("w")+"?fieldValidation=Bogus", "application/merge-patch+json", map[string]any{}))
	patch := map[string]any{"zz": 1, "metadata": map[string]any{"labelz": 2}, "aa": 3}
	warned(s.callCT("merge-patch-unknown-warn", "PATCH", s.cm("w"), ctMerge, patch))
	warned(s.callCT("strategic-patch-unknown-strict", "PATCH", s.cm("w")+"?fieldValidation=Strict", ctStrategic, patch))
	warned(s.callCT("json-patch-unknown-warn", "PATCH", s.cm("w"), "application/json-patch+json",
		[]any{map[string]any{"op": "add", "path": "/zz", "value": 1}}))
	// A merge patch's 422 quotes the patched object as kube-apiserver serialized it (some
	// parts in Go struct order): only what frames it is compared.
	strictPath := s.cm("w") + "?fieldValidation=Strict"
	r, err := s.t.doAs(s.ctx, "PATCH", strictPath, ctMerge, "", patch)
	if err != nil {
		s.fail("merge-patch-unknown-strict: %v", err)
	}
	msg := str(r.body, "message")
	head, _, _ := strings.Cut(msg, "Invalid value: ")
	_, tail, _ := strings.Cut(msg, "\": strict decoding error: ")
	causes, _ := field(r.body, "details", "causes").([]any)
	details, _ := field(r.body, "details").(map[string]any)
	var causeFields []any
	for _, c := range causes {
		causeFields = append(causeFields, field(c, "field"))
	}
	s.recordAs("merge-patch-unknown-strict", "PATCH "+strictPath, r, map[string]any{
		"code": field(r.body, "code"), "reason": field(r.body, "reason"), "head": head, "tail": tail,
		"causeFields": causeFields, "detailsKeys": len(details),
	})
	warned(s.callCT("merge-patch-unknown-ignore", "PATCH", s.cm("w")+"?fieldValidation=Ignore", "application/merge-patch+json",
		map[string]any{"zz": 1, "data": map[string]any{"c": "3"}}))
	// one undeclared field: with several, kube-apiserver names one or some of them, in Go map
	// order (it differs from run to run)
	warned(s.callCT("apply-unknown", "PATCH", s.cm("w")+"?fieldManager=applier", "application/apply-patch+yaml",
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "w"}, "zz": 1}))
	// a custom resource: duplicates first, then what pruning dropped, sorted
	group := "kf-" + s.run + ".example.com"
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gizmos." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{"spec": map[string]any{
						"type": "object", "properties": map[string]any{
							"replicas": map[string]any{"type": "integer"},
							"labels":   map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
						},
					}},
				}},
			}},
		},
	}
	base := s.registerCRD(group, "gizmos", crd)
	gizmo := `{"apiVersion":"` + group + `/v1","kind":"Gizmo","metadata":{"name":"NAME","labelz":1},"spec":{"zz":1,"replicas":3,"replicas":4,"aa":2,"labels":{"q":"1","q":"2"}},"top":1}`
	cr := func(name string) json.RawMessage { return json.RawMessage(strings.ReplaceAll(gizmo, "NAME", name)) }
	warned(s.call("cr-create-warn", "POST", base, cr("w")))
	warned(s.call("cr-create-strict", "POST", base+"?fieldValidation=Strict", cr("s")))
	warned(s.callCT("cr-apply-unknown", "PATCH", base+"/w?fieldManager=applier", "application/apply-patch+yaml",
		map[string]any{"apiVersion": group + "/v1", "kind": "Gizmo", "metadata": map[string]any{"name": "w"}, "spec": map[string]any{"zz": 1, "replicas": 2}}))
}
