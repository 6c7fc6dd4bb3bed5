package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func normalized(t *testing.T, run string, setup []string, steps ...*step) *scenarioResult {
	t.Helper()
	res := &scenarioResult{Name: "t", Steps: steps, setupRVs: setup}
	normalizeScenario(res, run)
	return res
}

// Object resourceVersions become ranks; a list's becomes "rK+" (at least rK).
func TestResourceVersionsBecomeRanksAndIntervals(t *testing.T) {
	res := normalized(t, "xrun", nil,
		&step{Step: "create", Body: decode(t, `{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"1040"}}`)},
		&step{Step: "update", Body: decode(t, `{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"1007"}}`)},
		&step{Step: "list", Request: "GET /x?resourceVersion=1040&resourceVersionMatch=Exact",
			Body: decode(t, `{"kind":"ConfigMapList","metadata":{"resourceVersion":"1041"},"items":[{"metadata":{"name":"a","resourceVersion":"1040"}}]}`)},
	)
	if got := str(res.Steps[0].Body, "metadata", "resourceVersion"); got != "r2" {
		t.Errorf("larger object RV: got %q, want r2", got)
	}
	if got := str(res.Steps[1].Body, "metadata", "resourceVersion"); got != "r1" {
		t.Errorf("smaller object RV: got %q, want r1", got)
	}
	if got := str(res.Steps[2].Body, "metadata", "resourceVersion"); got != "r2+" {
		t.Errorf("list RV: got %q, want r2+", got)
	}
	if got := str(items(res.Steps[2].Body)[0], "metadata", "resourceVersion"); got != "r2" {
		t.Errorf("item RV: got %q, want r2", got)
	}
	if want := "GET /x?resourceVersion=r2&resourceVersionMatch=Exact"; res.Steps[2].Request != want {
		t.Errorf("request: got %q, want %q", res.Steps[2].Request, want)
	}
}

// Setup writes are ranked too, so a later object's rank does not depend on
// whether an earlier write was recorded.
func TestSetupWritesAreRanked(t *testing.T) {
	res := normalized(t, "xrun", []string{"5"},
		&step{Step: "create", Body: decode(t, `{"kind":"ConfigMap","metadata":{"name":"b","resourceVersion":"9"}}`)},
	)
	if got := str(res.Steps[0].Body, "metadata", "resourceVersion"); got != "r2" {
		t.Errorf("got %q, want r2", got)
	}
}

// Bookmark objects carry a collection resourceVersion.
func TestBookmarkRVIsAnInterval(t *testing.T) {
	res := normalized(t, "", nil, &step{Step: "watch", Events: []any{
		decode(t, `{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"20"}}}`),
		decode(t, `{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"25"}}}`),
	}})
	if got := str(res.Steps[0].Events[1], "object", "metadata", "resourceVersion"); got != "r1+" {
		t.Errorf("got %q, want r1+", got)
	}
	if got := str(res.Steps[0].Events[0], "object", "metadata", "resourceVersion"); got != "r1" {
		t.Errorf("got %q, want r1", got)
	}
}

// uids keep equality, timestamps vanish, the run id and generated names
// become tokens everywhere, continue tokens keep only their presence.
func TestVolatileFieldsBecomeTokens(t *testing.T) {
	res := normalized(t, "xab12", nil,
		&step{Step: "create", Body: decode(t, `{"kind":"ConfigMap","metadata":{"name":"gen-k2x9z","generateName":"gen-","namespace":"kd-xab12-s","uid":"u-1","creationTimestamp":"2026-01-01T00:00:00Z","managedFields":[{"manager":"m","time":"2026-01-01T00:00:00Z"}],"resourceVersion":"3"}}`)},
		&step{Step: "get", Request: "GET /api/v1/namespaces/kd-xab12-s/configmaps/gen-k2x9z?limit=1&continue=abc%3D",
			Body: decode(t, `{"kind":"ConfigMapList","metadata":{"continue":"eyJ2"},"items":[{"metadata":{"uid":"u-1","resourceVersion":"3"}},{"metadata":{"uid":"u-2","resourceVersion":"3"}}]}`)},
	)
	want := decode(t, `{"kind":"ConfigMap","metadata":{"name":"gen-<gen>","generateName":"gen-","namespace":"kd-<run>-s","uid":"uid1","creationTimestamp":"<time>","managedFields":[{"manager":"m","time":"<time>"}],"resourceVersion":"r1"}}`)
	if !reflect.DeepEqual(res.Steps[0].Body, want) {
		t.Errorf("object: got %v, want %v", res.Steps[0].Body, want)
	}
	if wantReq := "GET /api/v1/namespaces/kd-<run>-s/configmaps/gen-<gen>?limit=1&continue=<continue>"; res.Steps[1].Request != wantReq {
		t.Errorf("request: got %q, want %q", res.Steps[1].Request, wantReq)
	}
	its := items(res.Steps[1].Body)
	if str(its[0], "metadata", "uid") != "uid1" || str(its[1], "metadata", "uid") != "uid2" {
		t.Errorf("uids: got %v", its)
	}
	if got := str(res.Steps[1].Body, "metadata", "continue"); got != "<continue>" {
		t.Errorf("continue: got %q", got)
	}
}

