package main

import "fmt"

// scCRDRulesQuantity registers a CRD whose rules use Kubernetes' quantity library
// (quantity(), isQuantity(), isLessThan, compareTo, ==, isInteger, asInteger, add, sub), then
// writes (dryRun=All) objects whose quantity is each of a list of values: binary and decimal
// suffixes, exponents, fractions, signs, values too large for an int64, and a string that is no
// quantity. kube-apiserver keeps some integral values in a form asInteger() refuses (2000m, 2Ei),
// and gives a function's own words when it fails.
func scCRDRulesQuantity(s *sc) {
	group := "kc-" + s.run + ".example.com"
	rules := []any{
		map[string]any{"rule": "!has(self.memory) || quantity(self.memory).isLessThan(quantity('1Gi'))", "message": "below 1Gi"},
		map[string]any{"rule": "!has(self.memory) || quantity(self.memory).compareTo(quantity('1024Mi')) <= 0", "message": "at most 1Gi"},
		map[string]any{"rule": "!has(self.memory) || !(quantity(self.memory) == quantity('1024Mi'))", "message": "not 1024Mi"},
		map[string]any{"rule": "!has(self.memory) || !quantity(self.memory).isInteger() || quantity(self.memory).add(1).sub(quantity('1')).asInteger() % 2 == 0", "message": "even"},
		map[string]any{"rule": "!has(self.memory) || !isQuantity(self.memory) || quantity(self.memory).asInteger() >= 0", "messageExpression": "'not an integer: ' + self.memory"},
	}
	crd := specCRD(group, "amounts", "amount", "Amount", map[string]any{
		"type": "object", "x-kubernetes-validations": rules,
		"properties": map[string]any{"memory": map[string]any{"type": "string", "maxLength": 20}}})
	base := s.registerCRD(group, "amounts", crd)
	for i, v := range []string{"512Mi", "100m", "1Gi", "1024Mi", "3", "-1", "1.5", "2000m", "2Ei", "1e40",
		"12345678901234567890", "1e-3", "+2k", ".5", "1.", "lots"} {
		body := map[string]any{"apiVersion": group + "/v1", "kind": "Amount",
			"metadata": map[string]any{"name": fmt.Sprintf("a%d", i)}, "spec": map[string]any{"memory": v}}
		s.call("quantity-"+v, "POST", base+"?dryRun=All", body)
	}
}
