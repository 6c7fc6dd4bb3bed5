package main

import "testing"

func obs(steps ...*step) *observations {
	return &observations{Scenarios: []*scenarioResult{{Name: "s", Steps: steps}}}
}

func TestCompareFindsValueAndShapeDifferences(t *testing.T) {
	a := obs(&step{Step: "get", Status: 404, Body: map[string]any{"reason": "NotFound", "code": 404.0}})
	b := obs(&step{Step: "get", Status: 404, Body: map[string]any{"reason": "Gone"}})
	diffs := compareObservations(a, b, &allowList{})
	paths := map[string]bool{}
	for _, d := range diffs {
		paths[d.Path] = true
	}
	if len(diffs) != 2 || !paths["body.reason"] || !paths["body.code"] {
		t.Fatalf("got %+v, want body.reason and body.code", diffs)
	}
}

func TestCompareIdenticalIsEmpty(t *testing.T) {
	a := obs(&step{Step: "get", Status: 200, Events: []any{map[string]any{"type": "ADDED"}}})
	b := obs(&step{Step: "get", Status: 200, Events: []any{map[string]any{"type": "ADDED"}}})
	if diffs := compareObservations(a, b, &allowList{}); len(diffs) != 0 {
		t.Fatalf("got %+v, want none", diffs)
	}
}

func TestCompareReportsMissingStepsAndEvents(t *testing.T) {
	a := obs(&step{Step: "w", Events: []any{"x", "y"}}, &step{Step: "extra"})
	b := obs(&step{Step: "w", Events: []any{"x"}})
	diffs := compareObservations(a, b, &allowList{})
	if len(diffs) != 2 || diffs[0].Path != "events.length" || diffs[1].Path != "step" {
		t.Fatalf("got %+v", diffs)
	}
}

func TestAllowListMatchesPathAndBelowOnly(t *testing.T) {
	allow := &allowList{Entries: []allowEntry{{Scenario: "s", Step: "*", Path: "body.metadata.managedFields", Reason: "not served"}}}
	if r := allow.reason("s", "get", "body.metadata.managedFields[0].time"); r != "not served" {
		t.Errorf("below the path: got %q", r)
	}
	if r := allow.reason("s", "get", "body.metadata.managedFieldsX"); r != "" {
		t.Errorf("a sibling with the same prefix must not match: got %q", r)
	}
	if r := allow.reason("other", "get", "body.metadata.managedFields"); r != "" {
		t.Errorf("another scenario must not match: got %q", r)
	}
}
