// Command diff runs request scenarios against Kubernetes API servers over raw
// HTTP, records what a client sees (status codes, bodies, watch event
// sequences), normalizes what naturally differs, and compares two servers.
//
//	diff record  -kubeconfig F -compact-url U [-label L] -out obs.json [-only a,b]
//	diff compare -a obs-a.json -b obs-b.json [-allow allow.json] [-json diffs.json]
//	diff run     -a-kubeconfig F -a-compact-url U -b-kubeconfig F -b-compact-url U
//	             [-a-label L] [-b-label L] [-allow allow.json] [-save-a F] [-save-b F]
//
// A compact URL is POSTed to compact the server's store at its current
// revision: the real harness's admin endpoint (state.json "compactURL"), or
// the embedded server's fault hook (default path /__kinformer/faults/compact
// on its own address; it is sent with the kubeconfig's credentials when it is
// on the server's host). Exit status: 0 no unexplained differences, 1
// unexplained differences, 2 usage or runtime error.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// observations is what one recording run saw.
type observations struct {
	Label         string            `json:"label"`
	ServerVersion string            `json:"serverVersion"`
	RecordedAt    string            `json:"recordedAt"`
	Scenarios     []*scenarioResult `json:"scenarios"`
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	code := 0
	switch os.Args[1] {
	case "record":
		err = recordCmd(os.Args[2:])
	case "compare":
		code, err = compareCmd(os.Args[2:])
	case "run":
		code, err = runCmd(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "diff:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: diff record|compare|run [flags] (see the package doc or -h)")
	os.Exit(2)
}

func compactHook(t *target, raw string) (func(context.Context) error, error) {
	if raw == "" {
		return func(context.Context) error { return fmt.Errorf("no compact URL given") }, nil
	}
	if strings.HasPrefix(raw, "/") {
		raw = t.server + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	su, _ := url.Parse(t.server)
	sameHost := su != nil && su.Host == u.Host
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
		if err != nil {
			return err
		}
		client := http.DefaultClient
		if sameHost {
			t.auth(req)
			client = t.http
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			return fmt.Errorf("POST %s: %d %s", u.Redacted(), resp.StatusCode, bytes.TrimSpace(body))
		}
		return nil
	}, nil
}

func serverVersion(ctx context.Context, t *target) string {
	r, err := t.do(ctx, "GET", "/version", nil)
	if err != nil || r.status != 200 {
		return "unknown"
	}
	return str(r.body, "gitVersion")
}

func record(ctx context.Context, kubeconfig, compactURL, label, only string) (*observations, error) {
	t, err := loadTarget(kubeconfig)
	if err != nil {
		return nil, err
	}
	compact, err := compactHook(t, compactURL)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	run := hex.EncodeToString(b)
	// The run id must not look like anything else in a response; hex of
	// 3 random bytes could be all digits, which would collide with numbers.
	run = "x" + run
	obs := &observations{Label: label, ServerVersion: serverVersion(ctx, t), RecordedAt: time.Now().UTC().Format(time.RFC3339)}
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		if n != "" {
			want[n] = true
		}
	}
	for _, d := range catalogue {
		if len(want) > 0 && !want[d.name] {
			continue
		}
		start := time.Now()
		res := runScenario(ctx, t, compact, run, d)
		normalizeScenario(res, run)
		status := "ok"
		if res.Error != "" {
			status = "error: " + res.Error
		}
		fmt.Fprintf(os.Stderr, "  %-20s %5.1fs %s\n", d.name, time.Since(start).Seconds(), status)
		obs.Scenarios = append(obs.Scenarios, res)
	}
	return obs, nil
}

func save(path string, obs *observations) error {
	b, err := json.MarshalIndent(obs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func load(path string) (*observations, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var o observations
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &o, nil
}

func recordCmd(args []string) error {
	fs := flag.NewFlagSet("record", flag.ExitOnError)
	kc := fs.String("kubeconfig", "", "kubeconfig of the server")
	cu := fs.String("compact-url", "", "URL to POST to compact the server's store (a path is taken relative to the server)")
	label := fs.String("label", "server", "label for the report")
	out := fs.String("out", "", "where to write the observations (JSON)")
	only := fs.String("only", "", "comma-separated scenario names (default: all)")
	_ = fs.Parse(args)
	if *kc == "" || *out == "" {
		return fmt.Errorf("record needs -kubeconfig and -out")
	}
	obs, err := record(context.Background(), *kc, *cu, *label, *only)
	if err != nil {
		return err
	}
	return save(*out, obs)
}

func report(a, b *observations, allowPath, jsonOut string) (int, error) {
	allow, err := loadAllow(allowPath)
	if err != nil {
		return 2, err
	}
	diffs := compareObservations(a, b, allow)
	if jsonOut != "" {
		bs, _ := json.MarshalIndent(diffs, "", "  ")
		if err := os.WriteFile(jsonOut, append(bs, '\n'), 0o644); err != nil {
			return 2, err
		}
	}
	if printReport(os.Stdout, a, b, diffs) > 0 {
		return 1, nil
	}
	return 0, nil
}

func compareCmd(args []string) (int, error) {
	fs := flag.NewFlagSet("compare", flag.ExitOnError)
	a := fs.String("a", "", "observations A")
	b := fs.String("b", "", "observations B")
	allow := fs.String("allow", "", "allow-list of intentional differences (JSON)")
	jsonOut := fs.String("json", "", "also write the differences as JSON here")
	_ = fs.Parse(args)
	oa, err := load(*a)
	if err != nil {
		return 2, err
	}
	ob, err := load(*b)
	if err != nil {
		return 2, err
	}
	return report(oa, ob, *allow, *jsonOut)
}

func runCmd(args []string) (int, error) {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	akc := fs.String("a-kubeconfig", "", "kubeconfig of server A")
	acu := fs.String("a-compact-url", "", "compact URL of server A")
	al := fs.String("a-label", "A", "label of server A")
	bkc := fs.String("b-kubeconfig", "", "kubeconfig of server B")
	bcu := fs.String("b-compact-url", "/__kinformer/faults/compact", "compact URL of server B")
	bl := fs.String("b-label", "B", "label of server B")
	allow := fs.String("allow", "", "allow-list of intentional differences (JSON)")
	saveA := fs.String("save-a", "", "write A's observations here")
	saveB := fs.String("save-b", "", "write B's observations here")
	only := fs.String("only", "", "comma-separated scenario names (default: all)")
	jsonOut := fs.String("json", "", "also write the differences as JSON here")
	_ = fs.Parse(args)
	if *akc == "" || *bkc == "" {
		return 2, fmt.Errorf("run needs -a-kubeconfig and -b-kubeconfig")
	}
	ctx := context.Background()
	fmt.Fprintf(os.Stderr, "recording %s\n", *al)
	oa, err := record(ctx, *akc, *acu, *al, *only)
	if err != nil {
		return 2, err
	}
	fmt.Fprintf(os.Stderr, "recording %s\n", *bl)
	ob, err := record(ctx, *bkc, *bcu, *bl, *only)
	if err != nil {
		return 2, err
	}
	for _, p := range []struct {
		path string
		o    *observations
	}{{*saveA, oa}, {*saveB, ob}} {
		if p.path != "" {
			if err := save(p.path, p.o); err != nil {
				return 2, err
			}
		}
	}
	return report(oa, ob, *allow, *jsonOut)
}
