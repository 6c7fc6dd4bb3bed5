package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/pflag"
	kcm "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
)

// kcmControllers are the kube-controller-manager controllers the harness
// runs: what a controller author's tests meet around their objects.
//   - garbage-collector-controller: ownerReferences cascades (background,
//     foreground, orphan);
//   - namespace-controller: a deleted namespace's contents are deleted and the
//     namespace goes (the Terminating phase, its conditions);
//   - serviceaccount-controller: every namespace gets its "default"
//     ServiceAccount, as in any real cluster (`kubectl create token default`
//     works in a fresh namespace);
//   - serviceaccount-token-controller: fills legacy token Secrets of type
//     kubernetes.io/service-account-token (cheap: it only needs the signing
//     key the apiserver already has);
//   - clusterrole-aggregation-controller: the bootstrap admin, edit and view
//     ClusterRoles get the rules of the roles labelled to aggregate into them,
//     as on every real cluster (kube-apiserver stores them without rules);
//   - root-ca-certificate-publisher-controller: every namespace gets the
//     kube-root-ca.crt ConfigMap with the cluster's CA (--root-ca-file), as on
//     every real cluster (pods mount it through their kube-api-access volume).
//
// Left out on purpose: everything driving workloads (no nodes, no kubelet).
var kcmControllers = []string{
	names.GarbageCollectorController,
	names.NamespaceController,
	names.ServiceAccountController,
	names.ServiceAccountTokenController,
	names.ClusterRoleAggregationController,
	names.RootCACertificatePublisherController,
}

// kcmArgs is the kube-controller-manager command line: loopback only, no
// leader election (a single instance), the admin kubeconfig for everything
// (no per-controller service-account credentials), the listed controllers.
func kcmArgs(p *pki, kubeconfig string, port int, certDir string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(kcmControllers, ","),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + certDir,
		"--service-account-private-key-file=" + p.saPrivateKey,
		"--root-ca-file=" + p.caFile,
		"--profiling=false",
	}
}

// startKCM runs kube-controller-manager in process (the same code
// NewControllerManagerCommand runs, minus the cobra wrapper, whose context
// cannot be cancelled: the harness must stop it before the apiserver). It
// returns once the options are parsed and the controllers started in the
// background; done receives Run's result.
func startKCM(ctx context.Context, args []string) (<-chan error, error) {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, err
	}
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	named := s.Flags(kcm.KnownControllers(), kcm.ControllersDisabledByDefault(), kcm.ControllerAliases())
	s.ParsedFlags = &named
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	// The feature gates and component versions are the ones the apiserver
	// already set (one process, one registry); the logging configuration too.
	c, err := s.Config(ctx, kcm.KnownControllers(), kcm.ControllersDisabledByDefault(), kcm.ControllerAliases())
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- kcm.Run(ctx, c.Complete()) }()
	return done, nil
}

// waitKCMHealthy polls kube-controller-manager's /healthz (anonymous access is
// allowed for it) on its secure port until it answers 200 "ok".
func waitKCMHealthy(ctx context.Context, port int, failed <-chan error) error {
	cl := &http.Client{
		Timeout: 2 * time.Second,
		// Its serving certificate is self-signed (--cert-dir); loopback only.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := cl.Do(req)
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
			return fmt.Errorf("kube-controller-manager not healthy: %s", last)
		case err := <-failed:
			return fmt.Errorf("kube-controller-manager exited before healthy: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitDefaultServiceAccount waits until the serviceaccount controller has
// created "default" in the "default" namespace: the controllers run, their
// informers have synced.
func (c *adminClient) waitDefaultServiceAccount(ctx context.Context) error {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/v1/namespaces/default/serviceaccounts/default", nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := c.http.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no default ServiceAccount in namespace default: the serviceaccount controller did not run")
		case <-time.After(200 * time.Millisecond):
		}
	}
}
