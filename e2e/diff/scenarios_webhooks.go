package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// hookServer is an admission webhook server run by the recorder on 127.0.0.1 (HTTPS, a
// certificate from a CA of its own), answering by path, and remembering the reviews it was
// sent.
type hookServer struct {
	base string // https://127.0.0.1:port
	ca   []byte // the CA's PEM
	srv  *http.Server
	mu   sync.Mutex
	seen []any
}

func startHookServer() (*hookServer, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "diff-webhook-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:   now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &hookServer{
		base: "https://" + ln.Addr().String(),
		ca:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
	}
	h.srv = &http.Server{
		Handler:   http.HandlerFunc(h.serve),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}}},
		// HTTP/1.1 only, as most webhook servers written in Rust serve
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	go func() { _ = h.srv.ServeTLS(ln, "", "") }()
	return h, nil
}

// take returns the reviews received since the last take, by path.
func (h *hookServer) take() []any {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.seen
	h.seen = nil
	if out == nil {
		out = []any{}
	}
	// validating webhooks are called at once: in the order of their paths
	sort.SliceStable(out, func(i, j int) bool {
		return str(out[i], "path") < str(out[j], "path")
	})
	return out
}

func (h *hookServer) serve(w http.ResponseWriter, r *http.Request) {
	var review map[string]any
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<20)).Decode(&review); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	req, _ := review["request"].(map[string]any)
	uid, _ := req["uid"].(string)
	if strings.HasPrefix(r.URL.Path, "/convert") {
		// a ConversionReview (scenario conversion-webhook); what it was sent is not recorded
		// (how often a server converts is its own business)
		writeJSON(w, map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
			"response": convertReview(r.URL.Path, uid, req)})
		return
	}
	// what is compared of a review: all but its uid and the user (each server has its own)
	seen := map[string]any{"path": r.URL.Path, "timeout": r.URL.Query().Get("timeout")}
	for k, v := range req {
		if k != "uid" && k != "userInfo" {
			seen[k] = v
		}
	}
	h.mu.Lock()
	h.seen = append(h.seen, seen)
	h.mu.Unlock()
	labels := func(k string) map[string]any {
		m, _ := field(req, k, "metadata", "labels").(map[string]any)
		return m
	}
	has := func(k, label string) bool { _, ok := labels(k)[label]; return ok }
	resp := map[string]any{"uid": uid, "allowed": true}
	deny := func(status map[string]any) {
		resp["allowed"] = false
		if status != nil {
			resp["status"] = status
		}
	}
	switch r.URL.Path {
	case "/validate":
		resp["warnings"] = []any{"looked at by validate.example.com"}
		if has("object", "deny") {
			deny(map[string]any{"message": "label deny is set"})
		}
	case "/coded":
		deny(map[string]any{"code": 403, "reason": "Forbidden", "message": "nope"})
	case "/bare":
		deny(nil)
	case "/bad-uid":
		resp["uid"] = "not-the-uid"
	case "/protect":
		if req["operation"] == "DELETE" && has("oldObject", "protected") {
			deny(map[string]any{"message": "protected objects stay"})
		}
	case "/annotate":
		// whether the label the /mutate webhook adds is there yet
		saw := "no"
		if has("object", "mutated") {
			saw = "yes"
		}
		ops := []any{}
		if field(req, "object", "metadata", "annotations") == nil {
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]any{}})
		}
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations/saw-mutated", "value": saw})
		b, _ := json.Marshal(ops)
		resp["patchType"] = "JSONPatch"
		resp["patch"] = base64.StdEncoding.EncodeToString(b)
	case "/scale-even":
		if n, ok := field(req, "object", "spec", "replicas").(float64); ok && int(n)%2 == 1 {
			b, _ := json.Marshal([]any{map[string]any{"op": "replace", "path": "/spec/replicas", "value": int(n) + 1}})
			resp["patchType"] = "JSONPatch"
			resp["patch"] = base64.StdEncoding.EncodeToString(b)
		}
	case "/scale-cap":
		if n, ok := field(req, "object", "spec", "replicas").(float64); ok && n > 5 {
			deny(map[string]any{"message": "at most 5 replicas"})
		}
	case "/mutate":
		ops := []any{}
		if labels("object") == nil {
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]any{}})
		}
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"})
		b, _ := json.Marshal(ops)
		resp["patchType"] = "JSONPatch"
		resp["patch"] = base64.StdEncoding.EncodeToString(b)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp,
	})
}

