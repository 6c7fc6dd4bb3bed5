package main

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// step is one recorded exchange, before normalization.
type step struct {
	Step        string         `json:"step"`
	Request     string         `json:"request"`
	Status      int            `json:"status"`
	ContentType string         `json:"contentType,omitempty"`
	Body        any            `json:"body,omitempty"`
	Events      []any          `json:"events,omitempty"`
	Ended       string         `json:"ended,omitempty"`
	Facts       map[string]any `json:"facts,omitempty"`
}

// scenarioResult is everything one scenario observed.
type scenarioResult struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Steps       []*step `json:"steps"`
	// Error is set when the scenario could not run to its end (a transport
	// error, or a setup request the server refused); its steps so far stay.
	Error string `json:"error,omitempty"`

	setupRVs []string          // see sc.setupRVs; consumed by normalizeScenario
	aliases  map[string]string // see sc.alias; consumed by normalizeScenario
}

// scenarioDef is one scenario in the catalogue.
type scenarioDef struct {
	name, description string
	run               func(s *sc)
}

// abort is raised (as a panic value, recovered by runScenario) to end a
// scenario early with an error; it never escapes the runner.
type abort struct{ err error }

// sc is the context one scenario runs in.
type sc struct {
	ctx     context.Context
	t       *target
	compact func(context.Context) error
	run     string // run id, part of every namespace name
	ns      string
	res     *scenarioResult
	// cleanups run when the scenario ends, also after a failure (not recorded).
	cleanups []func()
	// rootCAs: 1 when the scenario's namespace held the root CA publisher's
	// kube-root-ca.crt from the start (a watch from 0 gets one more synthetic
	// ADDED), else 0
	rootCAs int
	// gaveUp: a poll of this scenario reached its bound without settling
	// (the server lacks the controller); later polls get a short bound.
	gaveUp bool
	// controller is what this scenario's polls wait for ("garbage-collector",
	// "namespace"); see target.lacking.
	controller string
	// setupRVs are the resourceVersions of objects written by setup
	// requests: not compared themselves, but ranked with the others so that
	// every write of the scenario has its place in the order.
	setupRVs []string
	// aliases are names picked at run time and their stable stand-ins in
	// the recording (see alias).
	aliases map[string]string
}

// alias makes the recording show name as stand (wherever it appears): for
// names a scenario picks at run time, e.g. a namespace chosen because its
// name's hash falls in a shard.
func (s *sc) alias(name, stand string) {
	if s.aliases == nil {
		s.aliases = map[string]string{}
	}
	s.aliases[name] = stand
}

func (s *sc) fail(format string, args ...any) {
	panic(abort{fmt.Errorf(format, args...)})
}

// cms is the configmap collection path in the scenario's namespace.
func (s *sc) cms(query string) string {
	p := fmt.Sprintf("/api/v1/namespaces/%s/configmaps", s.ns)
	if query != "" {
		p += "?" + query
	}
	return p
}

func (s *sc) cm(name string) string {
	return fmt.Sprintf("/api/v1/namespaces/%s/configmaps/%s", s.ns, name)
}

func configMap(name string, labels map[string]string, data map[string]string) map[string]any {
	md := map[string]any{"name": name}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	o := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}
	if data != nil {
		o["data"] = data
	}
	return o
}

// call performs a request and records it as a step.
func (s *sc) call(name, method, path string, body any) *response {
	r, err := s.t.do(s.ctx, method, path, body)
	if err != nil {
		s.fail("%s: %s %s: %v", name, method, path, err)
	}
	s.res.Steps = append(s.res.Steps, &step{
		Step: name, Request: method + " " + path, Status: r.status, ContentType: r.contentType, Body: r.body,
	})
	return r
}

// setup performs a request that is not compared (only its success matters).
func (s *sc) setup(method, path string, body any) *response {
	r, err := s.t.do(s.ctx, method, path, body)
	if err != nil {
		s.fail("setup %s %s: %v", method, path, err)
	}
	if r.status >= 300 {
		s.fail("setup %s %s: %s", method, path, r)
	}
	// Only written objects count: a list's resourceVersion is not an object's.
	if method != "GET" && str(r.body, "kind") != "Status" && field(r.body, "items") == nil {
		if rv := rvOf(r); rv != "" {
			s.setupRVs = append(s.setupRVs, rv)
		}
	}
	return r
}

// syncCache makes a server with a watch cache catch up before a request
// with resourceVersion=0 ("any version"): a plain list is a consistent read,
// which kube-apiserver serves from its cache only once the cache has reached
// etcd's current revision. Without it, a resourceVersion=0 read right after
// writes may or may not see them, and the recording would flake. Not
// recorded.
func (s *sc) syncCache() {
	s.setup("GET", s.cms(""), nil)
}

// fact attaches a derived observation to the last step.
func (s *sc) fact(key string, v any) {
	if len(s.res.Steps) == 0 {
		s.fail("fact %q before any step", key)
	}
	st := s.res.Steps[len(s.res.Steps)-1]
	if st.Facts == nil {
		st.Facts = map[string]any{}
	}
	st.Facts[key] = v
}

