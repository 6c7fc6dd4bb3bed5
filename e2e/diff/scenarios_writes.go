package main

import (
	"encoding/base64"
	"encoding/json"
	"sort"
	"strings"
	"time"
)

// Scenarios around writes a controller's tests lean on: dry run, server-side
// apply's field ownership, TokenRequest, OpenAPI schemas. See
// scenarios_controllers.go for the ones that need kube-controller-manager.

// scDryRun sends every write verb with dryRun=All and checks nothing changed:
// a watch opened before the dry runs sees only the sentinel write made after
// them, GET and list answer as before (a list's collection resourceVersion
// keeps its rank: no object resourceVersion was handed out in between).
func scDryRun(s *sc) {
	a := s.call("create-a", "POST", s.cms(""), configMap("a", map[string]string{"app": "a"}, map[string]string{"k": "1"}))
	s.call("list-before", "GET", s.cms(""), nil)
	// From a's own resourceVersion: nothing of this scenario's happens after
	// it but the dry runs and the sentinel.
	path := s.cms(q("watch", "1", "resourceVersion", rvOf(a)))
	h := s.watch(path)
	dry := func(extra ...string) string { return q(append([]string{"dryRun", "All"}, extra...)...) }

	s.call("create", "POST", s.cms(dry()), configMap("b", nil, map[string]string{"k": "1"}))
	s.call("create-existing", "POST", s.cms(dry()), configMap("a", nil, map[string]string{"k": "other"}))
	s.call("create-invalid", "POST", s.cms(dry()), configMap("Bad_Name", nil, nil))
	upd := configMap("a", map[string]string{"app": "a"}, map[string]string{"k": "2"})
	upd["metadata"].(map[string]any)["resourceVersion"] = rvOf(a)
	s.call("update", "PUT", s.cm("a")+"?"+dry(), upd)
	s.call("update-missing", "PUT", s.cm("missing")+"?"+dry(), configMap("missing", nil, map[string]string{"k": "1"}))
	s.callCT("patch-merge", "PATCH", s.cm("a")+"?"+dry(), ctMerge, map[string]any{"data": map[string]any{"k": "3"}})
	s.callCT("patch-json", "PATCH", s.cm("a")+"?"+dry(), ctJSONPatch, []any{map[string]any{"op": "replace", "path": "/data/k", "value": "4"}})
	s.callCT("patch-strategic", "PATCH", s.cm("a")+"?"+dry(), ctStrategic, map[string]any{"metadata": map[string]any{"labels": map[string]any{"extra": "5"}}})
	s.callCT("apply", "PATCH", s.cm("a")+"?"+dry("fieldManager", "kd-apply"), ctApply, configMap("a", nil, map[string]string{"k": "6"}))
	s.callCT("apply-force", "PATCH", s.cm("a")+"?"+dry("fieldManager", "kd-apply", "force", "true"), ctApply, configMap("a", nil, map[string]string{"k": "6"}))
	s.callCT("apply-create", "PATCH", s.cm("c")+"?"+dry("fieldManager", "kd-apply"), ctApply, configMap("c", nil, map[string]string{"k": "1"}))
	s.call("delete", "DELETE", s.cm("a")+"?"+dry(), nil)
	s.call("delete-missing", "DELETE", s.cm("missing")+"?"+dry(), nil)
	s.call("deletecollection", "DELETE", s.cms(dry()), nil)
	// A status subresource: the namespace's own (ConfigMaps have none).
	nsPath := "/api/v1/namespaces/" + s.ns
	ns := s.setup("GET", nsPath, nil).body
	if m, ok := ns.(map[string]any); ok {
		m["status"] = map[string]any{"phase": "Active", "conditions": []any{map[string]any{
			"type": "KinformerDryRun", "status": "True", "reason": "DryRun", "message": "not stored",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}
	}
	s.call("update-status", "PUT", nsPath+"/status?"+dry(), ns)
	s.call("bad-dry-run-value", "POST", s.cms(q("dryRun", "Sometimes")), configMap("d", nil, nil))

	s.call("get-after", "GET", s.cm("a"), nil)
	s.call("get-created-after", "GET", s.cm("b"), nil)
	s.call("get-namespace-after", "GET", nsPath, nil)
	s.call("list-after", "GET", s.cms(""), nil)
	// The sentinel: the first event the watch sees must be this real write.
	s.setup("POST", s.cms(""), configMap("sentinel", nil, map[string]string{"k": "1"}))
	h.collect(watchWait, untilN(1))
	res := s.recordWatch("watch", path, h)
	s.fact("types", eventTypes(res.events))
	first := ""
	if len(res.events) > 0 {
		first = str(res.events[0], "object", "metadata", "name")
	}
	s.fact("firstEventIsSentinel", first == "sentinel")
}

// scSSA drives server-side apply's field ownership: a conflict between two
// appliers (409 with one cause per field), force, shared ownership of an equal
// value, an Update by a third manager taking a field over; managedFields after
// each.
func scSSA(s *sc) {
	apply := func(name, manager string, force bool, data map[string]string) *response {
		params := []string{}
		if manager != "" {
			params = append(params, "fieldManager", manager)
		}
		if force {
			params = append(params, "force", "true")
		}
		return s.callCT(name, "PATCH", s.cm("a")+"?"+q(params...), ctApply, configMap("a", nil, data))
	}
	apply("apply-a", "mgr-a", false, map[string]string{"k": "1", "ka": "a"})
	apply("apply-b-conflict", "mgr-b", false, map[string]string{"k": "2", "kb": "b"})
	apply("apply-b-conflict-two-fields", "mgr-b", false, map[string]string{"k": "2", "ka": "b"})
	apply("apply-b-force", "mgr-b", true, map[string]string{"k": "2", "kb": "b"})
	apply("apply-a-shared-same-value", "mgr-a", false, map[string]string{"k": "2", "ka": "a"})
	s.callCT("update-c-merge-patch", "PATCH", s.cm("a")+"?"+q("fieldManager", "mgr-c"), ctMerge,
		map[string]any{"data": map[string]any{"k": "3", "kc": "c"}})
	apply("apply-a-after-update-conflict", "mgr-a", false, map[string]string{"k": "2", "ka": "a"})
	apply("apply-a-drops-field", "mgr-a", false, map[string]string{"k": "3"})
	apply("apply-without-manager", "", false, map[string]string{"k": "1"})
	s.callCT("apply-wrong-kind", "PATCH", s.cm("a")+"?"+q("fieldManager", "mgr-a"), ctApply,
		map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "a"}})
	s.call("get", "GET", s.cm("a"), nil)
}

