package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// userAgent names the runner; kube-apiserver records it as the field manager
// in managedFields ("kinformer-e2e-diff").
const userAgent = "kinformer-e2e-diff/v0.1"

// response is one plain (non-watch) HTTP exchange as a client sees it.
type response struct {
	status      int
	contentType string
	body        any      // decoded JSON, or the raw text when it is not JSON
	warnings    []string // the Warning headers, in order
}

func (t *target) do(ctx context.Context, method, path string, body any) (*response, error) {
	return t.doAs(ctx, method, path, "application/json", "", body)
}

// doAs is do with a request Content-Type of its own (patches: merge, JSON,
// strategic, apply) and, when bearer is set, that bearer token instead of the
// kubeconfig's credentials (a ServiceAccount token the server issued), or no
// credentials at all when it is noCredentials.
func (t *target) doAs(ctx context.Context, method, path, contentType, bearer string, body any) (*response, error) {
	return t.doWith(ctx, method, path, contentType, bearer, nil, body)
}

// doWith is doAs with extra request headers (impersonation: Impersonate-User,
// Impersonate-Group, ...), each name with its values in order.
func (t *target) doWith(ctx context.Context, method, path, contentType, bearer string, headers [][2]string, body any) (*response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, t.server+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	for _, h := range headers {
		if strings.EqualFold(h[0], "Accept") {
			req.Header.Set(h[0], h[1]) // in place of the default
		} else {
			req.Header.Add(h[0], h[1])
		}
	}
	if bearer == noCredentials {
		// none at all
	} else if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	} else {
		t.auth(req)
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	r := &response{status: resp.StatusCode, contentType: mediaType(resp.Header.Get("Content-Type")), warnings: resp.Header.Values("Warning")}
	var v any
	if len(raw) > 0 {
		if json.Unmarshal(raw, &v) == nil {
			r.body = v
		} else {
			r.body = strings.TrimSpace(string(raw))
		}
	}
	return r, nil
}

func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.TrimSpace(ct)
}

// watchResult is a watch as a client sees it: the HTTP status, then the
// events in arrival order, and how the stream ended.
type watchResult struct {
	status      int
	contentType string
	body        any // a non-200 answer's body (a Status)
	events      []map[string]any
	// ended: how the last collect before close returned: "closed" (the
	// server ended the stream), "stopped" (the runner had what it wanted) or
	// "deadline" (the runner gave up waiting).
	ended string
}

// watchHandle is an open watch whose events are read in the background.
type watchHandle struct {
	cancel context.CancelFunc
	res    *watchResult
	ch     chan map[string]any
	done   chan struct{}
	// reason why the last collect returned: "stopped", "deadline", "closed".
	reason string
}

// openWatch starts a watch request and returns once the response headers are
// in. Events are read by next/collect.
func (t *target) openWatch(ctx context.Context, path string) (*watchHandle, error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.server+path, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	t.auth(req)
	resp, err := t.http.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	h := &watchHandle{
		cancel: cancel,
		res:    &watchResult{status: resp.StatusCode, contentType: mediaType(resp.Header.Get("Content-Type"))},
		ch:     make(chan map[string]any, 1024),
		done:   make(chan struct{}),
	}
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var v any
		if json.Unmarshal(raw, &v) == nil {
			h.res.body = v
		} else {
			h.res.body = strings.TrimSpace(string(raw))
		}
		close(h.ch)
		close(h.done)
		h.reason = "closed"
		return h, nil
	}
	go func() {
		defer close(h.done)
		defer close(h.ch)
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		for {
			var ev map[string]any
			if err := dec.Decode(&ev); err != nil {
				if !errors.Is(err, io.EOF) && ctx.Err() == nil {
					h.ch <- map[string]any{"type": "RUNNER-DECODE-ERROR", "object": err.Error()}
				}
				return
			}
			h.ch <- ev
		}
	}()
	return h, nil
}

// collect reads events until stop says so (given everything so far), the
// stream closes, or wait passes without stop being satisfied.
func (h *watchHandle) collect(wait time.Duration, stop func([]map[string]any) bool) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	if h.reason == "closed" {
		return
	}
	if stop != nil && stop(h.res.events) {
		h.reason = "stopped"
		return
	}
	for {
		select {
		case ev, ok := <-h.ch:
			if !ok {
				h.reason = "closed"
				return
			}
			h.res.events = append(h.res.events, ev)
			if stop != nil && stop(h.res.events) {
				h.reason = "stopped"
				return
			}
		case <-timer.C:
			h.reason = "deadline"
			return
		}
	}
}

// close ends the watch and records how it ended if nothing else did.
func (h *watchHandle) close() *watchResult {
	h.cancel()
	<-h.done
	h.res.ended = h.reason
	return h.res
}

func (r *response) String() string {
	b, _ := json.Marshal(r.body)
	return fmt.Sprintf("%d %s", r.status, b)
}
