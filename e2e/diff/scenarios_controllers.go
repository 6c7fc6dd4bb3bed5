package main

import (
	"reflect"
	"time"
)

// Scenarios whose outcome a controller decides (on the real side:
// kube-controller-manager's garbage collector and namespace controller, run by
// the harness). Controllers act asynchronously and at their own pace, so each
// scenario records the immediate answers (DELETE's response, the object right
// after) and then only the settled state, polled with a bound (gcBound,
// nsBound); the fact "settled" says whether it settled within the bound.

// gcBound bounds the wait for the garbage collector (the real pair settles
// within half a second, also at a load average of 12 on 2 cores).
const gcBound = 10 * time.Second

// nsBound bounds the wait for namespace deletion (the real namespace
// controller waits 5s after a namespace turns Terminating, then deletes the
// content: about 10s in all, under load too).
const nsBound = 30 * time.Second

func deleteWith(policy string) map[string]any {
	return map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy}
}

// gcSetup creates owner (a ConfigMap) and the named dependents owned by it
// (blockOwnerDeletion on each if block); it returns the owner.
func gcSetup(s *sc, block bool, deps ...string) any {
	owner := s.call("create-owner", "POST", s.cms(""), configMap("owner", nil, map[string]string{"k": "1"})).body
	for _, d := range deps {
		s.setup("POST", s.cms(""), withOwners(configMap(d, nil, map[string]string{"k": "1"}), ownerRef(owner, block)))
	}
	return owner
}

// settle polls the namespace's ConfigMaps until done, then records the
// settled view as step name.
func (s *sc) settle(name string, bound time.Duration, done func(*response) bool) *response {
	r, ok := s.pollUntil(s.cms(""), bound, done)
	s.recordAs(name, "GET "+s.cms("")+" (settled)", r, settledView(r))
	s.fact("settled", ok)
	return r
}

// refsTo reports whether the named item in a list has an ownerReference to uid.
func refsTo(r *response, name, uid string) bool {
	for _, it := range items(r.body) {
		if str(it, "metadata", "name") != name {
			continue
		}
		refs, _ := field(it, "metadata", "ownerReferences").([]any)
		for _, ref := range refs {
			if str(ref, "uid") == uid {
				return true
			}
		}
	}
	return false
}

// scGCBackground: background propagation (the default): the owner goes at
// once, its dependents after it; a dependent with a second, live owner stays
// and loses the reference to the deleted one.
func scGCBackground(s *sc) {
	s.controller = "garbage-collector"
	other := s.call("create-other-owner", "POST", s.cms(""), configMap("other", nil, map[string]string{"k": "1"})).body
	owner := gcSetup(s, false, "dep-1", "dep-2")
	s.setup("POST", s.cms(""), withOwners(configMap("dep-shared", nil, nil), ownerRef(owner, false), ownerRef(other, false)))
	s.call("delete-owner", "DELETE", s.cm("owner"), deleteWith("Background"))
	s.call("get-owner-right-after", "GET", s.cm("owner"), nil)
	uid := str(owner, "metadata", "uid")
	s.settle("settled", gcBound, func(r *response) bool {
		return reflect.DeepEqual(namesOf(r), []string{"dep-shared", "other"}) && !refsTo(r, "dep-shared", uid)
	})
	// The default propagation for a ConfigMap is background too.
	o2 := s.call("create-owner-2", "POST", s.cms(""), configMap("owner-2", nil, nil)).body
	s.setup("POST", s.cms(""), withOwners(configMap("dep-3", nil, nil), ownerRef(o2, false)))
	s.call("delete-owner-2-default", "DELETE", s.cm("owner-2"), nil)
	s.settle("settled-default", gcBound, func(r *response) bool {
		return !hasName(r, "dep-3") && !hasName(r, "owner-2")
	})
}

