package main

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// reviewUID matches the uid of a ConversionReview in a message.
var reviewUID = regexp.MustCompile(`response\.uid="[^"]*"`)

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// convertReview answers a ConversionReview of CronTabs sent to path: /convert converts
// between v1 (spec.cronSpec, spec.size) and v2 (spec.schedule.cron, spec.replicas) and
// annotates each object with the version it came from; the other paths answer as broken
// webhooks do (a failure, the wrong uid, a renamed object, the version unchanged, no objects,
// an invalid label).
func convertReview(path, uid string, req map[string]any) map[string]any {
	resp := map[string]any{"uid": uid, "result": map[string]any{"status": "Success"}}
	desired, _ := req["desiredAPIVersion"].(string)
	objects, _ := req["objects"].([]any)
	switch path {
	case "/convert-fail":
		resp["result"] = map[string]any{"status": "Failure", "message": "cannot convert this CronTab"}
		return resp
	case "/convert-bad-uid":
		resp["uid"] = "not-the-uid"
	case "/convert-none":
		resp["convertedObjects"] = []any{}
		return resp
	}
	out := []any{}
	for _, o := range objects {
		obj, _ := o.(map[string]any)
		from, _ := obj["apiVersion"].(string)
		c := map[string]any{}
		for k, v := range obj {
			c[k] = v
		}
		c["apiVersion"] = desired
		spec, _ := obj["spec"].(map[string]any)
		converted := map[string]any{}
		if strings.HasSuffix(desired, "/v2") {
			if v, ok := spec["cronSpec"]; ok {
				converted["schedule"] = map[string]any{"cron": v}
			}
			if v, ok := spec["size"]; ok {
				converted["replicas"] = v
			}
		} else {
			if v := field(spec, "schedule", "cron"); v != nil {
				converted["cronSpec"] = v
			}
			if v, ok := spec["replicas"]; ok {
				converted["size"] = v
			}
		}
		if spec != nil {
			c["spec"] = converted
		}
		meta := map[string]any{}
		if m, ok := obj["metadata"].(map[string]any); ok {
			for k, v := range m {
				meta[k] = v
			}
		}
		ann := map[string]any{}
		if a, ok := meta["annotations"].(map[string]any); ok {
			for k, v := range a {
				ann[k] = v
			}
		}
		ann["conv.example.com/from"] = from[strings.LastIndex(from, "/")+1:]
		meta["annotations"] = ann
		switch path {
		case "/convert-rename":
			meta["name"] = str(obj, "metadata", "name") + "-renamed"
		case "/convert-same-version":
			c["apiVersion"] = from
		case "/convert-bad-label":
			meta["labels"] = map[string]any{"bad label!": "x"}
		}
		c["metadata"] = meta
		out = append(out, c)
	}
	resp["convertedObjects"] = out
	return resp
}

// webhookConversion is a CRD's spec.conversion calling the webhook at url (its certificate
// signed by ca) with v1 ConversionReviews.
func webhookConversion(url string, ca []byte) map[string]any {
	return map[string]any{"strategy": "Webhook", "webhook": map[string]any{
		"clientConfig":             map[string]any{"url": url, "caBundle": base64.StdEncoding.EncodeToString(ca)},
		"conversionReviewVersions": []any{"v1"},
	}}
}