// doCompact compacts the server's store at its current revision.
func (s *sc) doCompact() {
	if err := s.compact(s.ctx); err != nil {
		s.fail("compact: %v", err)
	}
}

// watch opens a watch and returns its handle; recordWatch turns it into a step.
func (s *sc) watch(path string) *watchHandle {
	h, err := s.t.openWatch(s.ctx, path)
	if err != nil {
		s.fail("watch %s: %v", path, err)
	}
	return h
}

func (s *sc) recordWatch(name, path string, h *watchHandle) *watchResult {
	res := h.close()
	evs := make([]any, 0, len(res.events))
	for _, e := range res.events {
		evs = append(evs, e)
	}
	s.res.Steps = append(s.res.Steps, &step{
		Step: name, Request: "WATCH " + path, Status: res.status, ContentType: res.contentType,
		Body: res.body, Events: evs, Ended: res.ended,
	})
	return res
}

// --- small JSON helpers -------------------------------------------------

func field(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func str(v any, path ...string) string {
	s, _ := field(v, path...).(string)
	return s
}

func items(v any) []any {
	l, _ := field(v, "items").([]any)
	return l
}

func names(v any) []string {
	var out []string
	for _, it := range items(v) {
		out = append(out, str(it, "metadata", "name"))
	}
	return out
}

func rvOf(r *response) string { return str(r.body, "metadata", "resourceVersion") }

func rvNum(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func eventTypes(evs []map[string]any) []string {
	var out []string
	for _, e := range evs {
		out = append(out, str(e, "type"))
	}
	return out
}

func countType(evs []map[string]any, typ string) int {
	n := 0
	for _, e := range evs {
		if str(e, "type") == typ {
			n++
		}
	}
	return n
}

// untilN stops once n events other than BOOKMARK have arrived.
func untilN(n int) func([]map[string]any) bool {
	return func(evs []map[string]any) bool { return len(evs)-countType(evs, "BOOKMARK") >= n }
}

func isInitialEventsEnd(e map[string]any) bool {
	return str(e, "type") == "BOOKMARK" &&
		str(e, "object", "metadata", "annotations", "k8s.io/initial-events-end") == "true"
}

func q(kv ...string) string {
	// The caller's order, not url.Values.Encode's sorted one: the recorded
	// request reads like the code that made it.
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, url.QueryEscape(kv[i])+"="+url.QueryEscape(kv[i+1]))
	}
	return strings.Join(parts, "&")
}

// runScenario runs one scenario in a fresh namespace.
func runScenario(ctx context.Context, t *target, compact func(context.Context) error, run string, d scenarioDef) (res *scenarioResult) {
	res = &scenarioResult{Name: d.name, Description: d.description}
	s := &sc{ctx: ctx, t: t, compact: compact, run: run, ns: "kd-" + run + "-" + d.name, res: res}
	defer func() {
		for i := len(s.cleanups) - 1; i >= 0; i-- {
			s.cleanups[i]()
		}
		res.setupRVs = s.setupRVs
		res.aliases = s.aliases
		if r := recover(); r != nil {
			a, ok := r.(abort)
			if !ok {
				panic(r)
			}
			res.Error = a.err.Error()
		}
	}()
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": s.ns}}
	// A server without a namespaces resource (an embedded one may have
	// none) still gets the scenarios: only a refused create of an existing
	// resource is fatal.
	if r, err := t.do(ctx, "POST", "/api/v1/namespaces", ns); err != nil {
		s.fail("create namespace: %v", err)
	} else if r.status >= 300 && r.status != 404 && r.status != 405 {
		s.fail("create namespace: %s", r)
	} else if r.status == 201 && s.awaitRootCA(s.ns) != nil {
		s.rootCAs = 1
	}
	d.run(s)
	return res
}

// awaitRootCA waits (unrecorded, every 50ms, at most 10s) until the fresh
// namespace holds the kube-root-ca.crt ConfigMap that kube-controller-manager's
// root-ca-certificate-publisher puts into every namespace right after it is
// created: the scenarios' ConfigMap lists and watches then hold it on every
// run, not only when the publisher won the race. A server without the
// publisher costs the bound once (target.lacking), then nothing.
func (s *sc) awaitRootCA(ns string) *response {
	const publisher = "root-ca-publisher"
	if s.t.lacking[publisher] {
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := s.t.do(s.ctx, "GET", "/api/v1/namespaces/"+ns+"/configmaps/"+rootCA, nil)
		if err != nil {
			s.fail("wait for %s: %v", rootCA, err)
		}
		if r.status == 200 {
			return r
		}
		if time.Now().After(deadline) {
			s.t.lacking[publisher] = true
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rootCA is the ConfigMap kube-controller-manager's root CA publisher keeps
// in every namespace.
const rootCA = "kube-root-ca.crt"
