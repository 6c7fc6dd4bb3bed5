package main

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// Sharded lists and watches (KEP-5866; alpha in Kubernetes 1.36 behind the
// ShardedListAndWatch feature gate, which the harness turns on). A list or
// watch with shardSelector=shardRange(object.metadata.uid, '0x…', '0x…')
// (or object.metadata.namespace; several ranges joined by ||) gets only the
// objects whose field hashes into one of the ranges: 64-bit FNV-1a of the
// field's value, compared with the 16-digit bounds, start inclusive, end
// exclusive ('0x10000000000000000' is 2^64). A sharded list says so in
// metadata.shardInfo.selector.
//
// Uids are random, so which object falls in which range is decided at run
// time. To keep recordings deterministic, the scenarios place objects: they
// create an object under its final name until its uid hashes into the
// wanted range (the misses are deleted again, through unrecorded requests
// made before anything that could see them), so every name's shard is known
// in advance and lists and watches can be recorded as they are. Namespaces
// are picked by their name's hash among candidates, and recorded under an
// alias. The one thing that cannot be placed is an object created outside a
// watch's shard while the watch is open (a miss would be visible to it):
// that is recorded as facts computed from the uids the server returned.

const (
	shardUID = "object.metadata.uid"
	shardNS  = "object.metadata.namespace"
	hex0     = "0x0000000000000000"
	hexQ1    = "0x4000000000000000"
	hexHalf  = "0x8000000000000000"
	hexQ3    = "0xc000000000000000"
	hexTop   = "0x10000000000000000"
)

// shardRange is the selector for one range, as kube-apiserver prints it back.
func shardRange(field, start, end string) string {
	return fmt.Sprintf("shardRange(%s, '%s', '%s')", field, start, end)
}

// shardHash is what kube-apiserver ranges over: 64-bit FNV-1a of the value.
func shardHash(v string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(v))
	return h.Sum64()
}

func lowerHalf(h uint64) bool { return h < 1<<63 }
func upperHalf(h uint64) bool { return h >= 1<<63 }

// inQuarter: h lies in [q·2^62, (q+1)·2^62).
func inQuarter(q uint64) func(uint64) bool { return func(h uint64) bool { return h>>62 == q } }

// place creates ConfigMap name (with these labels) until its uid hashes where
// want says, deleting the misses; neither the misses nor their deletion are
// recorded. A watch open meanwhile sees the misses only if they fall in its
// shard, so only place objects inside an open watch's shard.
func (s *sc) place(name string, labels map[string]string, want func(uint64) bool) *response {
	r, _ := s.placeCounting(name, labels, want)
	return r
}

// placeCounting is place that also returns the uids of the misses.
func (s *sc) placeCounting(name string, labels map[string]string, want func(uint64) bool) (*response, map[string]bool) {
	misses := map[string]bool{}
	for try := 0; try < 64; try++ {
		r, err := s.t.do(s.ctx, "POST", s.cms(""), configMap(name, labels, map[string]string{"k": "1"}))
		if err != nil {
			s.fail("place %s: %v", name, err)
		}
		if r.status >= 300 {
			s.fail("place %s: %s", name, r)
		}
		uid := str(r.body, "metadata", "uid")
		if want(shardHash(uid)) {
			s.setupRVs = append(s.setupRVs, rvOf(r))
			return r, misses
		}
		misses[uid] = true
		if d, err := s.t.do(s.ctx, "DELETE", s.cm(name), nil); err != nil || d.status >= 300 {
			s.fail("place %s: delete a miss: %v %v", name, err, d)
		}
	}
	s.fail("place %s: no uid in the wanted range after 64 tries", name)
	return nil, nil
}

// placeRootCA gives the namespace's kube-root-ca.crt (the root CA publisher's,
// random uid like any object) a uid where want says: the copy is deleted
// (unrecorded) until the publisher's next one hashes there, so the scenario's
// lists hold it in a known shard on every run. The first copy is always
// replaced, so the one kept is written after the objects placed before this
// call (its resourceVersion's rank is the same on every run). Nothing when the
// server has no publisher.
func (s *sc) placeRootCA(want func(uint64) bool) {
	for try := 0; try < 64; try++ {
		r := s.awaitRootCA(s.ns)
		if r == nil {
			return
		}
		if try > 0 && want(shardHash(str(r.body, "metadata", "uid"))) {
			s.setupRVs = append(s.setupRVs, rvOf(r))
			return
		}
		if d, err := s.t.do(s.ctx, "DELETE", s.cm(rootCA), nil); err != nil || d.status >= 300 {
			s.fail("place %s: delete a miss: %v %v", rootCA, err, d)
		}
	}
	s.fail("place %s: no uid in the wanted range after 64 tries", rootCA)
}

