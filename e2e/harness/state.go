package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// state is the JSON file the harness writes once the apiserver is ready.
// Tests and scripts read it to find the server; its presence means "ready".
type state struct {
	Kubeconfig   string `json:"kubeconfig"`
	Server       string `json:"server"`
	Pid          int    `json:"pid"`
	EtcdEndpoint string `json:"etcdEndpoint"`
	// AdminURL is the harness's own loopback HTTP endpoint (not the apiserver).
	AdminURL string `json:"adminURL"`
	// CompactURL: POST compacts etcd at its current revision.
	CompactURL string `json:"compactURL"`
	WatchCache bool   `json:"watchCache"`
	WatchList  bool   `json:"watchList"`
	// KCM: kube-controller-manager runs next to the apiserver (garbage
	// collector, namespace, serviceaccount, serviceaccount-token controllers).
	KCM     bool   `json:"kcm"`
	DataDir string `json:"dataDir"`
	Token   string `json:"token"`
	CAFile  string `json:"caFile"`
}

func writeKubeconfig(path, server string, p *pki) error {
	// The CA is embedded so the file is self-contained (kubectl and kube-rs
	// both read certificate-authority-data).
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kinformer-e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: kinformer-e2e
  context:
    cluster: kinformer-e2e
    user: admin
    namespace: default
current-context: kinformer-e2e
`, server, base64.StdEncoding.EncodeToString(p.caPEM), p.adminToken)
	return os.WriteFile(path, []byte(cfg), 0o600)
}

// writeState writes the state file atomically (temp file + rename), so a
// reader never sees half of it.
func writeState(path string, s state) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), ".state.tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readState(path string) (state, error) {
	var s state
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}
