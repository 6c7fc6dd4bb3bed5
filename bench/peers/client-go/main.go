// Command client-go-peer is the client-go peer of kinformer-bench: a SharedIndexInformer for
// pods with two indexes and two handlers, running one workload (w1, w1t, w2, w3) against a
// server reached through a kubeconfig (or a plain URL) and printing one JSON report on stdout,
// with the same fields as the Rust peers (see crates/kinformer-bench/src/result.rs).
//
// -content-type protobuf (the default) is how client-go runs for built-in types in the field:
// requests in protobuf, Accept "protobuf, then JSON". -content-type json forces JSON both ways.
// The report's peer is "client-go" for protobuf and "client-go-json" for JSON.
//
// -metadata runs client-go's metadata-only informer instead
// (k8s.io/client-go/metadata/metadatainformer over metadata.NewForConfig, which asks for
// PartialObjectMetadata in protobuf, then JSON): peer "client-go-metadata", with the namespace
// index only (a PartialObjectMetadata has no spec.nodeName).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

const tsAnnotation = "kinformer.bench/ts"

type report struct {
	Peer             string   `json:"peer"`
	Workload         string   `json:"workload"`
	N                uint64   `json:"n"`
	Objects          uint64   `json:"objects"`
	BaselineRSSKiB   uint64   `json:"baseline_rss_kib"`
	SyncMs           *float64 `json:"sync_ms"`
	CPUMsAtSync      *float64 `json:"cpu_ms_at_sync,omitempty"`
	PeakRSSKiB       *uint64  `json:"peak_rss_kib"`
	SteadyRSSKiB     *uint64  `json:"steady_rss_kib"`
	BytesPerObject   *float64 `json:"bytes_per_object"`
	EventsPerSec     *float64 `json:"events_per_sec"`
	Events           *uint64  `json:"events"`
	LatencyP50Us     *float64 `json:"latency_p50_us"`
	LatencyP99Us     *float64 `json:"latency_p99_us"`
	RelistMs         *float64 `json:"relist_ms"`
	RelistPeakRSSKiB *uint64  `json:"relist_peak_rss_kib"`
}

func statusField(field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			f := strings.Fields(strings.TrimPrefix(l, field+":"))
			if len(f) > 0 {
				v, _ := strconv.ParseUint(f[0], 10, 64)
				return v
			}
		}
	}
	return 0
}

func rss() uint64  { return statusField("VmRSS") }
func peak() uint64 { return statusField("VmHWM") }
func resetPeak()   { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0o600) }

// steadyRSS collects garbage and returns memory to the OS first, so the figure is live data
// plus runtime overhead rather than uncollected garbage.
func steadyRSS() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	return rss()
}

// control sends one command to the control port and returns the reply after "ok" (empty
// for a bare "ok").
func control(addr, cmd string) (string, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "%s\n", cmd); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSpace(line)
	if line != "ok" && !strings.HasPrefix(line, "ok ") {
		return "", fmt.Errorf("control %q: %s", cmd, line)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "ok")), nil
}

// relistTarget parses "rv=N" from a relist reply: the resourceVersion a relist must reach.
func relistTarget(reply string) (uint64, bool) {
	v, ok := strings.CutPrefix(reply, "rv=")
	if !ok {
		return 0, false
	}
	rv, err := strconv.ParseUint(v, 10, 64)
	return rv, err == nil
}

// restConfig builds the client configuration from a kubeconfig and/or URL with client-side
// rate limiting off, and the peer's name for the content type.
func restConfig(url, kubeconfig, contentType string) (*rest.Config, string, error) {
	if url == "" && kubeconfig == "" {
		return nil, "", fmt.Errorf("need -kubeconfig or -url")
	}
	cfg, err := clientcmd.BuildConfigFromFlags(url, kubeconfig)
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %v", err)
	}
	cfg.QPS = -1
	cfg.Burst = 0
	switch contentType {
	case "protobuf":
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		return cfg, "client-go", nil
	case "json":
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
		return cfg, "client-go-json", nil
	default:
		return nil, "", fmt.Errorf("unknown -content-type %q (protobuf, json)", contentType)
	}
}

type counters struct {
	adds      atomic.Uint64
	updates   [2]atomic.Uint64
	recording atomic.Bool
	mu        sync.Mutex
	lat       []float64
	first     time.Time
	last      time.Time
}

func (c *counters) onUpdate(h int, obj interface{}) {
	c.updates[h].Add(1)
	if h != 0 || !c.recording.Load() {
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	ts, err := strconv.ParseInt(m.GetAnnotations()[tsAnnotation], 10, 64)
	if err != nil {
		return
	}
	now := time.Now()
	us := float64(now.UnixNano()-ts) / 1000.0
	c.mu.Lock()
	c.lat = append(c.lat, us)
	if c.first.IsZero() {
		c.first = now
	}
	c.last = now
	c.mu.Unlock()
}

func (c *counters) updatesMin() uint64 {
	a, b := c.updates[0].Load(), c.updates[1].Load()
	if a < b {
		return a
	}
	return b
}

func waitUntil(timeout time.Duration, what string, cond func() bool) {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "client-go-peer: timed out after %v waiting for %s\n", timeout, what)
			os.Exit(1)
		}
		time.Sleep(time.Millisecond)
	}
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p / 100 * float64(len(sorted)))
	if float64(rank) < p/100*float64(len(sorted)) {
		rank++
	}
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return sorted[rank-1]
}

func f64(v float64) *float64 { return &v }
func u64(v uint64) *uint64   { return &v }