// scConversionWebhook registers a CRD with two versions, v1 served and v2 stored, converted by
// a webhook (the recorder's HTTPS server, by URL and caBundle), and reads and writes its
// objects through both: creates, gets, lists, an update, merge patches, an apply, the status
// subresource, a dry run, tables (each version's printer columns), metadata only, a watch
// through v1 of writes through v2, a delete; then the webhook broken in each way and
// unreachable: what a read through the converted version, a list, a create and a read through
// the stored version answer.
func scConversionWebhook(s *sc) {
	hooks, err := startHookServer()
	if err != nil {
		s.fail("webhook server: %v", err)
	}
	s.cleanups = append(s.cleanups, func() { _ = hooks.srv.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.fail("listen: %v", err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	stable := func(v any) any {
		return rewriteLeaves(v, func(k string, leaf any) any {
			if x, ok := leaf.(string); ok {
				if k == "caBundle" {
					return "<ca>"
				}
				// the uid of a review: each request's own (a watch cache's own reviews would
				// shift the numbering of the rest)
				x = reviewUID.ReplaceAllString(x, `response.uid="<uid>"`)
				return portInText.ReplaceAllString(x, "127.0.0.1:<port>")
			}
			return leaf
		})
	}
	group := "cv-" + s.run + ".example.com"
	obj := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props}
	}
	text := map[string]any{"type": "string"}
	integer := map[string]any{"type": "integer"}
	status := obj(map[string]any{"ready": map[string]any{"type": "boolean"}})
	version := func(name string, storage bool, spec map[string]any, column, path, size string) map[string]any {
		return map[string]any{
			"name": name, "served": true, "storage": storage,
			"subresources": map[string]any{"status": map[string]any{}},
			// printer columns of each type kubectl shows (a string, an integer with a
			// description and a priority, a boolean that only some objects have)
			"additionalPrinterColumns": []any{
				map[string]any{"name": column, "type": "string", "jsonPath": path},
				map[string]any{"name": "Size", "type": "integer", "jsonPath": size, "priority": 1, "description": "how many"},
				map[string]any{"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"},
			},
			"schema": map[string]any{"openAPIV3Schema": obj(map[string]any{"spec": spec, "status": status})},
		}
	}
	webhook := func(url string) map[string]any { return webhookConversion(url, hooks.ca) }
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "crontabs." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
			"versions": []any{
				version("v1", false, obj(map[string]any{"cronSpec": text, "size": integer}), "Spec", ".spec.cronSpec", ".spec.size"),
				version("v2", true, obj(map[string]any{"schedule": obj(map[string]any{"cron": text}), "replicas": integer}), "Cron", ".spec.schedule.cron", ".spec.replicas"),
			},
			"conversion": webhook(hooks.base + "/convert"),
		},
	}
	v1 := s.registerCRD(group, "crontabs", crd)
	v2 := strings.Replace(v1, "/v1/", "/v2/", 1)
	crdPath := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs." + group
	r, err := s.t.do(s.ctx, "GET", crdPath, nil)
	if err != nil {
		s.fail("get crd: %v", err)
	}
	s.recordAs("crd-conversion", "GET "+crdPath, r, stable(field(r.body, "spec", "conversion")))

	tab := func(name, apiVersion string, spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": apiVersion, "kind": "CronTab", "metadata": map[string]any{"name": name}, "spec": spec}
	}
	a := s.call("create-v1", "POST", v1, tab("a", group+"/v1", map[string]any{"cronSpec": "*/1 * * * *", "size": 1}))
	s.call("get-v1", "GET", v1+"/a", nil)
	s.call("get-v2", "GET", v2+"/a", nil)
	s.call("create-v2", "POST", v2, tab("b", group+"/v2", map[string]any{"schedule": map[string]any{"cron": "*/2 * * * *"}, "replicas": 2}))
	s.call("get-v1-of-v2", "GET", v1+"/b", nil)
	s.call("list-v1", "GET", v1, nil)
	s.call("list-v2", "GET", v2, nil)
	upd := tab("a", group+"/v1", map[string]any{"cronSpec": "*/3 * * * *", "size": 3})
	upd["metadata"].(map[string]any)["resourceVersion"] = rvOf(a)
	s.call("update-v1", "PUT", v1+"/a", upd)
	s.callCT("patch-v1", "PATCH", v1+"/a", ctMerge, map[string]any{"spec": map[string]any{"size": 4}})
	s.callCT("patch-v2", "PATCH", v2+"/a", ctMerge, map[string]any{"spec": map[string]any{"replicas": 5}})
	s.callCT("status-v1", "PATCH", v1+"/a/status", ctMerge, map[string]any{"status": map[string]any{"ready": true}})
	s.callCT("apply-v1", "PATCH", v1+"/c?fieldManager=diff", ctApply, tab("c", group+"/v1", map[string]any{"cronSpec": "*/4 * * * *", "size": 4}))
	s.call("get-v2-of-apply", "GET", v2+"/c", nil)
	s.call("create-v1-dry-run", "POST", v1+"?dryRun=All", tab("dry", group+"/v1", map[string]any{"cronSpec": "*/5 * * * *", "size": 5}))
	s.call("get-dry-run", "GET", v1+"/dry", nil)
	accept := func(name, path, media string) {
		r, err := s.t.doWith(s.ctx, "GET", path, "", "", [][2]string{{"Accept", media}}, nil)
		if err != nil {
			s.fail("%s: %v", name, err)
		}
		s.recordAs(name, "GET "+path+" (Accept: "+media+")", r, r.body)
	}
	table := "application/json;as=Table;v=v1;g=meta.k8s.io"
	accept("table-v1", v1+"/a", table)
	accept("table-v2", v2+"/a", table)
	accept("table-list-v1", v1, table)
	accept("metadata-v1", v1+"/a", "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io")

	latest := s.callCT("patch-v2-before-watch", "PATCH", v2+"/a", ctMerge, map[string]any{"spec": map[string]any{"replicas": 6}})
	w := v1 + "?" + q("watch", "1", "resourceVersion", rvOf(latest))
	h := s.watch(w)
	s.callCT("patch-v2-watched", "PATCH", v2+"/a", ctMerge, map[string]any{"spec": map[string]any{"replicas": 7}})
	s.call("delete-v2-watched", "DELETE", v2+"/b", nil)
	s.call("create-v2-watched", "POST", v2, tab("d", group+"/v2", map[string]any{"schedule": map[string]any{"cron": "*/6 * * * *"}, "replicas": 6}))
	h.collect(watchWait, untilN(3))
	s.recordWatch("watch-v1", w, h)
	s.call("delete-v1", "DELETE", v1+"/d", nil)

	patchCRD := func(conversion map[string]any) {
		body := map[string]any{"spec": map[string]any{"conversion": conversion}}
		if r, err := s.t.doAs(s.ctx, "PATCH", crdPath, ctMerge, "", body); err != nil || r.status != 200 {
			s.fail("patch the CRD: %v %v", err, r)
		}
	}
	// the webhook broken in each way, then unreachable: each takes effect once the server has
	// seen the CRD's change (a real server rebuilds the CRD's handler from its informer): wait
	// until a read through v1 fails with what that webhook makes it say (not recorded)
	for _, broken := range []struct{ name, url, says string }{
		{"failure", hooks.base + "/convert-fail", "cannot convert this CronTab"},
		{"bad-uid", hooks.base + "/convert-bad-uid", "expected response.uid"},
		{"renamed", hooks.base + "/convert-rename", "must have the same name"},
		{"same-version", hooks.base + "/convert-same-version", "invalid groupVersion"},
		{"no-objects", hooks.base + "/convert-none", "returned 0 objects"},
		{"bad-label", hooks.base + "/convert-bad-label", "returned invalid metadata"},
		{"unreachable", "https://" + closed + "/convert", "connection refused"},
	} {
		patchCRD(webhook(broken.url))
		deadline := time.Now().Add(15 * time.Second)
		for {
			r, err := s.t.do(s.ctx, "GET", v1+"/a", nil)
			if err == nil && r.status != 200 && strings.Contains(str(r.body, "message"), broken.says) {
				break
			}
			if time.Now().After(deadline) {
				s.fail("%s: the CRD's new webhook took no effect within 15s: %v", broken.name, r)
			}
			time.Sleep(100 * time.Millisecond)
		}
		record := func(name, method, path string, body any) {
			r := s.call(broken.name+"-"+name, method, path, body)
			last := s.res.Steps[len(s.res.Steps)-1]
			last.Body = stable(last.Body)
			_ = r
		}
		record("get-v1", "GET", v1+"/a", nil)
		record("list-v1", "GET", v1, nil)
		record("create-v1", "POST", v1, tab("e", group+"/v1", map[string]any{"cronSpec": "*/7 * * * *", "size": 7}))
		record("get-v2", "GET", v2+"/a", nil)
	}
	// working again, and the CRD gone before the webhook server stops (not recorded): a CRD
	// whose objects cannot be converted keeps its finalizer, and a real cluster's garbage
	// collector waits for every resource it watches, this one too, to sync
	patchCRD(webhook(hooks.base + "/convert"))
	if _, err := s.t.do(s.ctx, "DELETE", crdPath, nil); err != nil {
		s.fail("delete the CRD: %v", err)
	}
	s.pollUntil(crdPath, 30*time.Second, func(r *response) bool { return r.status == 404 })
}
