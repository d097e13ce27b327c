package agent

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/udpstp/udpstp/client"
)

// ProbeTest is the test name /probe's results carry in the store.
const ProbeTest = "probe"

// defaultProbeSeconds is a /probe's test time when the URL gives none.
const defaultProbeSeconds = 5

// Handler serves /metrics, /probe and /healthz, and page (the web page,
// nil: none) at /.
func (a *Agent) Handler(page http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /probe", a.probe)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	if page != nil {
		mux.Handle("/", page)
	}
	return mux
}

// probe runs one bounded test, blackbox-style:
// /probe?target=host[:port]&direction=up|down&duration=S. It answers
// with the test's metrics; 400 for a bad query, 429 while a test runs or
// sooner than the configured interval after the last probe.
func (a *Agent) probe(w http.ResponseWriter, req *http.Request) {
	cfg := a.cfg.Load()
	q := req.URL.Query()
	target := q.Get("target")
	if target == "" {
		http.Error(w, "target missing: /probe?target=host[:port]&direction=up|down&duration=S", http.StatusBadRequest)
		return
	}
	dirFlag := "--downstream"
	switch d := q.Get("direction"); d {
	case "", "down":
	case "up":
		dirFlag = "--upstream"
	default:
		http.Error(w, fmt.Sprintf("direction %q: want up or down", d), http.StatusBadRequest)
		return
	}
	maxSeconds := int(cfg.ProbeMax / time.Second)
	seconds := min(defaultProbeSeconds, maxSeconds)
	if d := q.Get("duration"); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil || n < 1 || n > maxSeconds {
			http.Error(w, fmt.Sprintf("duration %q: want 1 to %d seconds", d, maxSeconds), http.StatusBadRequest)
			return
		}
		seconds = n
	}
	cc, plan, err := a.o.Parse([]string{dirFlag, "--test-time", strconv.Itoa(seconds), "--", target})
	if err != nil {
		http.Error(w, "target: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !a.tryLock(ProbeTest) {
		http.Error(w, "busy: a test is running ("+a.Running()+")", http.StatusTooManyRequests)
		return
	}
	if wait := a.probeWait(cfg); wait > 0 {
		a.unlock()
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		http.Error(w, fmt.Sprintf("probes are limited to one per %s", cfg.ProbeInterval), http.StatusTooManyRequests)
		return
	}
	defer a.unlock()
	a.o.Log.Info("test", "test", ProbeTest, "target", target, "from", req.RemoteAddr)
	t := &Test{Name: ProbeTest, Servers: cc.Servers, Client: cc, Plan: client.Plan{}}
	r := a.runOne(req.Context(), t, cc, dirFlag == "--upstream", plan)
	promhttp.HandlerFor(probeRegistry(r), promhttp.HandlerOpts{}).ServeHTTP(w, req)
}

// probeWait is how long until the next probe may start; 0: now, and the
// probe's start is taken.
func (a *Agent) probeWait(cfg *Config) time.Duration {
	a.probeMu.Lock()
	defer a.probeMu.Unlock()
	now := a.now()
	if !a.lastProbe.IsZero() {
		if wait := cfg.ProbeInterval - now.Sub(a.lastProbe); wait > 0 {
			return wait
		}
	}
	a.lastProbe = now
	return 0
}