// portInText matches the ports of 127.0.0.1 addresses in messages (each run's differ).
var portInText = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// scAdmissionWebhooks registers validating and mutating webhooks (an HTTPS server the
// recorder runs, by URL with its caBundle) for configmaps in the scenario's namespace and
// makes writes they see: the configurations as stored (defaults), creates allowed, denied
// and mutated (a generateName too), an update, merge/strategic/JSON patches and an apply
// denied, a patch and an apply-create allowed, a dry run, deletes (a protected object),
// denials with a code and reason, without a status, an answer with the wrong uid, and an
// unreachable webhook under failurePolicy Fail and Ignore. Every step records the reviews
// the webhooks were sent (all but uid and userInfo) and the warnings.
func scAdmissionWebhooks(s *sc) {
	hooks, err := startHookServer()
	if err != nil {
		s.fail("webhook server: %v", err)
	}
	s.cleanups = append(s.cleanups, func() { _ = hooks.srv.Close() })
	// the namespace is selected by a label whose value is the run (normalized in recordings)
	label := "kinformer.dev/webhook-scenario"
	nsPatch := map[string]any{"metadata": map[string]any{"labels": map[string]any{label: s.run}}}
	if r, err := s.t.doAs(s.ctx, "PATCH", "/api/v1/namespaces/"+s.ns, ctMerge, "", nsPatch); err != nil || r.status != 200 {
		s.fail("label the namespace: %v %v", err, r)
	}
	// a port nothing listens on
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.fail("listen: %v", err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()

	caBundle := base64.StdEncoding.EncodeToString(hooks.ca)
	hook := func(name, url string, ops []any, extra map[string]any) map[string]any {
		h := map[string]any{
			"name":                    name,
			"clientConfig":            map[string]any{"url": url, "caBundle": caBundle},
			"rules":                   []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": ops, "resources": []any{"configmaps"}}},
			"sideEffects":             "None",
			"admissionReviewVersions": []any{"v1"},
			"namespaceSelector":       map[string]any{"matchLabels": map[string]any{label: s.run}},
		}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	only := func(l string) map[string]any {
		return map[string]any{"objectSelector": map[string]any{"matchLabels": map[string]any{l: "1"}}}
	}
	writes := []any{"CREATE", "UPDATE"}
	configs := "/apis/admissionregistration.k8s.io/v1/"
	// the stored configurations, with the port and CA of this run hidden
	stable := func(v any) any {
		return rewriteLeaves(v, func(k string, leaf any) any {
			if x, ok := leaf.(string); ok {
				if k == "caBundle" {
					return "<ca>"
				}
				return portInText.ReplaceAllString(strings.ReplaceAll(x, s.run, "<run>"), "127.0.0.1:<port>")
			}
			return leaf
		})
	}
	register := func(kind, plural, name string, webhooks []any) {
		body := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
			"metadata": map[string]any{"name": name}, "webhooks": webhooks}
		r, err := s.t.do(s.ctx, "POST", configs+plural, body)
		if err != nil {
			s.fail("create %s: %v", name, err)
		}
		s.recordAs("create-"+strings.TrimSuffix(plural, "s"), "POST "+configs+plural, r, stable(r.body))
		s.cleanups = append(s.cleanups, func() { _, _ = s.t.do(s.ctx, "DELETE", configs+plural+"/"+name, nil) })
	}
	// called first (its configuration's name sorts first), and again after /mutate's change
	register("MutatingWebhookConfiguration", "mutatingwebhookconfigurations", "wh-"+s.run+"-a-reinvoke", []any{
		hook("reinvoke.example.com", hooks.base+"/annotate", writes, merge(only("reinvoke"), map[string]any{"reinvocationPolicy": "IfNeeded"})),
	})
	register("MutatingWebhookConfiguration", "mutatingwebhookconfigurations", "wh-"+s.run+"-mutate", []any{
		hook("mutate.example.com", hooks.base+"/mutate", writes, nil),
	})
	register("ValidatingWebhookConfiguration", "validatingwebhookconfigurations", "wh-"+s.run+"-validate", []any{
		hook("validate.example.com", hooks.base+"/validate", writes, nil),
		hook("protect.example.com", hooks.base+"/protect", []any{"DELETE"}, nil),
		hook("coded.example.com", hooks.base+"/coded", writes, only("coded")),
		hook("bare.example.com", hooks.base+"/bare", writes, only("bare")),
		hook("bad-uid.example.com", hooks.base+"/bad-uid", writes, only("baduid")),
		hook("fail.example.com", "https://"+closed+"/x", writes, only("unreachable")),
		hook("ignore.example.com", "https://"+closed+"/x", writes, merge(only("ignored"), map[string]any{"failurePolicy": "Ignore"})),
	})
	// kube-apiserver sees new configurations through its informers: wait until a dry run is
	// both mutated and refused (not recorded)
	deadline := time.Now().Add(15 * time.Second)
	for {
		r, err := s.t.do(s.ctx, "POST", s.cms("dryRun=All"), configMap("probe", map[string]string{"deny": "1"}, nil))
		if err == nil && r.status == 400 {
			r2, err2 := s.t.do(s.ctx, "POST", s.cms("dryRun=All"), configMap("probe", map[string]string{"reinvoke": "1"}, nil))
			if err2 == nil && str(r2.body, "metadata", "labels", "mutated") == "yes" &&
				str(r2.body, "metadata", "annotations", "saw-mutated") == "yes" {
				break
			}
		}
		if time.Now().After(deadline) {
			s.fail("the webhooks were not called within 15s: %v", r)
		}
		time.Sleep(200 * time.Millisecond)
	}
	hooks.take()

	// what the webhooks were sent and what the client was warned of, with the step
	seen := func(r *response) *response {
		ws := append([]string{}, r.warnings...)
		s.fact("warnings", ws)
		s.fact("reviews", stable(toGeneric(hooks.take())))
		last := s.res.Steps[len(s.res.Steps)-1]
		last.Body = stable(last.Body)
		return r
	}
	cm := func(name string, labels ...string) map[string]any {
		l := map[string]string{}
		for _, k := range labels {
			l[k] = "1"
		}
		return configMap(name, l, map[string]string{"k": "v"})
	}

	created := seen(s.call("create-allowed", "POST", s.cms(""), cm("a")))
	seen(s.call("create-denied", "POST", s.cms(""), cm("b", "deny")))
	gen := cm("")
	delete(gen["metadata"].(map[string]any), "name")
	gen["metadata"].(map[string]any)["generateName"] = "gen-"
	seen(s.call("create-generate-name", "POST", s.cms(""), gen))
	seen(s.call("create-reinvoked", "POST", s.cms(""), cm("r", "reinvoke")))
	seen(s.call("create-dry-run", "POST", s.cms("dryRun=All"), cm("dry")))
	seen(s.call("get-dry-run", "GET", s.cm("dry"), nil))

	upd, _ := toGeneric(created.body).(map[string]any)
	if upd == nil {
		s.fail("create-allowed: %v", created)
	}
	upd["metadata"].(map[string]any)["labels"] = map[string]any{"deny": "1"}
	seen(s.call("update-denied", "PUT", s.cm("a"), upd))
	denyLabel := map[string]any{"metadata": map[string]any{"labels": map[string]any{"deny": "1"}}}
	seen(s.callCT("merge-patch-denied", "PATCH", s.cm("a"), ctMerge, denyLabel))
	seen(s.callCT("strategic-patch-denied", "PATCH", s.cm("a"), ctStrategic, denyLabel))
	seen(s.callCT("json-patch-denied", "PATCH", s.cm("a"), ctJSONPatch,
		[]any{map[string]any{"op": "add", "path": "/metadata/labels/deny", "value": "1"}}))
	seen(s.callCT("apply-denied", "PATCH", s.cm("a")+"?fieldManager=applier", ctApply, cm("a", "deny")))
	seen(s.callCT("merge-patch-allowed", "PATCH", s.cm("a"), ctMerge, map[string]any{"data": map[string]any{"k": "w"}}))
	seen(s.callCT("apply-create", "PATCH", s.cm("applied")+"?fieldManager=applier", ctApply, cm("applied")))

	s.setup("POST", s.cms(""), cm("p", "protected"))
	hooks.take()
	seen(s.call("delete-protected", "DELETE", s.cm("p"), nil))
	seen(s.call("delete-allowed", "DELETE", s.cm("a"), nil))

	seen(s.call("deny-coded", "POST", s.cms(""), cm("c", "coded")))
	seen(s.call("deny-bare", "POST", s.cms(""), cm("d", "bare")))
	seen(s.call("answer-wrong-uid", "POST", s.cms(""), cm("e", "baduid")))
	seen(s.call("unreachable-fail", "POST", s.cms(""), cm("f", "unreachable")))
	seen(s.call("unreachable-ignore", "POST", s.cms(""), cm("g", "ignored")))
	seen(s.call("list", "GET", s.cms(""), nil))

	// configurations a real cluster refuses (nothing stored), and one changed (generation)
	invalid := func(step, kind, plural string, webhooks []any) {
		body := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
			"metadata": map[string]any{"name": "wh-" + s.run + "-" + step}, "webhooks": webhooks}
		r := s.call(step, "POST", configs+plural, body)
		if r.status < 300 {
			s.cleanups = append(s.cleanups, func() {
				_, _ = s.t.do(s.ctx, "DELETE", configs+plural+"/wh-"+s.run+"-"+step, nil)
			})
		}
	}
	rule := func(ops, groups, versions, resources []any, scope string) map[string]any {
		r := map[string]any{"operations": ops, "apiGroups": groups, "apiVersions": versions, "resources": resources}
		if scope != "" {
			r["scope"] = scope
		}
		return r
	}
	invalid("invalid-validating", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", []any{
		map[string]any{"name": "short.com", "sideEffects": "Some", "admissionReviewVersions": []any{"v2"},
			"clientConfig": map[string]any{"url": "http://h/p?x=1"}, "timeoutSeconds": 31, "failurePolicy": "Maybe",
			"rules": []any{rule([]any{"PATCH"}, []any{}, []any{"v1"}, []any{"configmaps"}, "Everywhere")}},
		map[string]any{"name": "short.com", "admissionReviewVersions": []any{"v1"}, "clientConfig": map[string]any{}},
		map[string]any{"name": "Not_A.Name.com", "sideEffects": "None", "admissionReviewVersions": []any{"v1", "v1"},
			"clientConfig": map[string]any{"url": "https://user@h/p#frag", "caBundle": caBundle}, "matchPolicy": "Sometimes",
			"rules": []any{rule([]any{}, []any{""}, []any{}, []any{}, "")}},
	})
	invalid("invalid-service", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", []any{
		map[string]any{"name": "svc.example.com", "sideEffects": "NoneOnDryRun", "admissionReviewVersions": []any{"v1beta1"},
			"clientConfig": map[string]any{"service": map[string]any{"port": 0, "path": "/a//b"}}},
		map[string]any{"name": "svc2.example.com", "sideEffects": "None", "admissionReviewVersions": []any{"v1"},
			"clientConfig": map[string]any{"service": map[string]any{"name": "s", "namespace": "n", "path": "no-slash"},
				"url": "https://h/p"}},
	})
	invalid("invalid-mutating", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", []any{
		map[string]any{"name": "m.example.com", "sideEffects": "None", "reinvocationPolicy": "Sometimes",
			"clientConfig": map[string]any{"service": map[string]any{"name": "s", "namespace": "n"}}},
	})
	r := s.callCT("change-configuration", "PATCH", configs+"mutatingwebhookconfigurations/wh-"+s.run+"-mutate", ctJSONPatch,
		[]any{map[string]any{"op": "replace", "path": "/webhooks/0/timeoutSeconds", "value": 5}})
	s.res.Steps[len(s.res.Steps)-1].Body = stable(r.body)

	// writes through /scale are seen as the Scale (its status is the deployment
	// controller's, moving: left out, as the object's is)
	scaleRules := map[string]any{"rules": []any{map[string]any{"apiGroups": []any{"apps"}, "apiVersions": []any{"v1"},
		"operations": []any{"UPDATE"}, "resources": []any{"deployments/scale"}}}}
	register("MutatingWebhookConfiguration", "mutatingwebhookconfigurations", "wh-"+s.run+"-scale-even", []any{
		hook("even.example.com", hooks.base+"/scale-even", writes, scaleRules),
	})
	register("ValidatingWebhookConfiguration", "validatingwebhookconfigurations", "wh-"+s.run+"-scale-cap", []any{
		hook("cap.example.com", hooks.base+"/scale-cap", writes, scaleRules),
	})
	deploys := "/apis/apps/v1/namespaces/" + s.ns + "/deployments"
	labels := map[string]any{"app": "web"}
	s.setup("POST", deploys, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"replicas": 2, "selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}}})
	deadline = time.Now().Add(15 * time.Second)
	for {
		r, err := s.t.doAs(s.ctx, "PATCH", deploys+"/web/scale?dryRun=All", ctMerge, "", map[string]any{"spec": map[string]any{"replicas": 3}})
		if err == nil && field(r.body, "spec", "replicas") == float64(4) {
			break
		}
		if time.Now().After(deadline) {
			s.fail("the scale webhooks were not called within 15s: %v", r)
		}
		time.Sleep(200 * time.Millisecond)
	}
	hooks.take()
	specOf := func(v any) any {
		if v == nil {
			return nil
		}
		return map[string]any{"apiVersion": field(v, "apiVersion"), "kind": field(v, "kind"),
			"name": field(v, "metadata", "name"), "spec": field(v, "spec")}
	}
	scaled := func(r *response) {
		reviews := []any{}
		for _, rv := range hooks.take() {
			reviews = append(reviews, map[string]any{
				"path": field(rv, "path"), "kind": field(rv, "kind"), "resource": field(rv, "resource"),
				"subResource": field(rv, "subResource"), "requestKind": field(rv, "requestKind"),
				"operation": field(rv, "operation"), "name": field(rv, "name"), "options": field(rv, "options"),
				"object": specOf(field(rv, "object")), "oldObject": specOf(field(rv, "oldObject")),
			})
		}
		s.fact("reviews", toGeneric(reviews))
		last := s.res.Steps[len(s.res.Steps)-1]
		if r.status < 300 {
			last.Body = toGeneric(specOf(r.body))
		}
	}
	scaled(s.callCT("scale-mutated", "PATCH", deploys+"/web/scale", ctMerge, map[string]any{"spec": map[string]any{"replicas": 3}}))
	scaled(s.call("scale-denied", "PUT", deploys+"/web/scale", map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
		"metadata": map[string]any{"name": "web", "namespace": s.ns}, "spec": map[string]any{"replicas": 7}}))
	s.callReduced("scale-after", "GET", deploys+"/web", func(r *response) any {
		return map[string]any{"replicas": field(r.body, "spec", "replicas")}
	})
}

// merge returns a with b's keys added.
func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
