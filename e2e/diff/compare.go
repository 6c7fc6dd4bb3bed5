package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// allowEntry documents one intentional difference. scenario and step are
// globs ("*" matches anything); path is a glob over the difference's JSON
// path (e.g. "body.metadata.managedFields", "events[*].object.kind"),
// matching that path or anything beneath it.
type allowEntry struct {
	Scenario string `json:"scenario"`
	Step     string `json:"step"`
	Path     string `json:"path"`
	Reason   string `json:"reason"`
}

type allowList struct {
	Comment string       `json:"comment,omitempty"`
	Entries []allowEntry `json:"entries"`
}

func loadAllow(path string) (*allowList, error) {
	if path == "" {
		return &allowList{}, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var a allowList
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, e := range a.Entries {
		if strings.TrimSpace(e.Reason) == "" {
			return nil, fmt.Errorf("%s: entry %s/%s/%s has no reason", path, e.Scenario, e.Step, e.Path)
		}
	}
	return &a, nil
}

func globRE(g string, prefix bool) *regexp.Regexp {
	if g == "" {
		g = "*"
	}
	parts := strings.Split(g, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	re := "^" + strings.Join(parts, ".*")
	if prefix {
		re += `($|[.\[])`
	} else {
		re += "$"
	}
	return regexp.MustCompile(re)
}

func (a *allowList) reason(scenario, step, path string) string {
	for _, e := range a.Entries {
		if globRE(e.Scenario, false).MatchString(scenario) &&
			globRE(e.Step, false).MatchString(step) &&
			globRE(e.Path, true).MatchString(path) {
			return e.Reason
		}
	}
	return ""
}

// difference is one place where the two observation sets disagree.
type difference struct {
	Scenario string `json:"scenario"`
	Step     string `json:"step"`
	Path     string `json:"path"`
	A        any    `json:"a"`
	B        any    `json:"b"`
	Allowed  string `json:"allowed,omitempty"`
}

// absent marks a value one side does not have.
const absent = "<absent>"

func diffValues(path string, a, b any, out *[]difference) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			*out = append(*out, difference{Path: path, A: a, B: b})
			return
		}
		keys := map[string]bool{}
		for k := range av {
			keys[k] = true
		}
		for k := range bv {
			keys[k] = true
		}
		ks := make([]string, 0, len(keys))
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			p := k
			if path != "" {
				p = path + "." + k
			}
			x, inA := av[k]
			y, inB := bv[k]
			switch {
			case !inA:
				*out = append(*out, difference{Path: p, A: absent, B: y})
			case !inB:
				*out = append(*out, difference{Path: p, A: x, B: absent})
			default:
				diffValues(p, x, y, out)
			}
		}
	case []any:
		bv, ok := b.([]any)
		if !ok {
			*out = append(*out, difference{Path: path, A: a, B: b})
			return
		}
		if len(av) != len(bv) {
			*out = append(*out, difference{Path: path + ".length", A: len(av), B: len(bv)})
		}
		for i := 0; i < len(av) && i < len(bv); i++ {
			diffValues(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i], out)
		}
	default:
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			*out = append(*out, difference{Path: path, A: a, B: b})
		}
	}
}

// toGeneric round-trips through JSON so both sides compare as plain values.
func toGeneric(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// compareObservations lists every difference between a and b, scenario by
// scenario and step by step, with allow-list reasons filled in.
func compareObservations(a, b *observations, allow *allowList) []difference {
	var diffs []difference
	bByName := map[string]*scenarioResult{}
	for _, s := range b.Scenarios {
		bByName[s.Name] = s
	}
	aNames := map[string]bool{}
	for _, sa := range a.Scenarios {
		aNames[sa.Name] = true
		sb, ok := bByName[sa.Name]
		if !ok {
			diffs = append(diffs, difference{Scenario: sa.Name, Path: "scenario", A: "present", B: absent})
			continue
		}
		if sa.Error != sb.Error {
			diffs = append(diffs, difference{Scenario: sa.Name, Path: "error", A: sa.Error, B: sb.Error})
		}
		for i := 0; i < len(sa.Steps) || i < len(sb.Steps); i++ {
			var stA, stB *step
			if i < len(sa.Steps) {
				stA = sa.Steps[i]
			}
			if i < len(sb.Steps) {
				stB = sb.Steps[i]
			}
			switch {
			case stB == nil:
				diffs = append(diffs, difference{Scenario: sa.Name, Step: stA.Step, Path: "step", A: "present", B: absent})
				continue
			case stA == nil:
				diffs = append(diffs, difference{Scenario: sa.Name, Step: stB.Step, Path: "step", A: absent, B: "present"})
				continue
			case stA.Step != stB.Step:
				diffs = append(diffs, difference{Scenario: sa.Name, Step: stA.Step, Path: "step", A: stA.Step, B: stB.Step})
				continue
			}
			var local []difference
			diffValues("", toGeneric(stA), toGeneric(stB), &local)
			for _, d := range local {
				if d.Path == "step" {
					continue
				}
				d.Scenario, d.Step = sa.Name, stA.Step
				diffs = append(diffs, d)
			}
		}
	}
	for _, sb := range b.Scenarios {
		if !aNames[sb.Name] {
			diffs = append(diffs, difference{Scenario: sb.Name, Path: "scenario", A: absent, B: "present"})
		}
	}
	for i := range diffs {
		diffs[i].Allowed = allow.reason(diffs[i].Scenario, diffs[i].Step, diffs[i].Path)
	}
	return diffs
}

func short(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// printReport writes a human-readable report and returns the number of
// unexplained differences.
func printReport(w *os.File, a, b *observations, diffs []difference) int {
	unexplained := 0
	fmt.Fprintf(w, "A: %s (%s)\nB: %s (%s)\n\n", a.Label, a.ServerVersion, b.Label, b.ServerVersion)
	for _, d := range diffs {
		tag := "DIFF"
		if d.Allowed != "" {
			tag = "allowed"
		} else {
			unexplained++
		}
		fmt.Fprintf(w, "%-7s %s / %s / %s\n        A: %s\n        B: %s\n", tag, d.Scenario, d.Step, d.Path, short(d.A), short(d.B))
		if d.Allowed != "" {
			fmt.Fprintf(w, "        why: %s\n", d.Allowed)
		}
	}
	fmt.Fprintf(w, "\n%d differences, %d allowed, %d unexplained\n", len(diffs), len(diffs)-unexplained, unexplained)
	return unexplained
}
