package main

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Normalization turns what naturally differs between two servers (or two
// runs against one) into stable tokens, keeping what clients may rely on:
//
//   - resourceVersions: every object resourceVersion a scenario sees (objects
//     returned by writes, including unrecorded setup writes, and by gets, list
//     items, watch event objects other than bookmarks) is replaced by its rank among them: r1 < r2 < ... Equal
//     numbers get equal ranks, so order and equality survive, magnitudes do
//     not. A collection resourceVersion (a list's metadata, a bookmark) is
//     replaced by "rK+": at least rK and below rK+1, where rK is the greatest
//     object resourceVersion not above it ("r0+" if below all). Whether a
//     list's resourceVersion equals the last write or lies past it depends on
//     unrelated writes elsewhere (leases), so only that interval is kept;
//     scenarios record exact equalities they care about as facts.
//     resourceVersion=N in request lines is rewritten the same way ("0" stays).
//   - uids: "uid1", "uid2", ... in order of first appearance: metadata.uid,
//     Status details.uid and every other "uid" key (ownerReferences[].uid, a
//     token's kubernetes.io claim), so a reference keeps naming its owner;
//     also a UUID inside a string or an object key (managedFields'
//     k:{"uid":"…"} keys of ownerReferences, messages).
//   - creationTimestamp, deletionTimestamp, managedFields[].time: "<time>";
//     so is every string that is an RFC 3339 time (conditions'
//     lastTransitionTime, a TokenRequest's expirationTimestamp).
//   - tokens: a TokenRequest's status.token is recorded as its shape (header
//     alg, claim names, aud, sub, exp - iat; see jwtShape in
//     scenarios_writes.go), never its bytes; OpenAPI documents are reduced
//     by their scenario (hashes dropped).
//   - the run id (part of every namespace name): "<run>".
//   - server-generated names (generateName + 5 characters): prefix + "<gen>",
//     wherever the name appears.
//   - names a scenario picked at run time (sc.alias: namespaces chosen for
//     where their name's hash falls): the stable alias the scenario gave,
//     wherever the name appears.
//   - continue tokens: "<continue>" (opaque; only presence is compared).
//   - discovery's storageVersionHash: "<hash>" (it hashes the group, which carries the run id).
//   - numbers quoted as resourceVersions or revisions in Status messages
//     ("version: 12", "(12)", "current: 12", "revision 12"): "N", e.g.
//     "too old resource version: N (N)". Other digits (RFC 1123, regexes
//     quoted in validation messages) stay.
//
// Everything else is compared verbatim, including message texts, field order
// independence aside (JSON objects compare as maps).

var rvInMessage = regexp.MustCompile(`(\(|[Vv]ersion:? |current:? |revision:? )[0-9]+`)

func messageNumbers(s string) string { return rvInMessage.ReplaceAllString(s, "${1}N") }

// rfc3339 matches a whole string that is an RFC 3339 time as the API writes
// them (seconds, optional fraction, Z or an offset).
var rfc3339 = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`)

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

var rvParam = regexp.MustCompile(`resourceVersion=([0-9]+)`)
var continueParam = regexp.MustCompile(`continue=[^&]*`)

type normalizer struct {
	run       string
	objRVs    []int64
	uids      map[string]string
	generated map[string]string // generated name -> prefix<gen>
	// aliases: names chosen at run time -> their stable stand-ins (sc.alias),
	// longest first so that no alias replaces part of a longer one.
	aliases [][2]string
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// collect walks v and gathers object resourceVersions and generated names.
func (n *normalizer) collect(v any, seen map[int64]bool) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			n.collect(e, seen)
		}
	case map[string]any:
		if typ, ok := x["type"].(string); ok {
			if obj, ok := x["object"].(map[string]any); ok {
				// A watch event.
				if typ != "BOOKMARK" && typ != "ERROR" {
					n.collectObject(obj, seen)
				}
				return
			}
		}
		if _, ok := x["metadata"].(map[string]any); ok {
			if list, ok := x["items"].([]any); ok {
				for _, it := range list {
					if m, ok := it.(map[string]any); ok {
						n.collectObject(m, seen)
					}
				}
				return
			}
			if x["kind"] != "Status" {
				n.collectObject(x, seen)
			}
			return
		}
		for _, k := range sortedKeys(x) {
			n.collect(x[k], seen)
		}
	}
}

func (n *normalizer) collectObject(obj map[string]any, seen map[int64]bool) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return
	}
	if rv, ok := md["resourceVersion"].(string); ok {
		if num, err := strconv.ParseInt(rv, 10, 64); err == nil && !seen[num] {
			seen[num] = true
			n.objRVs = append(n.objRVs, num)
		}
	}
	gen, _ := md["generateName"].(string)
	name, _ := md["name"].(string)
	if gen != "" && strings.HasPrefix(name, gen) && len(name) > len(gen) {
		n.generated[name] = gen + "<gen>"
	}
}

func (n *normalizer) objLabel(rv string) string {
	num, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return rv
	}
	i := sort.Search(len(n.objRVs), func(i int) bool { return n.objRVs[i] >= num })
	if i < len(n.objRVs) && n.objRVs[i] == num {
		return fmt.Sprintf("r%d", i+1)
	}
	return n.collLabel(rv)
}

func (n *normalizer) collLabel(rv string) string {
	num, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return rv
	}
	// Number of object RVs <= num.
	k := sort.Search(len(n.objRVs), func(i int) bool { return n.objRVs[i] > num })
	return fmt.Sprintf("r%d+", k)
}

func (n *normalizer) uid(u string) string {
	if l, ok := n.uids[u]; ok {
		return l
	}
	l := fmt.Sprintf("uid%d", len(n.uids)+1)
	n.uids[u] = l
	return l
}

func (n *normalizer) str(s string) string {
	s = uuidRE.ReplaceAllStringFunc(s, n.uid)
	for _, a := range n.aliases {
		s = strings.ReplaceAll(s, a[0], a[1])
	}
	if n.run != "" {
		s = strings.ReplaceAll(s, n.run, "<run>")
	}
	for name, repl := range n.generated {
		s = strings.ReplaceAll(s, name, repl)
	}
	return s
}

func (n *normalizer) request(s string) string {
	s = n.str(s)
	s = continueParam.ReplaceAllString(s, "continue=<continue>")
	return rvParam.ReplaceAllStringFunc(s, func(m string) string {
		rv := m[len("resourceVersion="):]
		if rv == "0" {
			return m
		}
		return "resourceVersion=" + n.objLabel(rv)
	})
}

// value rewrites v. kind tells how a metadata.resourceVersion found directly
// in v is to be read: "object", "collection" or "" (decide from shape).
func (n *normalizer) value(v any, kind string) any {
	switch x := v.(type) {
	case string:
		if rfc3339.MatchString(x) {
			return "<time>"
		}
		if strings.HasPrefix(x, "-----BEGIN CERTIFICATE-----") {
			// each server's own CA (kube-root-ca.crt's ca.crt)
			return "<certificate>"
		}
		return n.str(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = n.value(e, "")
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		if typ, ok := x["type"].(string); ok {
			if obj, ok := x["object"].(map[string]any); ok {
				k := "object"
				if typ == "BOOKMARK" {
					k = "collection"
				}
				for _, key := range sortedKeys(x) {
					if key == "object" {
						out[key] = n.value(obj, k)
					} else {
						out[key] = n.value(x[key], "")
					}
				}
				return out
			}
		}
		isStatus := x["kind"] == "Status"
		_, isList := x["items"].([]any)
		for _, rawKey := range sortedKeys(x) {
			val := x[rawKey]
			key := rawKey
			if uuidRE.MatchString(key) {
				// managedFields: f:ownerReferences's k:{"uid":"…"} keys.
				key = n.str(key)
			}
			switch {
			case key == "metadata":
				mk := kind
				if mk == "" {
					mk = "object"
					if isList || isStatus {
						mk = "collection"
					}
				}
				out[key] = n.metadata(val, mk)
			case key == "items" && isList:
				l := val.([]any)
				o := make([]any, len(l))
				for i, it := range l {
					o[i] = n.value(it, "object")
				}
				out[key] = o
			case isStatus && key == "message":
				s, _ := val.(string)
				out[key] = messageNumbers(n.str(s))
			case isStatus && key == "details":
				out[key] = n.statusDetails(val)
			case key == "storageVersionHash":
				// a hash of the group (which carries the run id), version and kind
				out[key] = "<hash>"
			case key == "uid":
				if s, ok := val.(string); ok && s != "" {
					out[key] = n.uid(s)
				} else {
					out[key] = n.value(val, "")
				}
			default:
				out[key] = n.value(val, "")
			}
		}
		return out
	default:
		return v
	}
}

func (n *normalizer) statusDetails(v any) any {
	d, ok := v.(map[string]any)
	if !ok {
		return n.value(v, "")
	}
	out := make(map[string]any, len(d))
	for _, k := range sortedKeys(d) {
		switch k {
		case "uid":
			s, _ := d[k].(string)
			out[k] = n.uid(s)
		case "causes":
			causes, _ := d[k].([]any)
			o := make([]any, len(causes))
			for i, c := range causes {
				cm, ok := c.(map[string]any)
				if !ok {
					o[i] = n.value(c, "")
					continue
				}
				cc := make(map[string]any, len(cm))
				for _, ck := range sortedKeys(cm) {
					if s, ok := cm[ck].(string); ok && ck == "message" {
						cc[ck] = messageNumbers(n.str(s))
					} else {
						cc[ck] = n.value(cm[ck], "")
					}
				}
				o[i] = cc
			}
			out[k] = o
		default:
			out[k] = n.value(d[k], "")
		}
	}
	return out
}

func (n *normalizer) metadata(v any, kind string) any {
	md, ok := v.(map[string]any)
	if !ok {
		return n.value(v, "")
	}
	out := make(map[string]any, len(md))
	for _, k := range sortedKeys(md) {
		val := md[k]
		switch k {
		case "resourceVersion":
			s, _ := val.(string)
			if kind == "collection" {
				out[k] = n.collLabel(s)
			} else {
				out[k] = n.objLabel(s)
			}
		case "uid":
			s, _ := val.(string)
			out[k] = n.uid(s)
		case "creationTimestamp", "deletionTimestamp":
			if val != nil {
				out[k] = "<time>"
			} else {
				out[k] = nil
			}
		case "continue":
			if s, _ := val.(string); s != "" {
				out[k] = "<continue>"
			} else {
				out[k] = s
			}
		case "managedFields":
			mfs, _ := val.([]any)
			o := make([]any, len(mfs))
			for i, mf := range mfs {
				m, ok := mf.(map[string]any)
				if !ok {
					o[i] = n.value(mf, "")
					continue
				}
				c := make(map[string]any, len(m))
				for _, mk := range sortedKeys(m) {
					if mk == "time" {
						c[mk] = "<time>"
					} else {
						c[mk] = n.value(m[mk], "")
					}
				}
				o[i] = c
			}
			out[k] = o
		default:
			out[k] = n.value(val, "")
		}
	}
	return out
}

// normalizeScenario rewrites one scenario's steps in place.
func normalizeScenario(res *scenarioResult, run string) {
	n := &normalizer{run: run, uids: map[string]string{}, generated: map[string]string{}}
	for name, alias := range res.aliases {
		n.aliases = append(n.aliases, [2]string{name, alias})
	}
	sort.Slice(n.aliases, func(i, j int) bool {
		if len(n.aliases[i][0]) != len(n.aliases[j][0]) {
			return len(n.aliases[i][0]) > len(n.aliases[j][0])
		}
		return n.aliases[i][0] < n.aliases[j][0]
	})
	seen := map[int64]bool{}
	for _, rv := range res.setupRVs {
		n.collectObject(map[string]any{"metadata": map[string]any{"resourceVersion": rv}}, seen)
	}
	for _, st := range res.Steps {
		n.collect(st.Body, seen)
		for _, e := range st.Events {
			n.collect(e, seen)
		}
		for _, k := range sortedKeys(st.Facts) {
			n.collect(st.Facts[k], seen)
		}
	}
	sort.Slice(n.objRVs, func(i, j int) bool { return n.objRVs[i] < n.objRVs[j] })
	for _, st := range res.Steps {
		st.Request = n.request(st.Request)
		st.Body = n.value(st.Body, "")
		for i, e := range st.Events {
			st.Events[i] = n.value(e, "")
		}
		for k, v := range st.Facts {
			st.Facts[k] = n.value(v, "")
		}
	}
	res.Error = n.str(res.Error)
}
