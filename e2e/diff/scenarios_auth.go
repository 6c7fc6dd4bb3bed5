package main

import (
	"fmt"
	"math/rand"
	"strings"
)

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
	// a path verb with nothing after it: kube cannot read the request's kind,
	// and says so (500) before it looks at credentials
	anon("no-kind", "GET", "/api/v1/watch?x=1", nil)
	as("no-kind-wrong-token", "not-a-token", "GET", "/apis/apps/v1/proxy", "application/json", nil)
	as("wrong-token", "not-a-token", "GET", s.cms(""), "application/json", nil)
	as("wrong-token-version", "not-a-token", "GET", "/version", "application/json", nil)
	// Random paths under /api and /apis, the same on every server (a fixed
	// seed): kube reads their attributes from the path alone, empty segments,
	// path verbs (watch, proxy) and queries included, and a path verb with
	// nothing after it is its 500 for everyone.
	rng := rand.New(rand.NewSource(34))
	segs := []string{"api", "apis", "v1", "apps", "namespaces", "default", "pods", "configmaps",
		"x", "status", "scale", "log", "watch", "proxy", "finalize", "deployments", "widgets",
		"nodes", "token", "serviceaccounts", "", "a%20b", "version", "healthz"}
	methods := []string{"GET", "GET", "GET", "POST", "PUT", "PATCH", "DELETE"}
	queries := []string{"", "", "?watch=1", "?watch=false", "?watch=", "?watch=yes",
		"?fieldSelector=metadata.name%3Dp1", "?fieldSelector=metadata.name%3D%3Dp2,a%3Db", "?labelSelector=a%3Db"}
	for i := 0; i < 40; i++ {
		parts := []string{[]string{"api", "apis"}[rng.Intn(2)]}
		for n := rng.Intn(8); n > 0; n-- {
			parts = append(parts, segs[rng.Intn(len(segs))])
		}
		path := "/" + strings.Join(parts, "/") + queries[rng.Intn(len(queries))]
		m := methods[rng.Intn(len(methods))]
		var body any
		if m == "POST" || m == "PUT" || m == "PATCH" {
			body = map[string]any{}
		}
		anon(fmt.Sprintf("random-%02d", i), m, path, body)
	}
	// nothing was written
	s.call("after", "GET", s.cm("a"), nil)
	s.call("after-create", "GET", s.cm("b"), nil)
}
