// Command harness runs a real kube-apiserver (k8s.io/kubernetes, linked in)
// on top of an embedded etcd, both on loopback, for kinformer's end-to-end
// and differential tests. See ../README.md.
//
//	harness run     [-dir DIR] [-watch-cache=true|false] [-kcm=true|false]   (default subcommand)
//	harness compact [-state DIR/state.json]
//
// run prints nothing useful on stdout; once the apiserver answers /readyz and
// kube-controller-manager is healthy (its /healthz, and the "default"
// ServiceAccount exists) it writes DIR/kubeconfig and DIR/state.json and keeps
// running until SIGTERM or SIGINT, then stops kube-controller-manager, shuts
// the apiserver down gracefully, stops etcd, deletes its temporary data
// directory and the state file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func main() {
	args := os.Args[1:]
	sub := "run"
	if len(args) > 0 && (args[0] == "run" || args[0] == "compact") {
		sub, args = args[0], args[1:]
	}
	var err error
	switch sub {
	case "compact":
		err = compactCmd(args)
	default:
		err = runCmd(args)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(1)
	}
}

func compactCmd(args []string) error {
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	statePath := fs.String("state", "e2e/run/state.json", "state file written by `harness run`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := readState(*statePath)
	if err != nil {
		return err
	}
	resp, err := http.Post(s.CompactURL, "application/json", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("compact: %d %s", resp.StatusCode, body)
	}
	fmt.Print(string(body))
	return nil
}

func runCmd(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	dir := fs.String("dir", "e2e/run", "where kubeconfig, state.json go")
	watchCache := fs.Bool("watch-cache", true, "run kube-apiserver with its watch cache (see apiserverArgs)")
	watchList := fs.Bool("watch-list", true, "run kube-apiserver with the WatchList feature gate (streaming lists; see apiserverArgs)")
	withKCM := fs.Bool("kcm", true, "also run kube-controller-manager (garbage collector, namespace and service-account controllers; see kcmControllers)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	runDir, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}
	statePath := filepath.Join(runDir, "state.json")
	kubeconfigPath := filepath.Join(runDir, "kubeconfig")
	_ = os.Remove(statePath)

	dataDir, err := os.MkdirTemp("", "kinformer-e2e-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dataDir)
	for _, d := range []string{"pki", "etcd", "certs"} {
		if err := os.MkdirAll(filepath.Join(dataDir, d), 0o700); err != nil {
			return err
		}
	}

	// The harness owns the signals: on the first SIGTERM/SIGINT it stops
	// kube-controller-manager, then the apiserver (graceful), then etcd; a
	// second signal exits at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)

	p, err := newPKI(filepath.Join(dataDir, "pki"))
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	etcd, etcdURL, err := startEtcd(filepath.Join(dataDir, "etcd"))
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer etcd.Close()
	etcdCli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	defer etcdCli.Close()

	port, err := freePort()
	if err != nil {
		return err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	// Clients name themselves after the binary (rest.DefaultKubernetesUserAgent
	// reads os.Args[0]), and the apiserver records that name as the field
	// manager of what they write (the "default" namespace, a terminating
	// namespace's conditions). Named as the real binaries are, so recorded
	// managedFields read as on a real cluster: the apiserver's loopback
	// clients are made before it is ready, kube-controller-manager's after.
	os.Args[0] = "kube-apiserver"
	apiCtx, stopAPI := context.WithCancel(context.Background())
	defer stopAPI()
	apiDone, err := startAPIServer(apiCtx, apiserverArgs(p, etcdURL, port, filepath.Join(dataDir, "certs"), *watchCache, *watchList))
	if err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}

	admin, err := newAdminClient(p, server)
	if err != nil {
		return err
	}
	readyCtx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	err = admin.waitReady(readyCtx, apiDone)
	cancel()
	if err != nil {
		return err
	}
	t0 := time.Now()

	// kube-controller-manager, once the apiserver is ready (unless -kcm=false).
	var kcmDone <-chan error
	kcmCtx, stopKCM := context.WithCancel(context.Background())
	defer stopKCM()
	if *withKCM {
		kcmKubeconfig := filepath.Join(dataDir, "kcm.kubeconfig")
		if err := writeKubeconfig(kcmKubeconfig, server, p); err != nil {
			return err
		}
		kcmPort, err := freePort()
		if err != nil {
			return err
		}
		certDir := filepath.Join(dataDir, "kcm-certs")
		os.Args[0] = "kube-controller-manager"
		kcmDone, err = startKCM(kcmCtx, kcmArgs(p, kcmKubeconfig, kcmPort, certDir))
		if err != nil {
			return fmt.Errorf("kube-controller-manager: %w", err)
		}
		waitCtx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		err = waitKCMHealthy(waitCtx, kcmPort, kcmDone)
		if err == nil {
			err = admin.waitDefaultServiceAccount(waitCtx)
		}
		cancel()
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "harness: kube-controller-manager healthy in %.1fs (controllers %v)\n", time.Since(t0).Seconds(), kcmControllers)
	}

	// The admin endpoint: what a kube client cannot do.
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/compact", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		res, err := compactNow(r.Context(), etcdCli)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(res)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	adminSrv := &http.Server{Handler: mux}
	go adminSrv.Serve(ln)
	defer adminSrv.Close()
	adminURL := "http://" + ln.Addr().String()

	if err := writeKubeconfig(kubeconfigPath, server, p); err != nil {
		return err
	}
	caFile := filepath.Join(runDir, "ca.crt")
	if err := os.WriteFile(caFile, p.caPEM, 0o644); err != nil {
		return err
	}
	st := state{
		Kubeconfig:   kubeconfigPath,
		Server:       server,
		Pid:          os.Getpid(),
		EtcdEndpoint: etcdURL,
		AdminURL:     adminURL,
		CompactURL:   adminURL + "/compact",
		WatchCache:   *watchCache,
		WatchList:    *watchList,
		KCM:          *withKCM,
		DataDir:      dataDir,
		Token:        p.adminToken,
		CAFile:       caFile,
	}
	if err := writeState(statePath, st); err != nil {
		return err
	}
	defer os.Remove(statePath)
	fmt.Fprintf(os.Stderr, "harness: ready: %s (kubeconfig %s)\n", server, kubeconfigPath)

	select {
	case err := <-apiDone:
		return fmt.Errorf("apiserver exited: %v", err)
	case err := <-kcmDone:
		return fmt.Errorf("kube-controller-manager exited: %v", err)
	case <-sigs:
	}
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "harness: second signal, exiting at once")
		os.Exit(1)
	}()
	// kube-controller-manager first (its controllers' requests would only
	// fail against a stopping apiserver), bounded.
	if kcmDone != nil {
		stopKCM()
		select {
		case err := <-kcmDone:
			if err != nil && !errors.Is(err, context.Canceled) {
				fmt.Fprintln(os.Stderr, "harness: kube-controller-manager shutdown:", err)
			}
		case <-time.After(30 * time.Second):
			fmt.Fprintln(os.Stderr, "harness: kube-controller-manager did not stop within 30s; stopping the apiserver anyway")
		}
	}
	// Then the apiserver's graceful shutdown, bounded.
	stopAPI()
	select {
	case err := <-apiDone:
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "harness: apiserver shutdown:", err)
		}
	case <-time.After(60 * time.Second):
		fmt.Fprintln(os.Stderr, "harness: apiserver did not stop within 60s; stopping etcd anyway")
	}
	fmt.Fprintln(os.Stderr, "harness: stopped")
	return nil
}