// scGCForeground: foreground propagation: the owner is kept (deletionTimestamp
// and the foregroundDeletion finalizer) until the dependents that block it are
// gone; a dependent held by its own finalizer holds the owner.
func scGCForeground(s *sc) {
	s.controller = "garbage-collector"
	owner := s.call("create-owner", "POST", s.cms(""), configMap("owner", nil, map[string]string{"k": "1"})).body
	s.setup("POST", s.cms(""), withFinalizers(withOwners(configMap("dep-held", nil, nil), ownerRef(owner, true)), "kinformer.dev/hold"))
	s.setup("POST", s.cms(""), withOwners(configMap("dep-blocking", nil, nil), ownerRef(owner, true)))
	s.setup("POST", s.cms(""), withOwners(configMap("dep-not-blocking", nil, nil), ownerRef(owner, false)))
	s.call("delete-owner", "DELETE", s.cm("owner"), deleteWith("Foreground"))
	s.call("get-owner-right-after", "GET", s.cm("owner"), nil)
	// Settled while dep-held's finalizer stays: the other dependents gone,
	// dep-held terminating, the owner still waiting.
	s.settle("settled-while-held", gcBound, func(r *response) bool {
		return reflect.DeepEqual(namesOf(r), []string{"dep-held", "owner"}) &&
			field(items(r.body)[0], "metadata", "deletionTimestamp") != nil
	})
	s.callCT("release-dep-held", "PATCH", s.cm("dep-held"), ctMerge, map[string]any{"metadata": map[string]any{"finalizers": nil}})
	s.settle("settled", gcBound, func(r *response) bool { return len(namesOf(r)) == 0 && r.status == 200 })
	s.call("get-owner-gone", "GET", s.cm("owner"), nil)
}

// scGCOrphan: orphan propagation: the owner gets the orphan finalizer, the
// dependents lose their references to it and stay, then the owner goes.
func scGCOrphan(s *sc) {
	s.controller = "garbage-collector"
	owner := gcSetup(s, true, "dep-1", "dep-2")
	// The answer shows the orphan finalizer; a GET right after would race the
	// garbage collector, which removes it within milliseconds.
	s.call("delete-owner", "DELETE", s.cm("owner"), deleteWith("Orphan"))
	uid := str(owner, "metadata", "uid")
	s.settle("settled", gcBound, func(r *response) bool {
		return reflect.DeepEqual(namesOf(r), []string{"dep-1", "dep-2"}) && !refsTo(r, "dep-1", uid) && !refsTo(r, "dep-2", uid)
	})
	// orphanDependents=true, the deprecated spelling, means the same.
	o2 := s.call("create-owner-2", "POST", s.cms(""), configMap("owner-2", nil, nil)).body
	s.setup("POST", s.cms(""), withOwners(configMap("dep-3", nil, nil), ownerRef(o2, false)))
	s.call("delete-owner-2-orphan-dependents", "DELETE", s.cm("owner-2"),
		map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": true})
	s.settle("settled-orphan-dependents", gcBound, func(r *response) bool {
		return hasName(r, "dep-3") && !hasName(r, "owner-2") && !refsTo(r, "dep-3", str(o2, "metadata", "uid"))
	})
	s.call("both-policies", "DELETE", s.cm("dep-1"),
		map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": true, "propagationPolicy": "Background"})
}

// scGCOwners: dangling references (an owner that never existed; a live
// owner's name with another uid) and a cluster-scoped owner (a ClusterRole) of
// a namespaced dependent.
func scGCOwners(s *sc) {
	s.controller = "garbage-collector"
	live := s.call("create-live", "POST", s.cms(""), configMap("live", nil, nil)).body
	ghost := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "ghost", "uid": "7d1e1c38-0000-4000-8000-000000000001"}}
	s.call("create-dangling", "POST", s.cms(""), withOwners(configMap("dep-dangling", nil, nil), ownerRef(ghost, false)))
	wrong := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "live", "uid": "7d1e1c38-0000-4000-8000-000000000002"}}
	s.call("create-wrong-uid", "POST", s.cms(""), withOwners(configMap("dep-wrong-uid", nil, nil), ownerRef(wrong, false)))
	s.call("create-live-owned", "POST", s.cms(""), withOwners(configMap("dep-live", nil, nil), ownerRef(live, false)))

	crPath := "/apis/rbac.authorization.k8s.io/v1/clusterroles"
	crName := s.ns + "-owner"
	cr := s.call("create-cluster-owner", "POST", crPath, map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": crName}}).body
	defer func() { _, _ = s.t.do(s.ctx, "DELETE", crPath+"/"+crName, nil) }()
	s.call("create-cluster-owned", "POST", s.cms(""), withOwners(configMap("dep-cluster", nil, nil), ownerRef(cr, false)))
	s.settle("settled-dangling", gcBound, func(r *response) bool {
		return reflect.DeepEqual(namesOf(r), []string{"dep-cluster", "dep-live", "live"})
	})
	s.call("delete-cluster-owner", "DELETE", crPath+"/"+crName, nil)
	s.settle("settled", gcBound, func(r *response) bool {
		return reflect.DeepEqual(namesOf(r), []string{"dep-live", "live"})
	})
}

