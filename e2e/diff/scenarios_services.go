package main

import (
	"fmt"
	"net"
	"strings"
)

// allocatedShape replaces what a server allocates (cluster IPs, node ports) in a Service
// with stand-ins: two servers allocate from their own ranges at random, so only the shape
// compares. ip and port name the values the caller wants reported as such.
func allocatedShape(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			switch {
			case k == "clusterIP" || k == "clusterIPs":
				out[k] = allocatedShape(ipShape(e))
			case k == "nodePort":
				if n, ok := e.(float64); ok && n >= 30000 && n <= 32767 {
					out[k] = "<node port>"
				} else {
					out[k] = e
				}
			default:
				out[k] = allocatedShape(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = allocatedShape(e)
		}
		return out
	}
	return v
}

func ipShape(v any) any {
	switch x := v.(type) {
	case string:
		if net.ParseIP(x) != nil {
			return "<ip>"
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ipShape(e)
		}
		return out
	}
	return v
}

// scServices creates Services of each type and records them as stored, what was allocated
// shown by its shape: defaults (type, session affinity and its ClientIP timeout, protocols,
// target ports, traffic policies), a cluster IP and its family, node ports for NodePort and
// LoadBalancer, headless and ExternalName services, the status; then a PUT without the
// allocated values (kept), a server-side apply creating one and applying it again (no
// change), and a cluster IP and a node port already in use (422).
func scServices(s *sc) {
	base := "/api/v1/namespaces/" + s.ns + "/services"
	svc := func(name string, spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": name}, "spec": spec}
	}
	shaped := func(r *response) {
		s.res.Steps[len(s.res.Steps)-1].Body = toGeneric(map[string]any{
			"spec": allocatedShape(field(r.body, "spec")), "status": field(r.body, "status")})
	}
	port := func(p int) []any { return []any{map[string]any{"port": p}} }
	a := s.call("create-clusterip", "POST", base, svc("a", map[string]any{"selector": map[string]any{"app": "a"}, "ports": port(80)}))
	shaped(a)
	b := s.call("create-nodeport", "POST", base, svc("b", map[string]any{"type": "NodePort", "ports": []any{
		map[string]any{"name": "http", "port": 80, "targetPort": "web"},
		map[string]any{"name": "dns", "port": 53, "protocol": "UDP"}}}))
	shaped(b)
	shaped(s.call("create-headless", "POST", base, svc("c", map[string]any{"clusterIP": "None", "ports": port(80)})))
	shaped(s.call("create-externalname", "POST", base, svc("d", map[string]any{"type": "ExternalName", "externalName": "example.com"})))
	shaped(s.call("create-loadbalancer", "POST", base, svc("e", map[string]any{"type": "LoadBalancer", "ports": port(443)})))
	shaped(s.call("create-client-ip-affinity", "POST", base, svc("f", map[string]any{"ports": port(80), "sessionAffinity": "ClientIP"})))

	// a replace that leaves the allocated values out keeps them
	put := svc("b", map[string]any{"type": "NodePort", "ports": []any{
		map[string]any{"name": "dns", "port": 53, "protocol": "UDP"},
		map[string]any{"name": "http", "port": 80, "targetPort": "web"}}})
	put["metadata"].(map[string]any)["resourceVersion"] = rvOf(b)
	r := s.call("replace-without-allocated", "PUT", base+"/b", put)
	shaped(r)
	same := str(r.body, "spec", "clusterIP") == str(b.body, "spec", "clusterIP")
	ports := func(x *response) string {
		var out []string
		ps, _ := field(x.body, "spec", "ports").([]any)
		for _, p := range ps {
			out = append(out, fmt.Sprintf("%v/%v", field(p, "port"), field(p, "nodePort")))
		}
		return strings.Join(out, ",")
	}
	s.fact("clusterIPKept", same)
	s.fact("nodePortsKept", strings.Contains(ports(r), strings.Split(ports(b), ",")[0]) && strings.Contains(ports(r), strings.Split(ports(b), ",")[1]))

	// server-side apply creates one (allocated as a create), and the same apply again is no change
	applied := svc("g", map[string]any{"type": "NodePort", "ports": port(8080)})
	g := s.callCT("apply-create", "PATCH", base+"/g?fieldManager=diff", ctApply, applied)
	shaped(g)
	g2 := s.callCT("apply-again", "PATCH", base+"/g?fieldManager=diff", ctApply, applied)
	shaped(g2)
	s.fact("unchanged", rvOf(g2) == rvOf(g))

	// what is in use is refused (the values in the messages shown by their shape)
	ip := str(a.body, "spec", "clusterIP")
	dup := s.call("cluster-ip-in-use", "POST", base, svc("h", map[string]any{"clusterIP": ip, "ports": port(80)}))
	s.res.Steps[len(s.res.Steps)-1].Body = toGeneric(map[string]any{"code": field(dup.body, "code"), "reason": field(dup.body, "reason"),
		"message": strings.ReplaceAll(str(dup.body, "message"), ip, "<ip>")})
	np := fmt.Sprint(field(b.body, "spec", "ports").([]any)[0].(map[string]any)["nodePort"])
	dupPort := s.call("node-port-in-use", "POST", base, svc("i", map[string]any{"type": "NodePort",
		"ports": []any{map[string]any{"port": 80, "nodePort": field(b.body, "spec", "ports").([]any)[0].(map[string]any)["nodePort"]}}}))
	s.res.Steps[len(s.res.Steps)-1].Body = toGeneric(map[string]any{"code": field(dupPort.body, "code"), "reason": field(dupPort.body, "reason"),
		"message": strings.ReplaceAll(str(dupPort.body, "message"), np, "<node port>")})

	// a dry run allocates nothing: kube-apiserver answers the range's own address (its network
	// address, shown as such) and node ports from 32769 up; an address in use is not checked,
	// a node port in use is
	dry := s.call("dry-run-nodeport", "POST", base+"?dryRun=All", svc("j", map[string]any{"type": "NodePort", "ports": []any{
		map[string]any{"name": "a", "port": 80}, map[string]any{"name": "b", "port": 81, "nodePort": 31000},
		map[string]any{"name": "c", "port": 82}}}))
	dryIP := str(dry.body, "spec", "clusterIP")
	dryIPs, _ := field(dry.body, "spec", "clusterIPs").([]any)
	s.res.Steps[len(s.res.Steps)-1].Body = toGeneric(map[string]any{"ports": field(dry.body, "spec", "ports"),
		"clusterIPIsTheNetworkAddress": strings.HasSuffix(dryIP, ".0"), "clusterIPs": len(dryIPs)})
	dryDup := s.call("dry-run-cluster-ip-in-use", "POST", base+"?dryRun=All", svc("k", map[string]any{"clusterIP": ip, "ports": port(80)}))
	s.res.Steps[len(s.res.Steps)-1].Body = toGeneric(map[string]any{"code": field(dryDup.body, "code"),
		"sameIP": str(dryDup.body, "spec", "clusterIP") == ip})
	dryPort := s.call("dry-run-node-port-in-use", "POST", base+"?dryRun=All", svc("l", map[string]any{"type": "NodePort",
		"ports": []any{map[string]any{"port": 80, "nodePort": field(b.body, "spec", "ports").([]any)[0].(map[string]any)["nodePort"]}}}))
	s.res.Steps[len(s.res.Steps)-1].Body = toGeneric(map[string]any{"code": field(dryPort.body, "code"), "reason": field(dryPort.body, "reason"),
		"message": strings.ReplaceAll(str(dryPort.body, "message"), np, "<node port>")})
}