// scShardList: sharded lists by uid: halves, two ranges joined by ||,
// overlapping ranges, paging with limit/continue, with a label selector, at
// resourceVersion=0, an empty range, and the verbs that take no shard.
func scShardList(s *sc) {
	// Quarters of the hash space: a and e in the first, b in the second, c and f
	// in the third, d in the fourth (so the lower half is a, b, e).
	red := map[string]string{"color": "red"}
	for _, p := range []struct {
		name   string
		labels map[string]string
		q      uint64
	}{{"a", red, 0}, {"b", nil, 1}, {"c", red, 2}, {"d", red, 3}, {"e", nil, 0}, {"f", nil, 2}} {
		s.place(p.name, p.labels, inQuarter(p.q))
	}
	// with b (not in the fourth quarter, whose deletecollection would make the
	// publisher write again while the scenario lists)
	s.placeRootCA(inQuarter(1))
	lower := shardRange(shardUID, hex0, hexHalf)
	upper := shardRange(shardUID, hexHalf, hexTop)
	q0q2 := shardRange(shardUID, hex0, hexQ1) + " || " + shardRange(shardUID, hexHalf, hexQ3)
	s.call("list-lower-half", "GET", s.cms(q("shardSelector", lower)), nil)
	s.call("list-upper-half", "GET", s.cms(q("shardSelector", upper)), nil)
	s.call("list-two-ranges", "GET", s.cms(q("shardSelector", q0q2)), nil)
	overlap := shardRange(shardUID, hex0, hexQ3) + " || " + shardRange(shardUID, hexQ1, hexTop)
	s.call("list-overlapping-ranges", "GET", s.cms(q("shardSelector", overlap)), nil)
	s.call("list-spaced-selector", "GET", s.cms(q("shardSelector",
		"  shardRange( object.metadata.uid ,'"+hex0+"',   '"+hexHalf+"' )||shardRange(object.metadata.uid,'"+hexQ3+"','"+hexTop+"') ")), nil)
	s.call("list-whole-range", "GET", s.cms(q("shardSelector", shardRange(shardUID, hex0, hexTop))), nil)
	s.call("list-tiny-range", "GET", s.cms(q("shardSelector", shardRange(shardUID, hex0, "0x0000000000000001"))), nil)

	p1 := s.call("page-1", "GET", s.cms(q("limit", "2", "shardSelector", lower)), nil)
	p2 := s.call("page-2", "GET", s.cms(q("limit", "2", "shardSelector", lower, "continue", str(p1.body, "metadata", "continue"))), nil)
	s.fact("sameRVAsPage1", rvOf(p2) == rvOf(p1))
	t1 := s.call("two-ranges-page-1", "GET", s.cms(q("limit", "3", "shardSelector", q0q2)), nil)
	t2 := s.call("two-ranges-page-2", "GET", s.cms(q("limit", "3", "shardSelector", q0q2, "continue", str(t1.body, "metadata", "continue"))), nil)
	s.fact("sameRVAsPage1", rvOf(t2) == rvOf(t1))
	// The continue token carries the query's position, not its shard: the
	// second page asked with another selector.
	s.call("page-2-other-selector", "GET", s.cms(q("limit", "2", "shardSelector", upper, "continue", str(p1.body, "metadata", "continue"))), nil)

	s.call("list-with-label-selector", "GET", s.cms(q("labelSelector", "color=red", "shardSelector", lower)), nil)
	s.call("list-by-namespace-whole-range", "GET", s.cms(q("shardSelector", shardRange(shardNS, hex0, hexTop))), nil)
	s.syncCache()
	s.call("list-rv-0", "GET", s.cms(q("resourceVersion", "0", "shardSelector", upper)), nil)
	s.call("get-ignores-shard", "GET", s.cm("c")+"?"+q("shardSelector", lower), nil)
	// deletecollection lists with the same options: only the shard goes.
	s.call("deletecollection-fourth-quarter", "DELETE", s.cms(q("shardSelector", shardRange(shardUID, hexQ3, hexTop))), nil)
	s.call("list-after-deletecollection", "GET", s.cms(""), nil)
}

