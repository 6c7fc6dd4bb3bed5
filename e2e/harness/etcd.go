package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/apiserver/pkg/storage/etcd3"
)

// freePort asks the kernel for a free loopback port. The port is released
// before use, so another process could take it first; on loopback in a test
// harness that window is acceptable.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startEtcd starts a single-member embedded etcd on loopback, data in dir.
func startEtcd(dir string) (*embed.Etcd, string, error) {
	clientPort, err := freePort()
	if err != nil {
		return nil, "", err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, "", err
	}
	cURL, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", clientPort))
	pURL, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", peerPort))

	cfg := embed.NewConfig()
	cfg.Name = "kinformer-e2e"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{*cURL}
	cfg.AdvertiseClientUrls = []url.URL{*cURL}
	cfg.ListenPeerUrls = []url.URL{*pURL}
	cfg.AdvertisePeerUrls = []url.URL{*pURL}
	cfg.InitialCluster = fmt.Sprintf("%s=%s", cfg.Name, pURL.String())
	cfg.LogLevel = "error"
	// A throwaway test store: durability buys nothing, fsync costs seconds.
	cfg.UnsafeNoFsync = true
	// No automatic compaction: compaction happens only when a test asks.
	cfg.AutoCompactionRetention = "0"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, "", fmt.Errorf("embedded etcd not ready after 60s")
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("embedded etcd failed: %w", err)
	}
	return e, cURL.String(), nil
}

// compactResult is what the compact endpoint reports.
type compactResult struct {
	// Revision is the etcd revision everything before which is now compacted
	// (the store's current revision when the request arrived).
	Revision int64 `json:"revision"`
}

// compactNow compacts etcd at its current revision through the same protocol
// kube-apiserver's own compactor uses (a compare-and-swap on the
// "compact_rev_key" key, then Compact). Using that protocol, rather than a bare
// Compact call, means the apiserver's compaction watcher learns the new
// compacted revision (within about a second) just as it would in a real
// cluster, and its watch cache drops list snapshots older than it (polled
// every 15s).
func compactNow(ctx context.Context, cli *clientv3.Client) (compactResult, error) {
	for attempt := 0; attempt < 5; attempt++ {
		resp, err := cli.Get(ctx, "compact_rev_key")
		if err != nil {
			return compactResult{}, err
		}
		var version int64
		if len(resp.Kvs) > 0 {
			version = resp.Kvs[0].Version
		}
		rev := resp.Header.Revision
		_, _, compacted, err := etcd3.Compact(ctx, cli, version, rev)
		if err != nil {
			return compactResult{}, err
		}
		if compacted == rev {
			return compactResult{Revision: rev}, nil
		}
		// Lost the compare-and-swap (someone else compacted in between): retry
		// with the key's new version.
	}
	return compactResult{}, fmt.Errorf("could not win the compaction compare-and-swap after 5 attempts")
}
