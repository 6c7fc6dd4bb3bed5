package main

import (
	"encoding/json"
	"strings"
	"time"
)

// podSpecSent is a pod spec with something of each kind kube-apiserver defaults: containers
// without a tag, with a tag, a digest and `latest`; probes (HTTP and TCP); a port; an env
// field reference; limits; an init container; secret, configMap, downwardAPI, projected,
// hostPath volumes and one without a source.
func podSpecSent() map[string]any {
	return map[string]any{
		"containers": []any{
			map[string]any{"name": "a", "image": "nginx",
				"ports":          []any{map[string]any{"containerPort": 80}},
				"livenessProbe":  map[string]any{"httpGet": map[string]any{"port": 80}},
				"readinessProbe": map[string]any{"tcpSocket": map[string]any{"port": 80}, "periodSeconds": 5},
				"env":            []any{map[string]any{"name": "N", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}}},
				"resources":      map[string]any{"limits": map[string]any{"cpu": "1"}},
				"volumeMounts":   []any{map[string]any{"name": "s", "mountPath": "/s"}}},
			map[string]any{"name": "b", "image": "nginx:1.25"},
			map[string]any{"name": "c", "image": "nginx@sha256:" + strings.Repeat("0", 64)},
			map[string]any{"name": "d", "image": "nginx:latest"},
		},
		"initContainers": []any{map[string]any{"name": "i", "image": "busybox:1"}},
		"volumes": []any{
			map[string]any{"name": "s", "secret": map[string]any{"secretName": "x"}},
			map[string]any{"name": "c", "configMap": map[string]any{"name": "y"}},
			map[string]any{"name": "e"},
			map[string]any{"name": "d", "downwardAPI": map[string]any{"items": []any{map[string]any{"path": "n", "fieldRef": map[string]any{"fieldPath": "metadata.name"}}}}},
			map[string]any{"name": "p", "projected": map[string]any{"sources": []any{map[string]any{"configMap": map[string]any{"name": "z"}}}}},
			map[string]any{"name": "h", "hostPath": map[string]any{"path": "/tmp"}},
		},
	}
}

// withoutTokenVolume drops what the ServiceAccount admission adds to a pod spec under a
// random name (the projected `kube-api-access-<random>` volume and its mounts), which the
// embedded server does not add.
func withoutTokenVolume(spec any) any {
	m, ok := spec.(map[string]any)
	if !ok {
		return spec
	}
	keep := func(list any) []any {
		var out []any
		items, _ := list.([]any)
		for _, it := range items {
			if !strings.HasPrefix(str(it, "name"), "kube-api-access-") {
				out = append(out, it)
			}
		}
		return out
	}
	m["volumes"] = keep(m["volumes"])
	for _, f := range []string{"containers", "initContainers"} {
		cs, _ := m[f].([]any)
		for _, c := range cs {
			cm, ok := c.(map[string]any)
			if !ok {
				continue
			}
			if mounts := keep(cm["volumeMounts"]); len(mounts) > 0 {
				cm["volumeMounts"] = mounts
			} else {
				delete(cm, "volumeMounts")
			}
		}
	}
	return m
}

