package main

import (
	"fmt"
	"math/rand"
	"strings"
)

// scCRDRulesGenerated writes CRDs (dryRun=All: nothing stored) each carrying one
// x-kubernetes-validations rule drawn from a grammar over a spec with a field of each kind CEL
// sees (integers, numbers, bounded and unbounded strings, an enum, booleans, int-or-string, a
// duration, a date-time, bounded and unbounded lists and maps, an object, a map list): well
// and badly typed comparisons, arithmetic, string functions, comprehensions, presence tests,
// null, typos in field names, undeclared names, messageExpressions. The generator's seed is
// fixed, so every run writes the same rules; what is compared is whether each CRD is accepted
// and, when it is not, kube-apiserver's whole answer (paths, words, cost factors, cel-go's
// caret display). Rules no ported case happened to try.
func scCRDRulesGenerated(s *sc) {
	const count = 120
	group := "kc-" + s.run + ".example.com"
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All"
	str := func(extra ...any) map[string]any {
		m := map[string]any{"type": "string"}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	props := map[string]any{
		"i":   map[string]any{"type": "integer"},
		"d":   map[string]any{"type": "number"},
		"s":   str("maxLength", 20),
		"su":  str(),
		"e":   str("enum", []any{"a", "bb"}),
		"b":   map[string]any{"type": "boolean"},
		"ios": map[string]any{"x-kubernetes-int-or-string": true},
		"dur": str("format", "duration"),
		"dt":  str("format", "date-time"),
		"l":   map[string]any{"type": "array", "maxItems": 8, "items": str("maxLength", 10)},
		"lu":  map[string]any{"type": "array", "items": str()},
		"li":  map[string]any{"type": "array", "maxItems": 5, "items": map[string]any{"type": "integer"}},
		"m":   map[string]any{"type": "object", "maxProperties": 5, "additionalProperties": str("maxLength", 10)},
		"mu":  map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "integer"}},
		"o": map[string]any{"type": "object", "required": []any{"x"}, "properties": map[string]any{
			"x": map[string]any{"type": "integer"}, "y": str("maxLength", 5)}},
		"lo": map[string]any{"type": "array", "maxItems": 4, "x-kubernetes-list-type": "map",
			"x-kubernetes-list-map-keys": []any{"n"}, "items": map[string]any{"type": "object", "required": []any{"n"},
				"properties": map[string]any{"n": str("maxLength", 8), "v": map[string]any{"type": "integer"}}}},
	}
	g := &ruleGen{r: rand.New(rand.NewSource(20261127))}
	for n := 0; n < count; n++ {
		rule := map[string]any{"rule": g.boolean(3)}
		if g.r.Intn(6) == 0 {
			rule["messageExpression"] = g.message()
		}
		plural := fmt.Sprintf("gens%d", n)
		crd := specCRD(group, plural, fmt.Sprintf("gen%d", n), fmt.Sprintf("Gen%d", n), map[string]any{
			"type": "object", "properties": props, "x-kubernetes-validations": []any{rule}})
		r, err := s.t.do(s.ctx, "POST", crds, crd)
		if err != nil {
			s.fail("generated rule %d: %v", n, err)
		}
		var body any = map[string]any{"rule": rule["rule"], "accepted": true}
		if r.status != 201 {
			body = r.body
		}
		s.recordAs(fmt.Sprintf("rule-%03d", n), "POST "+crds, r, body)
	}
}

// ruleGen draws CEL rules over scCRDRulesGenerated's spec.
type ruleGen struct{ r *rand.Rand }

func (g *ruleGen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }

