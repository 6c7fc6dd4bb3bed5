package main

// noCredentials as doAs's bearer: the request carries no Authorization header
// at all, as a client without credentials sends it.
const noCredentials = "\x00none"

// scAnonymous: requests without credentials and with a token no authenticator
// accepts. kube-apiserver (anonymous authentication on, its default, and RBAC)
// takes the first as system:anonymous, which may only read health and version:
// everything else is 403 in the authorizer's words, naming the request's verb,
// resource, group and namespace as the path gives them (served or not). A
// wrong token is 401 on every path, the public ones included.
func scAnonymous(s *sc) {
	s.setup("POST", s.cms(""), configMap("a", nil, map[string]string{"k": "1"}))
	as := func(name, bearer, method, path, contentType string, body any) *response {
		r, err := s.t.doAs(s.ctx, method, path, contentType, bearer, body)
		if err != nil {
			s.fail("%s: %s %s: %v", name, method, path, err)
		}
		request := method + " " + path + " (without credentials)"
		if bearer != noCredentials {
			request = method + " " + path + " (with a wrong token)"
		}
		s.recordAs(name, request, r, r.body)
		return r
	}
	anon := func(name, method, path string, body any) {
		ct := "application/json"
		if method == "PATCH" {
			ct = ctMerge
		}
		as(name, noCredentials, method, path, ct, body)
	}
	anon("list", "GET", s.cms(""), nil)
	anon("get", "GET", s.cm("a"), nil)
	anon("watch", "GET", s.cms("watch=1"), nil)
	anon("list-by-name", "GET", s.cms("fieldSelector=metadata.name%3Da"), nil)
	anon("create", "POST", s.cms(""), configMap("b", nil, map[string]string{"k": "1"}))
	anon("patch", "PATCH", s.cm("a"), map[string]any{"data": map[string]any{"k": "2"}})
	anon("delete", "DELETE", s.cm("a"), nil)
	anon("deletecollection", "DELETE", s.cms(""), nil)
	anon("namespace", "GET", "/api/v1/namespaces/"+s.ns, nil)
	anon("cluster-list", "GET", "/apis/apps/v1/deployments", nil)
	anon("subresource", "GET", "/apis/apps/v1/namespaces/"+s.ns+"/deployments/d/scale", nil)
	anon("unknown-group", "GET", "/apis/nope.example.com/v1/foos", nil)
	anon("discovery", "GET", "/api", nil)
	anon("group-version", "GET", "/apis/apps/v1", nil)
	anon("metrics", "GET", "/metrics", nil)
	anon("healthz", "GET", "/healthz", nil)
	// /version's body names each server's own build: its status is what is compared
	r, err := s.t.doAs(s.ctx, "GET", "/version", "application/json", noCredentials, nil)
	if err != nil {
		s.fail("version: %v", err)
	}
	s.recordAs("version", "GET /version (without credentials)", r, map[string]any{"status": r.status})
	as("wrong-token", "not-a-token", "GET", s.cms(""), "application/json", nil)
	as("wrong-token-version", "not-a-token", "GET", "/version", "application/json", nil)
	// nothing was written
	s.call("after", "GET", s.cm("a"), nil)
	s.call("after-create", "GET", s.cm("b"), nil)
}