// scPodDefaults creates (dryRun=All) a Pod and each kind that holds a pod template with the
// same pod spec, and records the pod spec as stored: kube-apiserver's defaults (containers,
// probes, ports, env, volumes, the pod's own and its admission's: service account, priority,
// tolerations), each template's metadata, and the status each starts with (whatever it was
// sent with), a Job's generated selector and labels, a DaemonSet's template generation. A controller comparing the template it wants
// with the stored one sees these.
func scPodDefaults(s *sc) {
	labels := map[string]any{"app": "w"}
	sel := map[string]any{"matchLabels": labels}
	tmpl := func(spec map[string]any) map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": labels}, "spec": spec}
	}
	with := func(k, v string) map[string]any {
		spec := podSpecSent()
		spec[k] = v
		return spec
	}
	// sent with a status, which a create does not keep
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}, "spec": podSpecSent(),
		"status": map[string]any{"phase": "Running", "podIP": "10.0.0.1"}}
	pods := "/api/v1/namespaces/" + s.ns + "/pods?dryRun=All"
	// a pod needs its namespace's ServiceAccount, which kube-controller-manager creates
	deadline := time.Now().Add(15 * time.Second)
	for {
		r, err := s.t.do(s.ctx, "POST", pods, pod)
		if err == nil && r.status == 201 {
			break
		}
		if time.Now().After(deadline) {
			s.fail("no pod could be created within 15s: %v", r)
		}
		time.Sleep(200 * time.Millisecond)
	}
	r := s.call("pod", "POST", pods, pod)
	s.res.Steps[len(s.res.Steps)-1].Body = toGeneric(map[string]any{"spec": withoutTokenVolume(field(r.body, "spec")), "status": field(r.body, "status")})
	apps := "/apis/apps/v1/namespaces/" + s.ns + "/"
	batch := "/apis/batch/v1/namespaces/" + s.ns + "/"
	core := "/api/v1/namespaces/" + s.ns + "/"
	for _, w := range []struct {
		name, path, kind, apiVersion string
		spec                         map[string]any
		template                     []string
	}{
		{"deployment", apps + "deployments", "Deployment", "apps/v1", map[string]any{"selector": sel, "template": tmpl(podSpecSent())}, []string{"spec", "template"}},
		{"statefulset", apps + "statefulsets", "StatefulSet", "apps/v1", map[string]any{"selector": sel, "serviceName": "w", "template": tmpl(podSpecSent())}, []string{"spec", "template"}},
		{"daemonset", apps + "daemonsets", "DaemonSet", "apps/v1", map[string]any{"selector": sel, "template": tmpl(podSpecSent())}, []string{"spec", "template"}},
		{"replicaset", apps + "replicasets", "ReplicaSet", "apps/v1", map[string]any{"selector": sel, "template": tmpl(podSpecSent())}, []string{"spec", "template"}},
		{"job", batch + "jobs", "Job", "batch/v1", map[string]any{"template": map[string]any{"spec": with("restartPolicy", "Never")}}, nil},
		{"cronjob", batch + "cronjobs", "CronJob", "batch/v1", map[string]any{"schedule": "* * * * *",
			"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": with("restartPolicy", "OnFailure")}}}}, []string{"spec", "jobTemplate"}},
		{"replicationcontroller", core + "replicationcontrollers", "ReplicationController", "v1", map[string]any{"selector": labels, "template": tmpl(podSpecSent())}, []string{"spec", "template"}},
	} {
		body := map[string]any{"apiVersion": w.apiVersion, "kind": w.kind, "metadata": map[string]any{"name": "w"}, "spec": w.spec,
			"status": map[string]any{"replicas": 5}}
		r := s.call(w.name, "POST", w.path+"?dryRun=All", body)
		view := map[string]any{"status": field(r.body, "status")}
		switch w.name {
		case "job":
			// its generated selector and labels carry its uid: shown as <job uid>
			uid := str(r.body, "metadata", "uid")
			b, _ := json.Marshal(map[string]any{"templateSpec": field(r.body, "spec", "template", "spec"),
				"templateMetadata": field(r.body, "spec", "template", "metadata"), "selector": field(r.body, "spec", "selector"),
				"manualSelector": field(r.body, "spec", "manualSelector"), "labels": field(r.body, "metadata", "labels")})
			var v map[string]any
			_ = json.Unmarshal([]byte(strings.ReplaceAll(string(b), uid, "<job uid>")), &v)
			for k, x := range v {
				view[k] = x
			}
		case "cronjob":
			view["jobTemplate"] = field(r.body, "spec", "jobTemplate")
		default:
			view["template"] = field(r.body, w.template...)
		}
		if w.name == "daemonset" {
			view["annotations"] = field(r.body, "metadata", "annotations")
		}
		if w.name == "replicationcontroller" {
			view["replicas"] = field(r.body, "spec", "replicas")
			view["selector"] = field(r.body, "spec", "selector")
			view["labels"] = field(r.body, "metadata", "labels")
		}
		s.res.Steps[len(s.res.Steps)-1].Body = toGeneric(view)
	}
	// a DaemonSet's template generation: one more for each change of its template
	ds := map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": map[string]any{"name": "g"},
		"spec": map[string]any{"selector": sel, "template": tmpl(map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx:1"}}})}}
	annotations := func(r *response) {
		s.res.Steps[len(s.res.Steps)-1].Body = toGeneric(map[string]any{"annotations": field(r.body, "metadata", "annotations")})
	}
	annotations(s.call("daemonset-created", "POST", apps+"daemonsets", ds))
	annotations(s.callCT("daemonset-template-changed", "PATCH", apps+"daemonsets/g", ctMerge,
		map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "w", "v": "2"}}}}}))
	annotations(s.callCT("daemonset-other-change", "PATCH", apps+"daemonsets/g", ctMerge,
		map[string]any{"spec": map[string]any{"minReadySeconds": 5}}))
	pt := map[string]any{"apiVersion": "v1", "kind": "PodTemplate", "metadata": map[string]any{"name": "w"}, "template": map[string]any{"spec": podSpecSent()}}
	r = s.call("podtemplate", "POST", core+"podtemplates?dryRun=All", pt)
	s.res.Steps[len(s.res.Steps)-1].Body = toGeneric(map[string]any{"template": field(r.body, "template")})
}