// boolean draws an expression meant to be a bool (sometimes, on purpose, not well typed).
func (g *ruleGen) boolean(depth int) string {
	if depth <= 0 {
		return g.pick("self.b", "has(self.s)", "self.i > 0", "self.s == 'a'", "true")
	}
	d := depth - 1
	switch g.r.Intn(22) {
	case 0, 1:
		return g.number(d) + " " + g.pick("==", "!=", "<", "<=", ">", ">=") + " " + g.number(d)
	case 2, 3:
		return g.str(d) + " " + g.pick("==", "!=", "<") + " " + g.str(d)
	case 4:
		return g.str(d) + "." + g.pick("startsWith", "endsWith", "contains") + "(" + g.str(d) + ")"
	case 5:
		return g.str(d) + ".matches('" + g.pick("^[a-z]+$", "a", "^[0-9]{1,3}$") + "')"
	case 6:
		return "has(self." + g.pick("i", "s", "o", "m", "o.x", "o.y", "lo") + ")"
	case 7:
		return "!(" + g.boolean(d) + ")"
	case 8, 9:
		return g.boolean(d) + " " + g.pick("&&", "||") + " " + g.boolean(d)
	case 10:
		list := g.pick("l", "lu", "li")
		elem := map[string]string{"l": "x.size() < 5", "lu": "x.startsWith('a')", "li": "x > 1"}[list]
		return "self." + list + "." + g.pick("all", "exists", "exists_one") + "(x, " + elem + ")"
	case 11:
		return "self." + g.pick("m", "mu") + ".all(k, " + g.pick("k.size() < 3", "k != 'x'", "k.matches('^a')") + ")"
	case 12:
		return g.pick("'a' in self.l", "'k' in self.m", "1 in self.li", "self.s in self.l", "self.i in self.li")
	case 13:
		return "size(self." + g.pick("s", "su", "l", "lu", "m", "i") + ") " + g.pick("<", "==") + " " + g.pick("3", "'a'")
	case 14:
		return "(" + g.boolean(d) + " ? " + g.boolean(d) + " : " + g.boolean(d) + ")"
	case 15:
		// a field compared with a literal of any type
		return "self." + g.pick("i", "d", "s", "e", "b", "ios", "dur", "dt", "l", "m") + " == " + g.literal()
	case 16:
		// a typo, an undeclared name, null
		return g.pick("self.ii > 0", "has(self.nope)", "selff.i > 0", "x > 1", "self.o.z == 1",
			"self.s != null", "self.o != null", "self.l != null", "self.ios != null")
	case 17:
		return g.pick("self.lo.all(e, e.n.size() > 0)", "self.lo.exists(e, has(e.v) && e.v > 1)",
			"self.lo.map(e, e.n).size() < 3", "self.lo.filter(e, e.v > 0).size() <= 1")
	case 18:
		return g.pick("self.dur < duration('1h')", "self.dt < timestamp('2030-01-01T00:00:00Z')",
			"self.dur > self.dur", "self.dt == self.dt")
	case 19:
		return g.pick("self.lu.all(x, self.lu.exists(y, x == y))", "self.l.all(x, self.l.exists_one(y, x == y))",
			"self.su.contains(self.su)", "self.lu.all(x, x.matches('^[a-z]+$'))", "self.mu.all(k, self.mu[k] > 0)")
	case 20:
		return g.number(d) + " " + g.pick("+", "-", "*", "/", "%") + " " + g.number(d) + " " + g.pick(">", "==") + " " + g.number(d)
	default:
		return g.str(d) + " + " + g.str(d) + " == " + g.str(d)
	}
}

func (g *ruleGen) number(depth int) string {
	if depth <= 0 || g.r.Intn(2) == 0 {
		return g.pick("self.i", "self.d", "1", "2.5", "0u", "self.o.x", "self.li[0]", "self.mu['a']", "self.ios")
	}
	d := depth - 1
	switch g.r.Intn(4) {
	case 0:
		return g.str(d) + ".size()"
	case 1:
		return "self." + g.pick("l", "lu", "li", "m") + ".size()"
	case 2:
		return g.pick("int", "double") + "(" + g.pick("self.i", "self.d", "self.s") + ")"
	default:
		return g.number(d) + " " + g.pick("+", "-", "*") + " " + g.number(d)
	}
}

func (g *ruleGen) str(depth int) string {
	if depth <= 0 || g.r.Intn(2) == 0 {
		return g.pick("self.s", "self.su", "self.e", "'a'", "'xyz'", "self.o.y", "self.l[0]", "self.m['k']")
	}
	d := depth - 1
	switch g.r.Intn(4) {
	case 0:
		return g.str(d) + "." + g.pick("lowerAscii", "upperAscii", "trim") + "()"
	case 1:
		return g.str(d) + " + " + g.str(d)
	case 2:
		return "string(" + g.pick("self.i", "self.d", "self.b") + ")"
	default:
		return g.str(d) + ".substring(" + g.pick("0", "1") + ")"
	}
}

func (g *ruleGen) literal() string {
	return g.pick("1", "1.5", "'a'", "true", "null", "[1]", "['a']", "{'k': 'v'}", "2u", "b'a'", "duration('1s')")
}

func (g *ruleGen) message() string {
	parts := []string{"'bad: '", g.pick("self.s", "self.e", "string(self.i)", "self.su", "self.i", "self.l.join(',')")}
	if g.r.Intn(2) == 0 {
		return strings.Join(parts, " + ")
	}
	return parts[0]
}
