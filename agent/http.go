package agent

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
)

// ProbeTest is the test name /probe's results carry in the store.
const ProbeTest = "probe"

// defaultProbeSeconds is a /probe's test time when the URL gives none.
const defaultProbeSeconds = 5

// maxProbeQuery bounds /probe's query string: a target (MaxTargetLen), a
// direction and a duration, escaped.
const maxProbeQuery = 4 * MaxTargetLen

// Handler serves /metrics, /probe and /healthz, and page (the web page,
// nil: none) at /, to requests whose Host is the agent's (hostAllowed):
// names are the listener's own name (listen: --http's host) and [http]
// hosts. /probe, which runs a test, also refuses what a browser says came
// from another site (http.CrossOriginProtection).
func (a *Agent) Handler(page http.Handler, listen ...string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.m.reg, promhttp.HandlerOpts{}))
	cop := http.NewCrossOriginProtection()
	mux.HandleFunc("GET /probe", func(w http.ResponseWriter, r *http.Request) { a.probe(w, r, cop) })
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		// Red while results are not being stored (retry.go).
		if err := a.Health(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if page != nil {
		mux.Handle("/", page)
	}
	var own []string
	for _, l := range listen {
		if h := normalHost(l); h != "" {
			own = append(own, h)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.hostAllowed(r.Host, own) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusMisdirectedRequest)
			fmt.Fprintln(w, "this agent does not answer to that Host name: add it to [http] hosts of its configuration (docs/agent.md)")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// hostAllowed says whether a request for host (its Host header) is for
// this agent. DNS rebinding makes a page of another site reach the
// listener under that site's name, which its browser then sends as Host:
// so only names the agent knows are answered. An address literal cannot
// be rebound (the page's origin is that address itself), so any is
// answered but the unspecified ones (0.0.0.0 and :: reach the local host
// from a browser that allows them); loopback names too.
func (a *Agent) hostAllowed(host string, own []string) bool {
	if len(host) > 300 || !utf8.ValidString(host) {
		return false
	}
	h := normalHost(host)
	if ip, err := netip.ParseAddr(h); err == nil {
		return !ip.Unmap().IsUnspecified()
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true // RFC 6761 section 6.3: always loopback
	}
	return slices.Contains(own, h) || slices.Contains(a.cfg.Load().HTTP.Hosts, h)
}

// checkSameOrigin refuses a request a browser says came from another site
// (Sec-Fetch-Site, else Origin against Host): net/http's check, which
// passes GET as safe, asked as for a POST, since /probe's GET runs a test.
// A Prometheus scraper sends neither header and passes.
func checkSameOrigin(cop *http.CrossOriginProtection, r *http.Request) error {
	r2 := *r
	r2.Method = http.MethodPost
	return cop.Check(&r2)
}

// probe runs one bounded test, blackbox-style:
// /probe?target=host[:port]&direction=up|down&duration=S, against one of
// [probe] targets. It answers with the test's metrics; 400 for a bad
// query, 403 for a target not configured or a request from another site,
// 429 while a test runs or sooner than the configured interval after the
// last probe. Every refusal comes before any lookup or packet.
func (a *Agent) probe(w http.ResponseWriter, req *http.Request, cop *http.CrossOriginProtection) {
	if err := checkSameOrigin(cop, req); err != nil {
		http.Error(w, "refused: /probe runs a test; "+err.Error(), http.StatusForbidden)
		return
	}
	cfg := a.cfg.Load()
	if len(req.URL.RawQuery) > maxProbeQuery {
		http.Error(w, fmt.Sprintf("query longer than %d bytes", maxProbeQuery), http.StatusBadRequest)
		return
	}
	q, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		http.Error(w, "query not understood: "+err.Error(), http.StatusBadRequest)
		return
	}
	for k, vs := range q {
		for _, v := range append(vs, k) {
			if !utf8.ValidString(v) {
				http.Error(w, "query: not UTF-8", http.StatusBadRequest)
				return
			}
		}
	}
	target := q.Get("target")
	if target == "" {
		http.Error(w, "target missing: /probe?target=host[:port]&direction=up|down&duration=S", http.StatusBadRequest)
		return
	}
	if !slices.Contains(cfg.ProbeTargets, target) {
		shown := target
		if len(shown) > 64 {
			shown = strings.ToValidUTF8(shown[:64], "") + "..."
		}
		http.Error(w, fmt.Sprintf("target %q is not one of [probe] targets in the agent's configuration (docs/agent.md)", shown), http.StatusForbidden)
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
		// The client's bounds (control.MinTestIntTime), so that every bad
		// duration gets this one message, not the parser's.
		if err != nil || n < control.MinTestIntTime || n > maxSeconds {
			http.Error(w, fmt.Sprintf("duration %q: want %d to %d seconds", d, control.MinTestIntTime, maxSeconds), http.StatusBadRequest)
			return
		}
		seconds = n
	}
	cc, plan, err := a.o.Parse([]string{dirFlag, "--test-time", strconv.Itoa(seconds), "--", target})
	if err != nil {
		http.Error(w, "target: "+err.Error(), http.StatusBadRequest)
		return
	}
	for _, s := range cc.Servers {
		if err := badServer(s.Host); err != nil {
			http.Error(w, "target: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	cc.MaxRateMbps = cfg.ProbeMaxRateMbps
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