// jwtShape is what a token says without its bytes: the header's alg and
// whether it names a key, the claim names, and the claims that do not vary
// between two servers set up alike (aud, sub, the kubernetes.io claim with
// uids normalized later, expiry minus issue time).
func jwtShape(tok string) any {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return map[string]any{"notAJWT": true, "parts": len(parts)}
	}
	dec := func(p string) map[string]any {
		b, err := base64.RawURLEncoding.DecodeString(p)
		if err != nil {
			return nil
		}
		var m map[string]any
		if json.Unmarshal(b, &m) != nil {
			return nil
		}
		return m
	}
	hdr, claims := dec(parts[0]), dec(parts[1])
	_, kid := hdr["kid"]
	names := make([]string, 0, len(claims))
	for k := range claims {
		names = append(names, k)
	}
	sort.Strings(names)
	num := func(k string) float64 { f, _ := claims[k].(float64); return f }
	return map[string]any{
		"header":       map[string]any{"alg": hdr["alg"], "hasKid": kid, "typ": hdr["typ"]},
		"claimNames":   names,
		"aud":          claims["aud"],
		"sub":          claims["sub"],
		"iss":          claims["iss"],
		"kubernetes":   claims["kubernetes.io"],
		"expMinusIat":  num("exp") - num("iat"),
		"nbfEqualsIat": num("nbf") == num("iat"),
		"signed":       parts[2] != "",
	}
}

// scToken asks for ServiceAccount tokens (TokenRequest) and uses one.
func scToken(s *sc) {
	s.call("create-sa", "POST", "/api/v1/namespaces/"+s.ns+"/serviceaccounts",
		map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "robot"}})
	tr := func(spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
	}
	tokenPath := func(sa string) string { return "/api/v1/namespaces/" + s.ns + "/serviceaccounts/" + sa + "/token" }
	// The token with the default audience (the API server's own) and the
	// one with another audience.
	toks := map[string]string{}
	for _, v := range []struct {
		name string
		spec map[string]any
	}{
		{"token", map[string]any{"audiences": []string{"kd-audience"}, "expirationSeconds": 3600}},
		{"token-defaults", map[string]any{}},
	} {
		r, err := s.t.do(s.ctx, "POST", tokenPath("robot"), tr(v.spec))
		if err != nil {
			s.fail("%s: %v", v.name, err)
		}
		body := r.body
		if t := str(r.body, "status", "token"); t != "" {
			toks[v.name] = t
			if m, ok := r.body.(map[string]any); ok {
				c := make(map[string]any, len(m))
				for k, x := range m {
					c[k] = x
				}
				st, _ := m["status"].(map[string]any)
				cs := make(map[string]any, len(st))
				for k, x := range st {
					cs[k] = x
				}
				cs["token"] = jwtShape(t)
				c["status"] = cs
				body = c
			}
		}
		s.recordAs(v.name, "POST "+tokenPath("robot"), r, body)
	}
	s.call("token-too-short", "POST", tokenPath("robot"), tr(map[string]any{"expirationSeconds": 60}))
	s.call("token-missing-sa", "POST", tokenPath("missing"), tr(map[string]any{}))
	use := func(name, tok, method, path string, body any) {
		if tok == "" {
			return
		}
		r, err := s.t.doAs(s.ctx, method, path, "application/json", tok, body)
		if err != nil {
			s.fail("%s: %v", name, err)
		}
		s.recordAs(name, method+" "+path+" (as the ServiceAccount)", r, r.body)
	}
	// The token authenticates (as the ServiceAccount, which RBAC lets do
	// nothing here); one for another audience does not.
	use("use-token", toks["token-defaults"], "GET", s.cms(""), nil)
	use("whoami", toks["token-defaults"], "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
		map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
	use("use-token-other-audience", toks["token"], "GET", s.cms(""), nil)
}

