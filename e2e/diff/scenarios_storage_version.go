package main

import (
	"strings"
	"time"
)

// scCRDStorageVersionChange registers two CRDs with v1 and v2 served and v1 stored, one
// converted by strategy None and one by a webhook (the recorder's HTTPS server), writes an
// object through v1, then makes v2 the storage version: the CRD's storedVersions, reads of the
// object (still stored in v1) through both versions, a list and a watch through v2, an object
// written through v1 after the change (stored in v2), a patch through v2 (the old object
// stored in v2 from then on) and reads through v1 after it.
func scCRDStorageVersionChange(s *sc) {
	hooks, err := startHookServer()
	if err != nil {
		s.fail("webhook server: %v", err)
	}
	s.cleanups = append(s.cleanups, func() { _ = hooks.srv.Close() })
	obj := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props}
	}
	text := map[string]any{"type": "string"}
	integer := map[string]any{"type": "integer"}
	versions := func(stored string) []any {
		version := func(name string, spec map[string]any) map[string]any {
			return map[string]any{
				"name": name, "served": true, "storage": name == stored,
				"schema": map[string]any{"openAPIV3Schema": obj(map[string]any{"spec": spec})},
			}
		}
		return []any{
			version("v1", obj(map[string]any{"cronSpec": text, "size": integer})),
			version("v2", obj(map[string]any{"schedule": obj(map[string]any{"cron": text}), "replicas": integer})),
		}
	}
	for _, strategy := range []string{"none", "webhook"} {
		group := "sv" + strategy + "-" + s.run + ".example.com"
		conversion := map[string]any{"strategy": "None"}
		if strategy == "webhook" {
			conversion = webhookConversion(hooks.base+"/convert", hooks.ca)
		}
		crd := map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "crontabs." + group},
			"spec": map[string]any{
				"group": group, "scope": "Namespaced",
				"names":      map[string]any{"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
				"versions":   versions("v1"),
				"conversion": conversion,
			},
		}
		v1 := s.registerCRD(group, "crontabs", crd)
		v2 := strings.Replace(v1, "/v1/", "/v2/", 1)
		crdPath := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs." + group
		name := func(step string) string { return strategy + "-" + step }
		tab := func(n, apiVersion string, spec map[string]any) map[string]any {
			return map[string]any{"apiVersion": apiVersion, "kind": "CronTab", "metadata": map[string]any{"name": n}, "spec": spec}
		}
		v1spec := func(cron string, size int) map[string]any { return map[string]any{"cronSpec": cron, "size": size} }
		s.call(name("create-v1"), "POST", v1, tab("a", group+"/v1", v1spec("*/1 * * * *", 1)))
		s.call(name("get-v2-before"), "GET", v2+"/a", nil)

		// v2 becomes the storage version; it takes effect once the server's CRD handler has
		// seen the change: wait until an object written through v1 is stored in v2 (read
		// through v1, the webhook's annotation says it came from v2; under None, until the
		// CRD's storedVersions lists v2), not recorded
		body := map[string]any{"spec": map[string]any{"versions": versions("v2")}}
		if r, err := s.t.doAs(s.ctx, "PATCH", crdPath, ctMerge, "", body); err != nil || r.status != 200 {
			s.fail("patch the CRD: %v %v", err, r)
		}
		deadline := time.Now().Add(15 * time.Second)
		for probe := 0; ; probe++ {
			done := false
			if strategy == "webhook" {
				p := "probe-" + string(rune('a'+probe%26))
				if _, err := s.t.do(s.ctx, "POST", v1, tab(p, group+"/v1", v1spec("*/9 * * * *", 9))); err == nil {
					r, err := s.t.do(s.ctx, "GET", v1+"/"+p, nil)
					done = err == nil && str(r.body, "metadata", "annotations", "conv.example.com/from") == "v2"
				}
				_, _ = s.t.do(s.ctx, "DELETE", v1+"/"+p, nil)
			} else {
				r, err := s.t.do(s.ctx, "GET", crdPath, nil)
				stored, _ := field(r.body, "status", "storedVersions").([]any)
				done = err == nil && len(stored) == 2
			}
			if done {
				break
			}
			if time.Now().After(deadline) {
				s.fail("%s: v2 not the storage version within 15s", strategy)
			}
			time.Sleep(100 * time.Millisecond)
		}
		r, err := s.t.do(s.ctx, "GET", crdPath, nil)
		if err != nil {
			s.fail("get crd: %v", err)
		}
		s.recordAs(name("stored-versions"), "GET "+crdPath, r, field(r.body, "status", "storedVersions"))
		s.call(name("get-v1"), "GET", v1+"/a", nil)
		s.call(name("get-v2"), "GET", v2+"/a", nil)
		// With the watch cache, v2's cacher may still be (re)initializing after the storage
		// version changed: 429 "storage is (re)initializing" with retryAfterSeconds 1, which
		// clients retry; lists and the watch below are retried here (unrecorded) for at most
		// 15 s, so the recording holds what a client ends up with, not the race.
		for until := time.Now().Add(15 * time.Second); time.Now().Before(until); time.Sleep(time.Second) {
			if r, err := s.t.do(s.ctx, "GET", v2, nil); err != nil || r.status != 429 {
				break
			}
		}
		s.call(name("list-v2"), "GET", v2, nil)
		w := v2 + "?" + q("watch", "1", "resourceVersion", "0")
		h := s.watch(w)
		for until := time.Now().Add(15 * time.Second); h.res.status == 429 && time.Now().Before(until); {
			h.close()
			time.Sleep(time.Second)
			h = s.watch(w)
		}
		h.collect(watchWait, untilN(1))
		s.recordWatch(name("watch-v2"), w, h)
		s.call(name("create-v1-after"), "POST", v1, tab("b", group+"/v1", v1spec("*/2 * * * *", 2)))
		s.call(name("get-v1-after"), "GET", v1+"/b", nil)
		s.call(name("get-v2-after"), "GET", v2+"/b", nil)
		s.callCT(name("patch-v2"), "PATCH", v2+"/a", ctMerge, map[string]any{"metadata": map[string]any{"labels": map[string]any{"migrated": "yes"}}})
		s.call(name("get-v1-patched"), "GET", v1+"/a", nil)
		s.call(name("get-v2-patched"), "GET", v2+"/a", nil)
		if _, err := s.t.do(s.ctx, "DELETE", crdPath, nil); err != nil {
			s.fail("delete the CRD: %v", err)
		}
		s.pollUntil(crdPath, 30*time.Second, func(r *response) bool { return r.status == 404 })
	}
}
