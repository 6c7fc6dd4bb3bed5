package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/server/flagz"
	"k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	apioptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// startAPIServer runs kube-apiserver in process: what its cobra command
// (app.NewAPIServerCommand) runs, but with the harness's context instead of
// the signal handler the command installs, so the harness decides the order
// of shutdown (kube-controller-manager first, then the apiserver). done
// receives app.Run's result once the apiserver has shut down.
func startAPIServer(ctx context.Context, args []string) (<-chan error, error) {
	s := apioptions.NewServerRunOptions()
	featureGate := s.GenericServerRunOptions.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	named := s.Flags()
	s.Flagz = flagz.NamedFlagSetsReader{FlagSets: named}
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, err
	}
	// Loopback clients should not log self-issued warnings (as the command does).
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	if err := logsapi.ValidateAndApply(s.Logs, featureGate); err != nil {
		return nil, err
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		return nil, err
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return nil, utilerrors.NewAggregate(errs)
	}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, completed) }()
	return done, nil
}

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
//     version change cannot silently turn streaming lists off. -watch-list=false
//     turns it off: the server then refuses sendInitialEvents with 422 Invalid,
//     as servers before 1.27 (and ones that disable it) do.
func apiserverArgs(p *pki, etcdURL string, port int, certDir string, watchCache, watchList bool) []string {
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
		fmt.Sprintf("--feature-gates=WatchList=%t,ShardedListAndWatch=true", watchList),
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
