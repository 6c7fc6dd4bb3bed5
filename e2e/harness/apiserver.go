package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"time"
)

// apiserverArgs is the kube-apiserver command line the harness runs.
//
// Choices worth knowing:
//   - --etcd-compaction-interval=0: the apiserver never compacts on its own;
//     only the harness's compact endpoint does, so a test decides when
//     resourceVersions expire.
//   - --watch-cache: on by default like any real cluster. With it on, a watch
//     from a compacted resourceVersion is still served from the cache's
//     event window (no 410) and an Exact list may be served from a cache
//     snapshot for up to ~15s after a compaction. Tests that must force a 410
//     deterministically run a harness with -watch-cache=false: lists, watches
//     and continue tokens then go to etcd, which answers 410 at once.
//   - --endpoint-reconciler-type=none: no periodic writes to the "kubernetes"
//     Endpoints, fewer resourceVersion bumps unrelated to a test.
//   - WatchList is beta and on by default in 1.35; it is set explicitly so a
//     version change cannot silently turn streaming lists off.
func apiserverArgs(p *pki, etcdURL string, port int, certDir string, watchCache bool) []string {
	return []string{
		"--etcd-servers=" + etcdURL,
		"--etcd-compaction-interval=0",
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + certDir,
		"--tls-cert-file=" + p.servingCert,
		"--tls-private-key-file=" + p.servingKey,
		"--token-auth-file=" + p.tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.saPublicKey,
		"--service-account-signing-key-file=" + p.saPrivateKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--watch-cache=%t", watchCache),
		"--feature-gates=WatchList=true",
		"--profiling=false",
		"--v=0",
	}
}

// adminClient is an HTTPS client that trusts the harness CA and sends the
// admin token.
type adminClient struct {
	base  string
	token string
	http  *http.Client
}

func newAdminClient(p *pki, base string) (*adminClient, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.caPEM) {
		return nil, fmt.Errorf("cannot parse the harness CA")
	}
	return &adminClient{
		base:  base,
		token: p.adminToken,
		http: &http.Client{
			Timeout:   5 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		},
	}, nil
}

// waitReady polls /readyz until it answers 200 "ok", the context ends, or
// failed (the apiserver goroutine's exit) fires.
func (c *adminClient) waitReady(ctx context.Context, failed <-chan error) error {
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := c.http.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("apiserver not ready: %s", last)
		case err := <-failed:
			return fmt.Errorf("apiserver exited before ready: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