// openAPISchemaView reduces an OpenAPI schema to its property names, required
// fields and x-kubernetes-* extensions (on the schema and on each property).
func openAPISchemaView(schema any) any {
	m, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	ext := func(v map[string]any) map[string]any {
		out := map[string]any{}
		for k, x := range v {
			if strings.HasPrefix(k, "x-kubernetes-") {
				out[k] = x
			}
		}
		return out
	}
	props, _ := m["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	propExt := map[string]any{}
	for k, p := range props {
		names = append(names, k)
		if pm, ok := p.(map[string]any); ok {
			if e := ext(pm); len(e) > 0 {
				propExt[k] = e
			}
		}
	}
	sort.Strings(names)
	return map[string]any{"properties": names, "required": m["required"], "extensions": ext(m), "propertyExtensions": propExt}
}

// scOpenAPI reads the OpenAPI documents kubectl explain and typed clients use,
// reduced to what is not version-specific noise.
func scOpenAPI(s *sc) {
	s.callReduced("v3-index", "GET", "/openapi/v3", func(r *response) any {
		if r.status != 200 {
			return r.body
		}
		paths, _ := field(r.body, "paths").(map[string]any)
		out := map[string]any{}
		for _, k := range []string{"api/v1", "apis/apps/v1"} {
			e, ok := paths[k].(map[string]any)
			if !ok {
				out[k] = absent
				continue
			}
			u, _ := e["serverRelativeURL"].(string)
			keys := sortedKeys(e)
			out[k] = map[string]any{"keys": keys, "urlPrefix": strings.SplitN(u, "?hash=", 2)[0], "hasHash": strings.Contains(u, "?hash=")}
		}
		return map[string]any{"paths": out}
	})
	s.callReduced("v3-core", "GET", "/openapi/v3/api/v1", func(r *response) any {
		if r.status != 200 {
			return r.body
		}
		schemas, _ := field(r.body, "components", "schemas").(map[string]any)
		pod, _ := schemas["io.k8s.api.core.v1.Pod"].(map[string]any)
		return map[string]any{
			"openapi":    field(r.body, "openapi"),
			"container":  openAPISchemaView(schemas["io.k8s.api.core.v1.Container"]),
			"podGVK":     pod["x-kubernetes-group-version-kind"],
			"hasPodList": schemas["io.k8s.api.core.v1.PodList"] != nil,
		}
	})
	s.callReduced("v3-missing-group", "GET", "/openapi/v3/apis/nothing.example.com/v1", func(r *response) any {
		if r.status == 200 {
			return "200 (a document)"
		}
		return r.body
	})
	s.callReduced("v2", "GET", "/openapi/v2", func(r *response) any {
		if r.status != 200 {
			return r.body
		}
		defs, _ := field(r.body, "definitions").(map[string]any)
		pod, _ := defs["io.k8s.api.core.v1.Pod"].(map[string]any)
		return map[string]any{
			"swagger": field(r.body, "swagger"),
			"podGVK":  pod["x-kubernetes-group-version-kind"],
		}
	})
}

// scOpenAPICRD: a CRD's schema published in OpenAPI v3 (what `kubectl explain <crd>.spec`
// reads): the group version appears in the index, and its document holds the kind's schema.
func scOpenAPICRD(s *sc) {
	group, _ := s.widgetCRD(s.ns)
	gv := "apis/" + group + "/v1"
	// Publication is asynchronous (the CRD OpenAPI controller): wait for the index entry.
	_, ok := s.pollUntil("/openapi/v3", 15*time.Second, func(r *response) bool {
		paths, _ := field(r.body, "paths").(map[string]any)
		return paths[gv] != nil
	})
	s.callReduced("v3-index", "GET", "/openapi/v3", func(r *response) any {
		paths, _ := field(r.body, "paths").(map[string]any)
		return map[string]any{"hasGroupVersion": paths[gv] != nil}
	})
	s.fact("published", ok)
	s.callReduced("v3-group-version", "GET", "/openapi/v3/"+gv, func(r *response) any {
		if r.status != 200 {
			return r.body
		}
		schemas, _ := field(r.body, "components", "schemas").(map[string]any)
		keys := sortedKeys(schemas)
		var w map[string]any
		for _, k := range keys {
			if strings.HasSuffix(k, ".v1.Widget") {
				w, _ = schemas[k].(map[string]any)
			}
		}
		props, _ := w["properties"].(map[string]any)
		return map[string]any{
			"schemaNames": keys,
			"widget":      openAPISchemaView(w),
			"widgetGVK":   w["x-kubernetes-group-version-kind"],
			"spec":        props["spec"],
			"status":      props["status"],
		}
	})
}
