package main

import "fmt"

// scCRDRulesLibraries registers a CRD whose rules use Kubernetes' IP and CIDR libraries
// (isIP, ip, family, isLoopback, ip.isCanonical, isCIDR, cidr, containsIP, masked,
// prefixLength, ==), its lists library (sum, max, min, isSorted, indexOf), regex find and
// findAll, duration() and a string of the duration format, then writes (dryRun=All) objects
// that pass and break each: unmasked and too-large pools, loopback, IPv6, malformed and
// non-canonical addresses, IPv4-mapped IPv6, unsorted and empty lists, strings that are no
// duration.
func scCRDRulesLibraries(s *sc) {
	group := "kl-" + s.run + ".example.com"
	rule := func(r, m string) any { return map[string]any{"rule": r, "message": m} }
	rules := []any{
		rule("!has(self.pool) || isCIDR(self.pool)", "pool must be a CIDR"),
		rule("!has(self.pool) || !has(self.gateway) || cidr(self.pool).containsIP(self.gateway)", "gateway outside pool"),
		rule("!has(self.gateway) || (isIP(self.gateway) && ip(self.gateway).family() == 4 && !ip(self.gateway).isLoopback())", "gateway must be a non-loopback IPv4"),
		rule("!has(self.gateway) || !isIP(self.gateway) || ip.isCanonical(self.gateway)", "gateway must be canonical"),
		rule("!has(self.pool) || !isCIDR(self.pool) || cidr(self.pool) == cidr(self.pool).masked()", "pool must be masked"),
		rule("!has(self.pool) || !isCIDR(self.pool) || cidr(self.pool).prefixLength() >= 8", "pool too large"),
		rule("!has(self.weights) || self.weights.size() == 0 || self.weights.sum() == 100", "weights must sum to 100"),
		rule("!has(self.weights) || self.weights.size() == 0 || self.weights.max() <= 80", "no weight above 80"),
		rule("!has(self.weights) || self.weights.isSorted()", "weights sorted"),
		rule("!has(self.names) || self.names.indexOf('default') <= 0", "default first if present"),
		rule("!has(self.names) || self.names.size() == 0 || self.names.min() != ''", "no empty name"),
		rule("!has(self.image) || self.image.find('[0-9]+$') != ''", "image needs a numeric tag"),
		rule("!has(self.image) || self.image.findAll('[a-z]+').size() <= 4", "image has too many words"),
		rule("!has(self.period) || self.period >= duration('1s')", "period at least 1s"),
		rule("!has(self.timeout) || duration(self.timeout) < duration('1h')", "timeout under an hour"),
	}
	str := func(n int) any { return map[string]any{"type": "string", "maxLength": n} }
	crd := specCRD(group, "nets", "net", "Net", map[string]any{
		"type": "object", "x-kubernetes-validations": rules,
		"properties": map[string]any{
			"pool": str(64), "gateway": str(64), "image": str(64), "timeout": str(16),
			"period":  map[string]any{"type": "string", "format": "duration", "maxLength": 16},
			"weights": map[string]any{"type": "array", "maxItems": 10, "items": map[string]any{"type": "integer", "maximum": 1000}},
			"names":   map[string]any{"type": "array", "maxItems": 10, "items": str(20)},
		}})
	base := s.registerCRD(group, "nets", crd)
	for i, spec := range []map[string]any{
		{"pool": "10.0.0.0/8", "gateway": "10.1.2.3", "weights": []any{20, 80}, "names": []any{"default", "b"}, "image": "app-12", "period": "2s", "timeout": "30m"},
		{"pool": "10.0.0.1/8"}, {"pool": "10.0.0.0/4"}, {"pool": "nope"}, {"pool": "10.0.0.0/8", "gateway": "11.0.0.1"},
		{"gateway": "127.0.0.1"}, {"gateway": "::1"}, {"gateway": "1.2.3"}, {"gateway": "2001:DB8::1"},
		{"weights": []any{50, 40}}, {"weights": []any{10, 90}}, {"weights": []any{60, 40}}, {"weights": []any{}},
		{"names": []any{"a", "default"}}, {"names": []any{"", "a"}}, {"names": []any{}},
		{"image": "app"}, {"image": "a-b-c-d-e-1"}, {"period": "500ms"}, {"period": "1.5m"},
		{"timeout": "2h"}, {"timeout": "bogus"},
		{"pool": "fd00::/8", "gateway": "fd00::1"}, {"pool": "::ffff:1.2.3.0/120"},
	} {
		body := map[string]any{"apiVersion": group + "/v1", "kind": "Net",
			"metadata": map[string]any{"name": fmt.Sprintf("n%d", i)}, "spec": spec}
		s.call(fmt.Sprintf("net-%d", i), "POST", base+"?dryRun=All", body)
	}
}
