package main

import (
	"strings"
	"time"
)

// scServiceAccountAdmission: what kube-apiserver's ServiceAccount admission does
// to a created Pod beyond its token volume (scClusterDefaults has that): the
// account must exist (403 in its words, the name a generateName shows, a dry
// run, an apply, before validation), the account's imagePullSecrets are
// copied into a Pod without its own, an empty account name means default, and
// a mirror pod gets nothing and may reference neither an account nor a secret
// nor a projected token.
func scServiceAccountAdmission(s *sc) {
	// the random name of the token volume, shown by its shape
	tokenName := func(v any) any {
		return rewriteLeaves(v, func(_ string, leaf any) any {
			if x, ok := leaf.(string); ok && len(x) == len("kube-api-access-")+5 && strings.HasPrefix(x, "kube-api-access-") {
				return "kube-api-access-<random>"
			}
			return leaf
		})
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
	pods := "/api/v1/namespaces/" + s.ns + "/pods"
	dry := pods + "?dryRun=All"
	pod := func(meta map[string]any, spec map[string]any) map[string]any {
		if _, ok := spec["containers"]; !ok {
			spec["containers"] = []any{map[string]any{"name": "c", "image": "nginx:1.27"}}
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
	}
	named := func(name string) map[string]any { return map[string]any{"name": name} }
	last := func() *step { return s.res.Steps[len(s.res.Steps)-1] }
	// what admission decided, and who owns what
	admitted := func(r *response) {
		last().Body = toGeneric(tokenName(map[string]any{
			"serviceAccountName": field(r.body, "spec", "serviceAccountName"),
			"serviceAccount":     field(r.body, "spec", "serviceAccount"),
			"imagePullSecrets":   field(r.body, "spec", "imagePullSecrets"),
			"volumes":            field(r.body, "spec", "volumes"),
			"managedFields":      field(r.body, "metadata", "managedFields"),
		}))
	}

	ghost := map[string]any{"serviceAccountName": "ghost"}
	s.call("missing-account", "POST", pods, pod(named("p"), ghost))
	s.call("missing-account-generate-name", "POST", pods, pod(map[string]any{"generateName": "gen-"}, map[string]any{"serviceAccount": "ghost"}))
	s.call("missing-account-dry-run", "POST", dry, pod(named("p"), map[string]any{"serviceAccountName": "ghost"}))
	s.call("missing-account-and-no-containers", "POST", pods, pod(named("p"), map[string]any{"serviceAccountName": "ghost", "containers": []any{}}))
	s.callCT("missing-account-apply", "PATCH", pods+"/applied?fieldManager=applier&dryRun=All", ctApply,
		pod(named("applied"), map[string]any{"serviceAccountName": "ghost"}))
	s.call("missing-account-list", "GET", pods, nil)
	last().Body = field(last().Body, "items")

	s.setup("POST", "/api/v1/namespaces/"+s.ns+"/serviceaccounts", map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount", "metadata": named("puller"),
		"imagePullSecrets": []any{named("registry"), named("mirror")}})
	admitted(s.call("account-pull-secrets", "POST", dry, pod(named("a"), map[string]any{"serviceAccountName": "puller"})))
	admitted(s.call("own-pull-secrets", "POST", dry, pod(named("b"), map[string]any{
		"serviceAccountName": "puller", "imagePullSecrets": []any{named("mine")}})))
	admitted(s.call("empty-pull-secrets", "POST", dry, pod(named("c"), map[string]any{
		"serviceAccountName": "puller", "imagePullSecrets": []any{}})))
	admitted(s.call("empty-account-name", "POST", dry, pod(named("d"), map[string]any{"serviceAccountName": ""})))
	admitted(s.callCT("account-pull-secrets-apply", "PATCH", pods+"/e?fieldManager=applier&dryRun=All", ctApply,
		pod(named("e"), map[string]any{"serviceAccountName": "puller"})))

	// mirror pods (a static pod's copy, which a kubelet writes)
	mirror := func(name string) map[string]any {
		return map[string]any{"name": name, "annotations": map[string]any{"kubernetes.io/config.mirror": "hash"}}
	}
	m := s.call("mirror-pod", "POST", dry, pod(mirror("static-node1"), map[string]any{"nodeName": "node1"}))
	last().Body = toGeneric(map[string]any{"spec": field(m.body, "spec"), "managedFields": field(m.body, "metadata", "managedFields")})
	s.call("mirror-pod-account", "POST", dry, pod(mirror("m"), map[string]any{"nodeName": "node1", "serviceAccountName": "default"}))
	s.call("mirror-pod-pull-secret", "POST", dry, pod(mirror("m"), map[string]any{"nodeName": "node1", "imagePullSecrets": []any{named("registry")}}))
	s.call("mirror-pod-secret-volume", "POST", dry, pod(mirror("m"), map[string]any{"nodeName": "node1",
		"volumes": []any{map[string]any{"name": "v", "secret": map[string]any{"secretName": "s"}}}}))
	s.call("mirror-pod-env-secret", "POST", dry, pod(mirror("m"), map[string]any{"nodeName": "node1",
		"containers": []any{map[string]any{"name": "c", "image": "nginx:1.27", "env": []any{map[string]any{
			"name": "E", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}}}}}}))
	s.call("mirror-pod-projected-token", "POST", dry, pod(mirror("m"), map[string]any{"nodeName": "node1",
		"volumes": []any{map[string]any{"name": "v", "projected": map[string]any{"sources": []any{
			map[string]any{"serviceAccountToken": map[string]any{"path": "token"}}}}}}}))

	// the account created after all
	s.setup("POST", "/api/v1/namespaces/"+s.ns+"/serviceaccounts", map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount", "metadata": named("ghost")})
	admitted(s.call("account-created-later", "POST", dry, pod(named("p"), map[string]any{"serviceAccountName": "ghost"})))
}

// scCreatedStatuses: the status more built-in kinds start with, whatever
// status they were created with (their registry strategies' PrepareForCreate):
// a PodDisruptionBudget, a HorizontalPodAutoscaler, an Ingress, a
// PersistentVolumeClaim (created, and a dry run), a PersistentVolume and a
// VolumeAttachment (dry runs: cluster-scoped).
func scCreatedStatuses(s *sc) {
	ns := "/namespaces/" + s.ns
	last := func() *step { return s.res.Steps[len(s.res.Steps)-1] }
	status := func(step, path string, obj map[string]any) {
		r := s.call(step, "POST", path, obj)
		last().Body = toGeneric(map[string]any{"status": field(r.body, "status")})
	}
	meta := map[string]any{"name": "s"}
	status("pdb", "/apis/policy/v1"+ns+"/poddisruptionbudgets", map[string]any{
		"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta,
		"spec":   map[string]any{"minAvailable": 1, "selector": map[string]any{"matchLabels": map[string]any{"app": "a"}}},
		"status": map[string]any{"disruptionsAllowed": 3, "currentHealthy": 4, "desiredHealthy": 1, "expectedPods": 4, "observedGeneration": 7}})
	status("hpa", "/apis/autoscaling/v2"+ns+"/horizontalpodautoscalers", map[string]any{
		"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta,
		"spec": map[string]any{"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
			"minReplicas": 1, "maxReplicas": 3},
		"status": map[string]any{"currentReplicas": 2, "desiredReplicas": 3}})
	status("ingress", "/apis/networking.k8s.io/v1"+ns+"/ingresses", map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta,
		"spec":   map[string]any{"defaultBackend": map[string]any{"service": map[string]any{"name": "svc", "port": map[string]any{"number": 80}}}},
		"status": map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "192.0.2.1"}}}}})
	pvc := map[string]any{
		"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
		"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"},
			"resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}},
		"status": map[string]any{"phase": "Bound", "capacity": map[string]any{"storage": "1Gi"}}}
	status("pvc", "/api/v1"+ns+"/persistentvolumeclaims", pvc)
	pvc["metadata"] = map[string]any{"name": "t"}
	status("pvc-dry-run", "/api/v1"+ns+"/persistentvolumeclaims?dryRun=All", pvc)
	status("pv-dry-run", "/api/v1/persistentvolumes?dryRun=All", map[string]any{
		"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": "pv-" + s.run},
		"spec": map[string]any{"capacity": map[string]any{"storage": "1Gi"}, "accessModes": []any{"ReadWriteOnce"},
			"hostPath": map[string]any{"path": "/tmp/pv"}},
		"status": map[string]any{"phase": "Bound"}})
	status("volumeattachment-dry-run", "/apis/storage.k8s.io/v1/volumeattachments?dryRun=All", map[string]any{
		"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": map[string]any{"name": "va-" + s.run},
		"spec": map[string]any{"attacher": "csi.example.com", "nodeName": "node1",
			"source": map[string]any{"persistentVolumeName": "pv"}},
		"status": map[string]any{"attached": true, "attachmentMetadata": map[string]any{"a": "b"}}})
}