// scNamespaceLifecycle: NamespaceLifecycle admission and the namespace
// controller: 404 into a missing namespace, the Terminating phase with its
// finalizer and conditions while content with a finalizer remains, 403 for new
// content, the namespace gone once the finalizer is removed; the immortal
// namespaces. Runs last among the scenarios: a server that lets "default" or
// "kube-system" be deleted cannot spoil the others.
func scNamespaceLifecycle(s *sc) {
	s.controller = "namespace"
	nsPath := "/api/v1/namespaces/" + s.ns
	s.call("create-in-missing-namespace", "POST", "/api/v1/namespaces/kd-"+s.run+"-nowhere/configmaps", configMap("a", nil, nil))
	s.call("create-held", "POST", s.cms(""), withFinalizers(configMap("held", nil, nil), "kinformer.dev/hold"))
	s.call("create-plain", "POST", s.cms(""), configMap("plain", nil, nil))
	s.call("delete-namespace", "DELETE", nsPath, nil)
	s.call("get-namespace-right-after", "GET", nsPath, nil)
	// The conditions settle once the controller has deleted what it can.
	r, ok := s.pollUntil(nsPath, nsBound, func(r *response) bool {
		conds, _ := field(r.body, "status", "conditions").([]any)
		for _, c := range conds {
			if str(c, "type") == "NamespaceFinalizersRemaining" && str(c, "status") == "True" {
				return true
			}
		}
		return false
	})
	s.recordAs("namespace-settled", "GET "+nsPath+" (settled)", r, r.body)
	s.fact("settled", ok)
	// all names: the namespace controller deletes kube-root-ca.crt too (and the
	// publisher's create into the terminating namespace is refused)
	s.settle("content-settled", gcBound, func(r *response) bool {
		return reflect.DeepEqual(allNamesOf(r), []string{"held"})
	})
	s.call("create-in-terminating", "POST", s.cms(""), configMap("late", nil, nil))
	s.call("delete-namespace-again", "DELETE", nsPath, nil)
	s.callCT("release-held", "PATCH", s.cm("held"), ctMerge, map[string]any{"metadata": map[string]any{"finalizers": nil}})
	r, ok = s.pollUntil(nsPath, nsBound, func(r *response) bool { return r.status == 404 })
	s.recordAs("namespace-gone", "GET "+nsPath+" (settled)", r, r.body)
	s.fact("settled", ok)
	for _, immortal := range []string{"default", "kube-system", "kube-public"} {
		s.call("delete-"+immortal, "DELETE", "/api/v1/namespaces/"+immortal, nil)
	}
	s.call("get-default-after", "GET", "/api/v1/namespaces/default", nil)
}

// crBound bounds the wait for garbage collection that involves custom resources:
// kube-controller-manager's garbage collector starts monitoring a new CRD's resource at its
// next discovery sync (every 30s).
const crBound = 45 * time.Second

// scGCCustomResources: custom resources as owners and dependents: a Widget owning a ConfigMap,
// a ConfigMap owning a Widget; both owners deleted (background), both dependents collected.
func scGCCustomResources(s *sc) {
	s.controller = "garbage-collector"
	group, base := s.widgetCRD(s.ns)
	widget := func(name string) map[string]any {
		return map[string]any{"apiVersion": group + "/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": 1}}
	}
	wOwner := s.call("create-widget-owner", "POST", base, widget("w-owner")).body
	cmOwner := s.call("create-configmap-owner", "POST", s.cms(""), configMap("cm-owner", nil, nil)).body
	s.call("create-configmap-dependent", "POST", s.cms(""), withOwners(configMap("cm-dep", nil, nil), ownerRef(wOwner, false)))
	s.call("create-widget-dependent", "POST", base, withOwners(widget("w-dep"), ownerRef(cmOwner, false)))
	s.call("delete-widget-owner", "DELETE", base+"/w-owner", nil)
	s.call("delete-configmap-owner", "DELETE", s.cm("cm-owner"), nil)
	gone := func(path, name string) bool {
		r, err := s.t.do(s.ctx, "GET", path, nil)
		return err == nil && r.status == 200 && !hasName(r, name)
	}
	s.settle("settled-configmaps", crBound, func(r *response) bool {
		return !hasName(r, "cm-dep") && gone(base, "w-dep")
	})
	r, ok := s.pollUntil(base, giveUpBound, func(r *response) bool { return r.status == 200 && !hasName(r, "w-dep") })
	s.recordAs("settled-widgets", "GET "+base+" (settled)", r, settledView(r))
	s.fact("settled", ok)
}
