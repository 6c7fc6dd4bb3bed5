package main

import (
	"strings"
	"time"
)

// scClusterDefaults records what every cluster holds and says without being asked: the
// `kubernetes` Service in `default` with its Endpoints and EndpointSlice (addresses and the
// server's own port shown by their shape: each server listens where it listens), and the
// Warning every request to a deprecated API version gets: v1 Endpoints (create, get, list, a
// 404, delete), v1 ComponentStatus (its body left out: it reports the health of components
// each server has or lacks), and a CRD's deprecated versions (the default wording naming the
// highest served version that is not deprecated, a deprecationWarning of its own, none
// newer) and what kube-apiserver refuses in a deprecationWarning; the ServiceAccount
// admission's token volume in created Pods, and who owns what in them.
func scClusterDefaults(s *sc) {
	// the warnings, the run id (in a CRD's group) shown as <run>: facts are compared as
	// recorded
	warned := func(r *response) {
		ws := []string{}
		for _, w := range r.warnings {
			ws = append(ws, strings.ReplaceAll(w, s.run, "<run>"))
		}
		s.fact("warnings", ws)
	}
	last := func() *step { return s.res.Steps[len(s.res.Steps)-1] }
	// ips: every string that is an IP address shown as "<ip>", however deep
	ips := func(v any) any { return rewriteLeaves(v, func(_ string, leaf any) any { return ipShape(leaf) }) }
	// serverPort stands for the port the API server listens on wherever it appears as a
	// number under key (the Service's targetPort, the endpoints' port).
	serverPort := func(v any, key string) any {
		return rewriteLeaves(v, func(k string, leaf any) any {
			if _, num := leaf.(float64); num && k == key {
				return "<server port>"
			}
			return leaf
		})
	}
	// what the server wrote: labels and who owns which fields, not when
	meta := func(r *response) map[string]any {
		return map[string]any{
			"name": field(r.body, "metadata", "name"), "namespace": field(r.body, "metadata", "namespace"),
			"labels": field(r.body, "metadata", "labels"), "managedFields": field(r.body, "metadata", "managedFields"),
		}
	}
	svc := s.call("kubernetes-service", "GET", "/api/v1/namespaces/default/services/kubernetes", nil)
	warned(svc)
	last().Body = toGeneric(map[string]any{
		"metadata": meta(svc), "spec": serverPort(allocatedShape(field(svc.body, "spec")), "targetPort"),
		"status": field(svc.body, "status"),
	})
	ep := s.call("kubernetes-endpoints", "GET", "/api/v1/namespaces/default/endpoints/kubernetes", nil)
	warned(ep)
	last().Body = toGeneric(map[string]any{
		"metadata": meta(ep), "subsets": serverPort(ips(field(ep.body, "subsets")), "port"),
	})
	slices := "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
	sl := s.call("kubernetes-endpointslice", "GET", slices+"/kubernetes", nil)
	warned(sl)
	last().Body = toGeneric(map[string]any{
		"metadata": meta(sl), "addressType": field(sl.body, "addressType"),
		"endpoints": ips(field(sl.body, "endpoints")), "ports": serverPort(field(sl.body, "ports"), "port"),
	})
	warned(s.call("endpointslices-by-service-name", "GET", slices+"?"+q("labelSelector", "kubernetes.io/service-name=kubernetes"), nil))
	last().Body = nil

	// v1 Endpoints: deprecated since 1.33, on every verb, an error's answer too
	eps := "/api/v1/namespaces/" + s.ns + "/endpoints"
	mine := map[string]any{"apiVersion": "v1", "kind": "Endpoints", "metadata": map[string]any{"name": "mine"},
		"subsets": []any{map[string]any{"addresses": []any{map[string]any{"ip": "10.0.0.9"}}, "ports": []any{map[string]any{"port": 80}}}}}
	warned(s.call("endpoints-create", "POST", eps, mine))
	warned(s.call("endpoints-get", "GET", eps+"/mine", nil))
	warned(s.call("endpoints-list", "GET", eps, nil))
	warned(s.call("endpoints-get-missing", "GET", eps+"/nobody", nil))
	warned(s.call("endpoints-delete", "DELETE", eps+"/mine", nil))
	warned(s.call("componentstatuses", "GET", "/api/v1/componentstatuses", nil))
	last().Body = nil

	// what the ServiceAccount admission mounts into a created Pod (dry runs): its projected
	// token volume (a random name, shown by its shape) in every container without something
	// mounted at its path, unless the Pod or its ServiceAccount says not to; and who owns what
	// (admission's additions come after the field manager)
	tokenName := func(v any) any {
		return rewriteLeaves(v, func(_ string, leaf any) any {
			if x, ok := leaf.(string); ok && len(x) == len("kube-api-access-")+5 && strings.HasPrefix(x, "kube-api-access-") {
				return "kube-api-access-<random>"
			}
			return leaf
		})
	}
	pods := "/api/v1/namespaces/" + s.ns + "/pods?dryRun=All"
	pod := func(name string, spec map[string]any) map[string]any {
		if spec["containers"] == nil {
			spec["containers"] = []any{map[string]any{"name": "c", "image": "nginx:1.27"}}
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name}, "spec": spec}
	}
	mounted := func(step string, p map[string]any) {
		r := s.call(step, "POST", pods, p)
		last().Body = toGeneric(tokenName(map[string]any{
			"volumes": field(r.body, "spec", "volumes"), "containers": field(r.body, "spec", "containers"),
			"initContainers": field(r.body, "spec", "initContainers"), "managedFields": field(r.body, "metadata", "managedFields"),
		}))
	}
	// a pod needs its namespace's ServiceAccount, which kube-controller-manager creates
	deadline := time.Now().Add(15 * time.Second)
	for {
		r, err := s.t.do(s.ctx, "GET", "/api/v1/namespaces/"+s.ns+"/serviceaccounts/default", nil)
		if err == nil && r.status == 200 {
			break
		}
		if time.Now().After(deadline) {
			s.fail("no default ServiceAccount within 15s: %v", r)
		}
		time.Sleep(200 * time.Millisecond)
	}
	mounted("pod-token-volume", pod("plain", map[string]any{}))
	mounted("pod-token-volume-init-and-taken", pod("taken", map[string]any{
		"initContainers": []any{map[string]any{"name": "i", "image": "busybox:1.36"}},
		"containers": []any{map[string]any{"name": "a", "image": "nginx:1.27"},
			map[string]any{"name": "b", "image": "nginx:1.27", "volumeMounts": []any{map[string]any{"name": "own", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}}}},
		"volumes": []any{map[string]any{"name": "own", "emptyDir": map[string]any{}}},
	}))
	mounted("pod-token-volume-pod-says-no", pod("no", map[string]any{"automountServiceAccountToken": false}))
	s.setup("POST", "/api/v1/namespaces/"+s.ns+"/serviceaccounts", map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "quiet"}, "automountServiceAccountToken": false})
	mounted("pod-token-volume-account-says-no", pod("quiet", map[string]any{"serviceAccountName": "quiet"}))
	mounted("pod-token-volume-pod-overrides-account", pod("loud", map[string]any{"serviceAccountName": "quiet", "automountServiceAccountToken": true}))

	// a CRD's deprecated versions
	group := "kd-" + s.run + "-deprecated.example.com"
	schema := map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
	version := func(name string, served bool, extra map[string]any) map[string]any {
		v := map[string]any{"name": name, "served": served, "storage": name == "v1", "schema": schema}
		for k, x := range extra {
			v[k] = x
		}
		return v
	}
	// what kube-apiserver refuses in a deprecationWarning (dry runs)
	bad := func(step string, v map[string]any) {
		crd := map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "bads." + group},
			"spec": map[string]any{
				"group": group, "scope": "Namespaced",
				"names":    map[string]any{"plural": "bads", "kind": "Bad"},
				"versions": []any{version("v1", true, v)},
			},
		}
		s.call(step, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All", crd)
	}
	long := ""
	for len(long) < 257 {
		long += "x"
	}
	bad("crd-deprecation-warning-empty", map[string]any{"deprecated": true, "deprecationWarning": ""})
	bad("crd-deprecation-warning-not-deprecated", map[string]any{"deprecationWarning": "old"})
	bad("crd-deprecation-warning-too-long", map[string]any{"deprecated": true, "deprecationWarning": long})
	bad("crd-deprecation-warning-control", map[string]any{"deprecated": true, "deprecationWarning": "old\tthing"})
	bad("crd-deprecation-warning-newline", map[string]any{"deprecated": true, "deprecationWarning": "old\nthing"})
	s.registerCRD(group, "gadgets", map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "kind": "Gadget"},
			"versions": []any{
				version("v1alpha1", true, map[string]any{"deprecated": true}),
				version("v1beta1", true, map[string]any{"deprecated": true, "deprecationWarning": "v1beta1 goes away in 2027"}),
				version("v1", true, nil),
				version("v2beta1", true, nil),
				version("v2alpha1", true, map[string]any{"deprecated": true}),
				version("v3", true, map[string]any{"deprecated": true}),
			},
		},
	})
	at := func(v string) string { return "/apis/" + group + "/" + v + "/namespaces/" + s.ns + "/gadgets" }
	for _, v := range []string{"v1alpha1", "v1beta1", "v1", "v2beta1", "v2alpha1", "v3"} {
		warned(s.call("gadgets-list-"+v, "GET", at(v), nil))
	}
	gadget := map[string]any{"apiVersion": group + "/v1alpha1", "kind": "Gadget", "metadata": map[string]any{"name": "g"}}
	warned(s.call("gadget-create-v1alpha1", "POST", at("v1alpha1"), gadget))
	warned(s.call("gadget-get-v1", "GET", at("v1")+"/g", nil))
	warned(s.call("gadget-delete-v1alpha1", "DELETE", at("v1alpha1")+"/g", nil))
}

// rewriteLeaves copies v with every leaf (a value that is neither an object nor an array)
// replaced by f(key, leaf), key being the object key it sits under (an array's items sit
// under the array's key).
func rewriteLeaves(v any, f func(key string, leaf any) any) any {
	var walk func(key string, v any) any
	walk = func(key string, v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				out[k] = walk(k, e)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(key, e)
			}
			return out
		}
		return f(key, v)
	}
	return walk("", v)
}
