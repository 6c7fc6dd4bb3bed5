package main

import (
	"sort"
	"time"
)

// giveUpBound bounds a scenario's polls once one of them has run out.
const giveUpBound = 2 * time.Second

// Content types of the patch flavours kube-apiserver accepts.
const (
	ctMerge     = "application/merge-patch+json"
	ctJSONPatch = "application/json-patch+json"
	ctStrategic = "application/strategic-merge-patch+json"
	ctApply     = "application/apply-patch+yaml" // JSON is YAML
)

// callCT is call with a Content-Type of its own (patches).
func (s *sc) callCT(name, method, path, contentType string, body any) *response {
	r, err := s.t.doAs(s.ctx, method, path, contentType, "", body)
	if err != nil {
		s.fail("%s: %s %s: %v", name, method, path, err)
	}
	s.res.Steps = append(s.res.Steps, &step{
		Step: name, Request: method + " " + path, Status: r.status, ContentType: r.contentType, Body: r.body,
	})
	return r
}

// callReduced performs a request and records only reduce(body): for answers
// too large or too version-specific to compare whole (OpenAPI documents), or
// whose exact bytes mean nothing (tokens). The full response is returned.
func (s *sc) callReduced(name, method, path string, reduce func(*response) any) *response {
	r, err := s.t.do(s.ctx, method, path, nil)
	if err != nil {
		s.fail("%s: %s %s: %v", name, method, path, err)
	}
	s.res.Steps = append(s.res.Steps, &step{
		Step: name, Request: method + " " + path, Status: r.status, ContentType: r.contentType, Body: toGeneric(reduce(r)),
	})
	return r
}

// recordAs records a step made of an already performed request, with the
// body given (a reduced view; made plain JSON values, as a decoded body is,
// so normalization reaches every string in it).
func (s *sc) recordAs(name, request string, r *response, body any) {
	s.res.Steps = append(s.res.Steps, &step{
		Step: name, Request: request, Status: r.status, ContentType: r.contentType, Body: toGeneric(body),
	})
}

// pollUntil repeats GET path (not recorded) every 200ms until done says the
// answer is settled or bound passes; it returns the last answer and whether
// it settled. Controllers act asynchronously (garbage collection, namespace
// deletion): the recording keeps only the settled state, and a server that
// never settles costs the bound, never a hang. Once a poll of the scenario has
// run out, the following ones wait at most giveUpBound: a server without the
// controller would only repeat the wait; so do the polls of later scenarios
// waiting for the same controller (s.controller).
func (s *sc) pollUntil(path string, bound time.Duration, done func(*response) bool) (*response, bool) {
	if (s.gaveUp || s.t.lacking[s.controller]) && bound > giveUpBound {
		bound = giveUpBound
	}
	deadline := time.Now().Add(bound)
	for {
		r, err := s.t.do(s.ctx, "GET", path, nil)
		if err != nil {
			s.fail("poll %s: %v", path, err)
		}
		if done(r) {
			return r, true
		}
		if time.Now().After(deadline) {
			s.gaveUp = true
			if s.controller != "" {
				s.t.lacking[s.controller] = true
			}
			return r, false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ownerRef is an ownerReferences entry pointing at obj (a decoded object).
func ownerRef(obj any, blockOwnerDeletion bool) map[string]any {
	ref := map[string]any{
		"apiVersion": str(obj, "apiVersion"),
		"kind":       str(obj, "kind"),
		"name":       str(obj, "metadata", "name"),
		"uid":        str(obj, "metadata", "uid"),
	}
	if blockOwnerDeletion {
		ref["blockOwnerDeletion"] = true
	}
	return ref
}

// withOwners returns cm with these ownerReferences.
func withOwners(cm map[string]any, refs ...map[string]any) map[string]any {
	l := make([]any, len(refs))
	for i, r := range refs {
		l[i] = r
	}
	cm["metadata"].(map[string]any)["ownerReferences"] = l
	return cm
}

// withFinalizers returns cm with these finalizers.
func withFinalizers(cm map[string]any, fs ...string) map[string]any {
	cm["metadata"].(map[string]any)["finalizers"] = fs
	return cm
}

// settledView reduces a list to what garbage collection and namespace
// deletion decide, independent of their timing and of which client wrote:
// each object's name, ownerReferences, finalizers and whether it is being
// deleted, by name.
func settledView(r *response) any {
	if r.status != 200 {
		return r.body
	}
	out := []any{}
	its := items(r.body)
	sort.Slice(its, func(i, j int) bool { return str(its[i], "metadata", "name") < str(its[j], "metadata", "name") })
	for _, it := range its {
		v := map[string]any{"name": str(it, "metadata", "name")}
		if o := field(it, "metadata", "ownerReferences"); o != nil {
			v["ownerReferences"] = o
		}
		if f := field(it, "metadata", "finalizers"); f != nil {
			v["finalizers"] = f
		}
		v["terminating"] = field(it, "metadata", "deletionTimestamp") != nil
		out = append(out, v)
	}
	return map[string]any{"items": out}
}

// namesOf are the names in a list answer, sorted, but the root CA
// publisher's kube-root-ca.crt (there throughout a scenario of the garbage
// collector, which never touches it; the settled view still shows it).
func namesOf(r *response) []string {
	var n []string
	for _, name := range allNamesOf(r) {
		if name != rootCA {
			n = append(n, name)
		}
	}
	return n
}

// allNamesOf are the names in a list answer, sorted.
func allNamesOf(r *response) []string {
	n := names(r.body)
	sort.Strings(n)
	return n
}

func hasName(r *response, name string) bool {
	for _, n := range names(r.body) {
		if n == name {
			return true
		}
	}
	return false
}
