package main

import "time"

// scCRDSchemaChange stores custom objects, then changes their CRD's schema under them (as an
// operator's upgrade does): a field no longer declared, a new default. Observed: the objects
// read and listed through the new schema (pruned, defaulted) at their old resourceVersions, a
// watch open across the change (its end, its events), a watch from a resourceVersion before
// the change, a no-op update of an object as read (stored or not) and a second one, and reads
// once the schema is changed back (what was written comes back).
func scCRDSchemaChange(s *sc) {
	group := "sch-" + s.run + ".example.com"
	text := map[string]any{"type": "string"}
	spec := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props}
	}
	crd := specCRD(group, "gadgets", "gadget", "Gadget",
		spec(map[string]any{"size": map[string]any{"type": "integer"}, "extra": text}))
	first := field(crd, "spec", "versions")
	second := field(specCRD(group, "gadgets", "gadget", "Gadget", spec(map[string]any{
		"size": map[string]any{"type": "integer"},
		"mode": map[string]any{"type": "string", "default": "fast"},
	})), "spec", "versions")
	base := s.registerCRD(group, "gadgets", crd)
	crdPath := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets." + group
	gadget := func(name string, size int) map[string]any {
		return map[string]any{
			"apiVersion": group + "/v1", "kind": "Gadget", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"size": size, "extra": "kept"},
		}
	}
	a := s.call("create-a", "POST", base, gadget("a", 1))
	b := s.call("create-b", "POST", base, gadget("b", 2))
	list := s.call("list-before", "GET", base, nil)
	before := rvOf(list)
	watchPath := base + "?" + q("watch", "1", "resourceVersion", before)
	open := s.watch(watchPath)

	// the schema changes; a real server applies it once its CRD handler has seen the update:
	// wait (unrecorded) until the default shows
	setSchema := func(versions any) {
		r, err := s.t.doAs(s.ctx, "PATCH", crdPath, ctMerge, "", map[string]any{"spec": map[string]any{"versions": versions}})
		if err != nil || r.status != 200 {
			s.fail("patch the CRD: %v %v", err, r)
		}
	}
	setSchema(second)
	if _, ok := s.pollUntil(base+"/b", 15*time.Second, func(r *response) bool {
		return str(r.body, "spec", "mode") == "fast"
	}); !ok {
		s.fail("the new schema did not show within 15s")
	}
	// the watch open across the change: how it ends, and whether it says anything
	open.collect(watchWait, nil)
	s.recordWatch("watch-across-change", watchPath, open)

	getB := s.call("get-b-after", "GET", base+"/b", nil)
	s.fact("same resourceVersion", rvOf(getB) == rvOf(b))
	listAfter := s.call("list-after", "GET", base, nil)
	s.fact("list resourceVersion moved", rvOf(listAfter) != before)
	old := s.watch(watchPath)
	old.collect(watchWait, untilN(1))
	s.recordWatch("watch-from-before", watchPath, old)

	// an update of the object as read now (defaulted, pruned): stored or not
	getA := s.call("get-a-after", "GET", base+"/a", nil)
	put := s.call("update-as-read", "PUT", base+"/a", getA.body)
	s.fact("update stored", rvOf(put) != rvOf(a))
	again := s.call("update-again", "PUT", base+"/a", put.body)
	s.fact("second update stored", rvOf(again) != rvOf(put))

	// the schema goes back: b (never written since) shows its pruned field again, a (written
	// through the second schema) does not
	setSchema(first)
	if _, ok := s.pollUntil(base+"/b", 15*time.Second, func(r *response) bool {
		return str(r.body, "spec", "mode") == ""
	}); !ok {
		s.fail("the first schema did not show again within 15s")
	}
	s.call("get-b-reverted", "GET", base+"/b", nil)
	s.call("get-a-reverted", "GET", base+"/a", nil)
}