func main() {
	workload := flag.String("workload", "w1", "w1, w1t, w2 or w3")
	url := flag.String("url", "", "API server base URL (overrides the kubeconfig's server)")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig (TLS, client certificates, tokens)")
	contentType := flag.String("content-type", "protobuf", "protobuf (client-go's default for built-in types) or json")
	ctl := flag.String("control", "", "control port address")
	n := flag.Uint64("n", 0, "pods on the server")
	updates := flag.Uint64("updates", 10000, "W2 updates")
	timeoutSecs := flag.Int("timeout-secs", 300, "timeout of each wait")
	metadataOnly := flag.Bool("metadata", false, "client-go's metadata-only informer (metadatainformer)")
	flag.Parse()
	timeout := time.Duration(*timeoutSecs) * time.Second

	cfg, peerName, err := restConfig(*url, *kubeconfig, *contentType)
	if err != nil {
		fmt.Fprintf(os.Stderr, "client-go-peer: %v\n", err)
		os.Exit(2)
	}
	var informer cache.SharedIndexInformer
	if *metadataOnly {
		peerName = "client-go-metadata"
		mc, err := metadata.NewForConfig(cfg)
		if err != nil {
			fmt.Fprintf(os.Stderr, "client-go-peer: metadata client: %v\n", err)
			os.Exit(1)
		}
		informer = metadatainformer.NewFilteredMetadataInformer(mc, v1.SchemeGroupVersion.WithResource("pods"), "", 0,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	} else {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			fmt.Fprintf(os.Stderr, "client-go-peer: client: %v\n", err)
			os.Exit(1)
		}
		lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", fields.Everything())
		informer = cache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, cache.Indexers{
			cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
			"node": func(obj interface{}) ([]string, error) {
				if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName != "" {
					return []string{p.Spec.NodeName}, nil
				}
				return nil, nil
			},
		})
	}
	rep := report{Peer: peerName, Workload: *workload, N: *n}
	rep.BaselineRSSKiB = rss()
	if *workload == "w1t" {
		_ = informer.SetTransform(func(obj interface{}) (interface{}, error) {
			if m, err := meta.Accessor(obj); err == nil {
				m.SetManagedFields(nil)
			}
			return obj, nil
		})
	}
	c := &counters{}
	for h := 0; h < 2; h++ {
		h := h
		_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj interface{}) {
				if h == 0 {
					c.adds.Add(1)
				}
			},
			UpdateFunc: func(_, obj interface{}) { c.onUpdate(h, obj) },
		})
	}
	stop := make(chan struct{})
	t0, cpu0 := time.Now(), cpuMs()
	go informer.Run(stop)
	waitUntil(timeout, "initial sync", func() bool { return informer.HasSynced() && c.adds.Load() >= *n })
	sync := time.Since(t0)
	cpuAtSync := cpuMs() - cpu0
	pk := peak()
	time.Sleep(500 * time.Millisecond)
	steady := steadyRSS()
	rep.SteadyRSSKiB = u64(steady)
	objects := uint64(len(informer.GetStore().ListKeys()))
	switch *workload {
	case "w1", "w1t":
		rep.SyncMs = f64(float64(sync.Nanoseconds()) / 1e6)
		rep.CPUMsAtSync = f64(cpuAtSync)
		rep.PeakRSSKiB = u64(pk)
		per := 0.0
		if objects > 0 && steady > rep.BaselineRSSKiB {
			per = float64(steady-rep.BaselineRSSKiB) * 1024 / float64(objects)
		}
		rep.BytesPerObject = f64(per)
	case "w3":
		resetPeak()
		before := c.updatesMin()
		reply, err := control(*ctl, "relist")
		if err != nil {
			fmt.Fprintf(os.Stderr, "client-go-peer: %v\n", err)
			os.Exit(1)
		}
		t := time.Now()
		if target, ok := relistTarget(reply); ok {
			// The server could not change every object unseen (a real server): the relist
			// is done once the informer has listed at or after the compaction.
			waitUntil(timeout, "relist", func() bool {
				rv, err := strconv.ParseUint(informer.LastSyncResourceVersion(), 10, 64)
				return err == nil && rv >= target
			})
		} else {
			waitUntil(timeout, "relist", func() bool { return c.updatesMin() >= before+*n })
		}
		rep.RelistMs = f64(float64(time.Since(t).Nanoseconds()) / 1e6)
		rep.RelistPeakRSSKiB = u64(peak())
	case "w2":
		before := c.updatesMin()
		c.recording.Store(true)
		if _, err := control(*ctl, fmt.Sprintf("update %d", *updates)); err != nil {
			fmt.Fprintf(os.Stderr, "client-go-peer: %v\n", err)
			os.Exit(1)
		}
		waitUntil(timeout, "updates", func() bool { return c.updatesMin() >= before+*updates })
		c.recording.Store(false)
		c.mu.Lock()
		lat := append([]float64(nil), c.lat...)
		span := c.last.Sub(c.first).Seconds()
		c.mu.Unlock()
		sort.Float64s(lat)
		eps := 0.0
		if span > 0 {
			eps = (float64(len(lat)) - 1) / span
		}
		rep.Events = u64(uint64(len(lat)))
		rep.EventsPerSec = f64(eps)
		rep.LatencyP50Us = f64(percentile(lat, 50))
		rep.LatencyP99Us = f64(percentile(lat, 99))
	default:
		fmt.Fprintf(os.Stderr, "client-go-peer: unknown workload %q\n", *workload)
		os.Exit(2)
	}
	rep.Objects = uint64(len(informer.GetStore().ListKeys()))
	close(stop)
	out, _ := json.Marshal(rep)
	fmt.Println(string(out))
}

// cpuMs is the CPU time (user and system, every thread) the process has used so far, in
// milliseconds.
func cpuMs() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec)*1e3 + float64(t.Usec)/1e3 }
	return tv(u.Utime) + tv(u.Stime)
}