// scShardWatch: a watch with a uid shard sees updates, creates and deletes of
// objects in its shard and nothing of the others; a watch from 0 with the
// selector gets synthetic ADDED events for the shard only.
func scShardWatch(s *sc) {
	s.place("in-a", nil, inQuarter(0))
	s.place("in-b", nil, inQuarter(1))
	s.place("out-a", nil, inQuarter(2))
	s.place("out-b", nil, inQuarter(3))
	s.placeRootCA(inQuarter(2))
	lower := shardRange(shardUID, hex0, hexHalf)
	s.syncCache()
	from0 := s.cms(q("watch", "1", "resourceVersion", "0", "shardSelector", lower))
	h0 := s.watch(from0)
	// A write inside the shard after the initial events marks their end (a
	// server that does not filter sends out-a and out-b before it).
	last := s.setup("PUT", s.cm("in-b"), configMap("in-b", nil, map[string]string{"k": "mark"}))
	h0.collect(watchWait, func(evs []map[string]any) bool {
		return len(evs) > 0 && str(evs[len(evs)-1], "type") == "MODIFIED"
	})
	s.recordWatch("watch-from-0", from0, h0)

	s.call("list", "GET", s.cms(q("shardSelector", lower)), nil)
	// From the last write: the list's resourceVersion may lie past it.
	path := s.cms(q("watch", "1", "resourceVersion", rvOf(last), "shardSelector", lower))
	h := s.watch(path)
	s.setup("PUT", s.cm("in-a"), configMap("in-a", nil, map[string]string{"k": "2"}))   // MODIFIED
	s.setup("PUT", s.cm("out-a"), configMap("out-a", nil, map[string]string{"k": "2"})) // nothing
	_, misses := s.placeCounting("new-in", nil, lowerHalf)                              // ADDED (misses are outside the shard)
	// Creates the runner cannot place (a miss would be seen): x-1, x-2, ...
	// until one falls outside the shard; those inside must arrive as ADDED,
	// the one outside must not. Left out of the recorded events (their count
	// is chance), checked as facts; so are new-in's misses (seen only by a
	// server that does not filter the watch: kube-apiserver without its
	// watch cache, see README).
	xIn := map[string]bool{}
	xOut := ""
	for i := 1; i <= 40 && xOut == ""; i++ {
		name := fmt.Sprintf("x-%d", i)
		r, err := s.t.do(s.ctx, "POST", s.cms(""), configMap(name, nil, map[string]string{"k": "1"}))
		if err != nil || r.status >= 300 {
			s.fail("create %s: %v %v", name, err, r)
		}
		if lowerHalf(shardHash(str(r.body, "metadata", "uid"))) {
			xIn[name] = true
		} else {
			xOut = name
		}
	}
	s.setup("DELETE", s.cm("in-b"), nil)  // DELETED
	s.setup("DELETE", s.cm("out-b"), nil) // nothing
	// A last write inside the shard marks the end: every event before it has arrived.
	s.setup("PUT", s.cm("new-in"), configMap("new-in", nil, map[string]string{"k": "end"}))
	h.collect(watchWait, func(evs []map[string]any) bool {
		for _, e := range evs {
			if str(e, "type") == "MODIFIED" && str(e, "object", "data", "k") == "end" {
				return true
			}
		}
		return false
	})
	res := h.close()
	var kept, xs []map[string]any
	missSeen := false
	for _, e := range res.events {
		switch {
		case strings.HasPrefix(str(e, "object", "metadata", "name"), "x-"):
			xs = append(xs, e)
		case misses[str(e, "object", "metadata", "uid")]:
			missSeen = true
		default:
			kept = append(kept, e)
		}
	}
	evs := make([]any, len(kept))
	for i, e := range kept {
		evs[i] = e
	}
	s.res.Steps = append(s.res.Steps, &step{Step: "watch", Request: "WATCH " + path, Status: res.status,
		ContentType: res.contentType, Body: res.body, Events: evs, Ended: res.ended})
	s.fact("types", eventTypes(kept))
	seen := map[string]bool{}
	allAdded := true
	for _, e := range xs {
		seen[str(e, "object", "metadata", "name")] = true
		allAdded = allAdded && str(e, "type") == "ADDED"
	}
	s.fact("createsOutsideTheShardUnseen", xOut != "" && !seen[xOut] && !missSeen)
	inSeen := allAdded && len(seen) == len(xIn)+boolInt(seen[xOut])
	for n := range xIn {
		inSeen = inSeen && seen[n]
	}
	s.fact("createsInsideTheShardSeenAsAdded", inSeen)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scShardStreaming: a streaming list (sendInitialEvents) with a shard
// selector: initial ADDED for the shard only, the initial-events-end
// bookmark, then live events of the shard only.
func scShardStreaming(s *sc) {
	s.place("in-1", nil, lowerHalf)
	s.place("out-1", nil, upperHalf)
	s.place("in-2", nil, lowerHalf)
	s.placeRootCA(upperHalf)
	lower := shardRange(shardUID, hex0, hexHalf)
	path := s.cms(q("watch", "1", "sendInitialEvents", "true", "resourceVersionMatch", "NotOlderThan",
		"allowWatchBookmarks", "true", "shardSelector", lower))
	h := s.watch(path)
	h.collect(watchWait, func(evs []map[string]any) bool { return len(evs) > 0 && isInitialEventsEnd(evs[len(evs)-1]) })
	s.setup("PUT", s.cm("out-1"), configMap("out-1", nil, map[string]string{"k": "2"}))
	s.setup("PUT", s.cm("in-2"), configMap("in-2", nil, map[string]string{"k": "2"}))
	h.collect(watchWait, func(evs []map[string]any) bool {
		for _, e := range evs {
			if str(e, "type") == "MODIFIED" && str(e, "object", "metadata", "name") == "in-2" {
				return true
			}
		}
		return false
	})
	res := h.close()
	var plain []any
	var types []string
	for _, e := range res.events {
		if str(e, "type") != "BOOKMARK" || isInitialEventsEnd(e) {
			plain = append(plain, e)
			types = append(types, str(e, "type"))
		}
	}
	// Periodic bookmarks may interleave (watch cache on); left out.
	s.res.Steps = append(s.res.Steps, &step{Step: "watch-send-initial-events", Request: "WATCH " + path,
		Status: res.status, ContentType: res.contentType, Body: res.body, Events: plain, Ended: res.ended})
	s.fact("typesWithoutPeriodicBookmarks", types)
}

// scShardNamespace: shards by namespace across namespaces: a cluster-wide list,
// watch and streaming list of ConfigMaps (narrowed by a label to this run's)
// see the namespaces whose name hashes into the range.
func scShardNamespace(s *sc) {
	// Candidates s000-kd-<run>, s001-kd-<run>, ...: the first two in the lower
	// half and the first in the upper half, recorded as ns-in-1, ns-in-2,
	// ns-out-1 (zero-padded, so name order is pick order). The counter comes
	// first: FNV-1a's top bits hardly depend on a string's last bytes (one
	// multiplication by the prime follows them), so names differing only at
	// their end all land in the same half (observed: kd-<run>-sns-000 to -999
	// all in one half). A client sharding by namespace meets the same skew.
	var in []string
	out := ""
	for i := 0; i < 1000 && (len(in) < 2 || out == ""); i++ {
		name := fmt.Sprintf("s%03d-kd-%s", i, s.run)
		if lowerHalf(shardHash(name)) {
			if len(in) < 2 {
				in = append(in, name)
			}
		} else if out == "" {
			out = name
		}
	}
	if len(in) < 2 || out == "" {
		s.fail("no namespace names in both halves among 1000 candidates")
	}
	s.alias(in[0], "kd-<run>-ns-in-1")
	s.alias(in[1], "kd-<run>-ns-in-2")
	s.alias(out, "kd-<run>-ns-out-1")
	label := "kd-shard=" + s.run
	lbl := map[string]string{"kd-shard": s.run}
	var last *response
	for _, ns := range []string{in[0], in[1], out} {
		s.setup("POST", "/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
		s.awaitRootCA(ns)
		ns := ns
		s.cleanups = append(s.cleanups, func() { _, _ = s.t.do(s.ctx, "DELETE", "/api/v1/namespaces/"+ns, nil) })
		last = s.setup("POST", "/api/v1/namespaces/"+ns+"/configmaps", configMap("cm", lbl, map[string]string{"k": "1"}))
	}
	lower := shardRange(shardNS, hex0, hexHalf)
	upper := shardRange(shardNS, hexHalf, hexTop)
	all := "/api/v1/configmaps"
	s.call("list-lower-half", "GET", all+"?"+q("labelSelector", label, "shardSelector", lower), nil)
	s.call("list-upper-half", "GET", all+"?"+q("labelSelector", label, "shardSelector", upper), nil)
	s.call("list-lower-half-limit-1", "GET", all+"?"+q("labelSelector", label, "shardSelector", lower, "limit", "1"), nil)
	// The namespace of a namespaced list is in or out as a whole.
	s.call("namespaced-list-in", "GET", "/api/v1/namespaces/"+in[1]+"/configmaps?"+q("shardSelector", lower), nil)
	s.call("namespaced-list-out", "GET", "/api/v1/namespaces/"+out+"/configmaps?"+q("shardSelector", lower), nil)
	// Namespaces themselves are cluster-scoped: their namespace is "", whose
	// hash (FNV-1a's offset basis, 0xcbf29ce484222325) is in the upper half.
	byName := "kubernetes.io/metadata.name=" + in[0]
	s.call("namespaces-lower-half", "GET", "/api/v1/namespaces?"+q("labelSelector", byName, "shardSelector", lower), nil)
	s.call("namespaces-upper-half", "GET", "/api/v1/namespaces?"+q("labelSelector", byName, "shardSelector", upper), nil)

	// From the last write (an object's resourceVersion): a cluster-wide list's
	// may lie past it (other writes), and the request line would differ by run.
	path := all + "?" + q("watch", "1", "resourceVersion", rvOf(last), "labelSelector", label, "shardSelector", lower)
	h := s.watch(path)
	s.setup("POST", "/api/v1/namespaces/"+out+"/configmaps", configMap("w", lbl, map[string]string{"k": "1"}))   // nothing
	s.setup("POST", "/api/v1/namespaces/"+in[0]+"/configmaps", configMap("w", lbl, map[string]string{"k": "1"})) // ADDED
	s.setup("PUT", "/api/v1/namespaces/"+in[1]+"/configmaps/cm", configMap("cm", lbl, map[string]string{"k": "2"}))
	s.setup("DELETE", "/api/v1/namespaces/"+out+"/configmaps/w", nil)   // nothing
	s.setup("DELETE", "/api/v1/namespaces/"+in[0]+"/configmaps/w", nil) // DELETED
	h.collect(watchWait, untilN(3))
	res := s.recordWatch("watch-cluster-wide", path, h)
	s.fact("types", eventTypes(res.events))

	stream := all + "?" + q("watch", "1", "sendInitialEvents", "true", "resourceVersionMatch", "NotOlderThan",
		"allowWatchBookmarks", "true", "labelSelector", label, "shardSelector", lower)
	h2 := s.watch(stream)
	h2.collect(watchWait, func(evs []map[string]any) bool { return len(evs) > 0 && isInitialEventsEnd(evs[len(evs)-1]) })
	s.recordWatch("watch-send-initial-events", stream, h2)
}

// scShardInvalid: malformed shard selectors on a list, a watch and a
// streaming list: kube-apiserver's exact errors.
func scShardInvalid(s *sc) {
	s.setup("POST", s.cms(""), configMap("a", nil, map[string]string{"k": "1"}))
	bad := []struct{ name, sel string }{
		{"short-hex", "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')"},
		{"start-above-end", shardRange(shardUID, hexHalf, hex0)},
		{"start-equals-end", shardRange(shardUID, hexHalf, hexHalf)},
		{"unsupported-field", shardRange("object.metadata.name", hex0, hexHalf)},
		{"and", shardRange(shardUID, hex0, hexHalf) + " && " + shardRange(shardUID, hexQ1, hexTop)},
		{"other-function", "hash(object.metadata.uid) < 5"},
		{"not-a-call", "true"},
		{"parse-error", "shardRange(object.metadata.uid, '" + hex0 + "'"},
		{"mixed-fields", shardRange(shardUID, hex0, hexHalf) + " || " + shardRange(shardNS, hexHalf, hexTop)},
		{"uppercase-hex", shardRange(shardUID, hex0, "0xABCDEF0000000000")},
		{"seventeen-digits-not-2^64", shardRange(shardUID, hex0, "0x20000000000000000")},
		{"eighteen-digits", shardRange(shardUID, hex0, "0x100000000000000000")},
		{"no-digits", "shardRange(object.metadata.uid, '0x', '0x8000000000000000')"},
		{"no-prefix", "shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')"},
		{"int-literals", "shardRange(object.metadata.uid, 0, 1)"},
		{"two-arguments", "shardRange(object.metadata.uid, '" + hex0 + "')"},
		{"double-quotes", `shardRange(object.metadata.uid, "` + hex0 + `", "` + hexTop + `")`},
		{"blank", "   "},
	}
	for _, b := range bad {
		s.call("list-"+b.name, "GET", s.cms(q("shardSelector", b.sel)), nil)
	}
	// An empty parameter is no selector: the whole list, no shardInfo.
	s.call("list-empty", "GET", s.cms("shardSelector="), nil)
	for _, b := range bad[:2] {
		p := s.cms(q("watch", "1", "shardSelector", b.sel))
		h := s.watch(p)
		h.collect(watchWait, untilN(1))
		s.recordWatch("watch-"+b.name, p, h)
	}
	p := s.cms(q("watch", "1", "sendInitialEvents", "true", "resourceVersionMatch", "NotOlderThan",
		"allowWatchBookmarks", "true", "shardSelector", bad[0].sel))
	h := s.watch(p)
	h.collect(watchWait, untilN(1))
	s.recordWatch("streaming-short-hex", p, h)
}
