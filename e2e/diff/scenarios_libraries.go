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

// scCRDRulesURLSemver registers a CRD whose rules use Kubernetes' URL library (isURL, url,
// getScheme, getHost, getHostname, getPort, getEscapedPath, getQuery) and semver library
// (isSemver, semver, with and without normalizing, major, minor, patch, compareTo,
// isGreaterThan, isLessThan), then writes (dryRun=All) objects that pass and break each:
// hosts, ports, paths, queries, relative and malformed URLs, prereleases, short and
// zero-padded versions, and a rule that calls url() and semver() on what is neither (the
// evaluation error).
func scCRDRulesURLSemver(s *sc) {
	group := "ku-" + s.run + ".example.com"
	rule := func(r, m string) any { return map[string]any{"rule": r, "message": m} }
	u := "url(self.endpoint)"
	valid := "!has(self.endpoint) || !isURL(self.endpoint) || "
	rules := []any{
		rule("!has(self.endpoint) || isURL(self.endpoint)", "endpoint must be a URL"),
		rule(valid+u+".getScheme() in ['https', '']", "https only"),
		rule(valid+u+".getHostname() != 'localhost'", "not localhost"),
		rule(valid+u+".getPort() == '' || int("+u+".getPort()) < 10000", "port under 10000"),
		rule(valid+"!"+u+".getEscapedPath().startsWith('/admin')", "no admin paths"),
		rule(valid+"!('debug' in "+u+".getQuery())", "no debug"),
		rule(valid+"!('v' in "+u+".getQuery()) || "+u+".getQuery()['v'].size() == 1", "one v"),
		rule(valid+u+".getHost().size() < 30", "host too long"),
		rule("!has(self.raw) || url(self.raw).getScheme() != 'ftp'", "no ftp"),
		rule("!has(self.version) || isSemver(self.version)", "version must be semver"),
		rule("!has(self.version) || !isSemver(self.version) || semver(self.version).major() >= 1", "version 1 or later"),
		rule("!has(self.version) || !isSemver(self.version) || semver(self.version).isLessThan(semver('3.0.0'))", "version before 3"),
		rule("!has(self.version) || !isSemver(self.version) || semver(self.version).isGreaterThan(semver('1.0.0-alpha'))", "after 1.0.0-alpha"),
		rule("!has(self.loose) || isSemver(self.loose, true)", "loose must be semver"),
		rule("!has(self.loose) || !isSemver(self.loose, true) || semver(self.loose, true).compareTo(semver('1.2.0')) >= 0", "loose at least 1.2"),
		rule("!has(self.strict) || semver(self.strict).minor() >= 0", "strict"),
	}
	str := func(n int) any { return map[string]any{"type": "string", "maxLength": n} }
	crd := specCRD(group, "links", "link", "Link", map[string]any{
		"type": "object", "x-kubernetes-validations": rules,
		"properties": map[string]any{
			"endpoint": str(128), "raw": str(64), "version": str(32), "loose": str(32), "strict": str(32),
		}})
	base := s.registerCRD(group, "links", crd)
	for i, spec := range []map[string]any{
		{"endpoint": "https://example.com:8443/api/v1?x=1&x=2#top", "version": "1.2.3", "loose": "v1.2", "strict": "2.0.0", "raw": "https://a"},
		{"endpoint": "/relative/path"}, {"endpoint": "example.com"}, {"endpoint": "http://example.com"},
		{"endpoint": "https://localhost/"}, {"endpoint": "https://[::1]:443/"}, {"endpoint": "https://h:99999/"},
		{"endpoint": "https://h/admin/x"}, {"endpoint": "https://h/%61dmin"}, {"endpoint": "https://h/?debug"},
		{"endpoint": "https://h/?v=1&v=2"}, {"endpoint": "https://a-very-long-host-name.example.com/"},
		{"endpoint": "https://a b/"}, {"endpoint": "https://h:x/"}, {"endpoint": "https://h/%zz"}, {"endpoint": "mailto:a@b"},
		{"raw": "ftp://files"}, {"raw": "not a url"}, {"raw": ""},
		{"version": "0.9.0"}, {"version": "3.0.0"}, {"version": "3.0.0-rc.1"}, {"version": "1.0.0-alpha"}, {"version": "1.0.0-beta"},
		{"version": "1.2"}, {"version": "v1.2.3"}, {"version": "01.2.3"}, {"version": "1.2.3+build.1"},
		{"loose": "v1"}, {"loose": "1.02.003"}, {"loose": "v1-rc"}, {"loose": "1.1.9"},
		{"strict": "1.x.0"}, {"strict": "1..0"}, {"strict": "1.0.0-"}, {"strict": "1.0.0-01"},
	} {
		body := map[string]any{"apiVersion": group + "/v1", "kind": "Link",
			"metadata": map[string]any{"name": fmt.Sprintf("l%d", i)}, "spec": spec}
		s.call(fmt.Sprintf("link-%d", i), "POST", base+"?dryRun=All", body)
	}
}