// Status messages lose quoted revisions but keep other digits.
func TestStatusMessageNumbers(t *testing.T) {
	res := normalized(t, "", nil, &step{Step: "s", Body: decode(t,
		`{"kind":"Status","message":"too old resource version: 120 (130); RFC 1123","details":{"causes":[{"message":"precondition (7) vs record (9)"}]}}`)})
	if got := str(res.Steps[0].Body, "message"); got != "too old resource version: N (N); RFC 1123" {
		t.Errorf("message: got %q", got)
	}
	causes := field(res.Steps[0].Body, "details", "causes").([]any)
	if got := str(causes[0], "message"); got != "precondition (N) vs record (N)" {
		t.Errorf("cause: got %q", got)
	}
}

// A uid keeps naming the same object wherever it appears: metadata.uid, an
// ownerReference, a managedFields key, a message; RFC 3339 times anywhere
// become <time>.
func TestUIDsEverywhereAndTimes(t *testing.T) {
	owner := "0c08239b-3e43-4bb6-8208-64d1f67e6182"
	res := normalized(t, "xrun", nil,
		&step{Step: "owner", Body: decode(t, `{"kind":"ConfigMap","metadata":{"name":"o","uid":"`+owner+`","resourceVersion":"5"}}`)},
		&step{Step: "dependent", Body: decode(t, `{"kind":"ConfigMap","metadata":{"name":"d","uid":"7d1e1c38-0000-4000-8000-000000000001","resourceVersion":"6",
			"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"`+owner+`"}],
			"managedFields":[{"manager":"m","time":"2026-11-26T00:00:00Z","fieldsV1":{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"`+owner+`\"}":{}}}}}]},
			"status":{"conditions":[{"lastTransitionTime":"2026-11-26T00:00:01Z","message":"owner `+owner+` gone"}]}}`)},
	)
	d := res.Steps[1].Body
	if got := str(field(d, "metadata", "ownerReferences").([]any)[0], "uid"); got != "uid1" {
		t.Errorf("ownerReference uid: got %q, want uid1 (the owner's)", got)
	}
	if got := str(d, "metadata", "uid"); got != "uid2" {
		t.Errorf("dependent uid: got %q, want uid2", got)
	}
	mf := field(d, "metadata", "managedFields").([]any)[0]
	if _, ok := field(mf, "fieldsV1", "f:metadata", "f:ownerReferences").(map[string]any)[`k:{"uid":"uid1"}`]; !ok {
		t.Errorf("managedFields key not normalized: %v", field(mf, "fieldsV1"))
	}
	c := field(d, "status", "conditions").([]any)[0]
	if got := str(c, "lastTransitionTime"); got != "<time>" {
		t.Errorf("condition time: got %q", got)
	}
	if got := str(c, "message"); got != "owner uid1 gone" {
		t.Errorf("uid in a message: got %q", got)
	}
}

// Names picked at run time show as their alias everywhere, a longer name
// before a shorter one it starts with.
func TestAliasesReplaceNamesEverywhere(t *testing.T) {
	res := &scenarioResult{Name: "t", aliases: map[string]string{"kd-xrun-sns-001": "ns-in-1", "kd-xrun-sns-0011": "ns-in-2"},
		Steps: []*step{{Step: "list", Request: "GET /api/v1/namespaces/kd-xrun-sns-0011/configmaps",
			Body: decode(t, `{"kind":"ConfigMapList","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"cm","namespace":"kd-xrun-sns-001","resourceVersion":"4"}}]}`)}}}
	normalizeScenario(res, "xrun")
	if got := res.Steps[0].Request; got != "GET /api/v1/namespaces/ns-in-2/configmaps" {
		t.Errorf("request: got %q", got)
	}
	if got := str(items(res.Steps[0].Body)[0], "metadata", "namespace"); got != "ns-in-1" {
		t.Errorf("namespace: got %q", got)
	}
}

// The shard hash is kube-apiserver's: 64-bit FNV-1a (k8s.io/apimachinery/pkg/sharding.HashField).
func TestShardHashIsFNV1a64(t *testing.T) {
	for v, want := range map[string]uint64{"": 0xcbf29ce484222325, "a": 0xaf63dc4c8601ec8c} {
		if got := shardHash(v); got != want {
			t.Errorf("shardHash(%q) = %#x, want %#x", v, got, want)
		}
	}
	if !lowerHalf(1<<63-1) || lowerHalf(1<<63) || !upperHalf(1<<63) || !inQuarter(3)(1<<63|1<<62) || inQuarter(2)(1<<63|1<<62) {
		t.Error("range predicates")
	}
}
