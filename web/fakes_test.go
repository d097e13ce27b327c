//go:build !small

package web

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/udpstp/udpstp/store"
)

// memStore is a store.Store in memory for the tests that need no engine:
// what the interface says (newest first, series reduced to bucket means),
// nothing more.
type memStore struct {
	mu   sync.Mutex
	rows []store.Result
}

func (m *memStore) Put(_ context.Context, r *store.Result) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range m.rows {
		if x.ID == r.ID {
			return nil
		}
	}
	m.rows = append(m.rows, *r)
	return nil
}

func (m *memStore) Get(_ context.Context, id string) (*store.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range m.rows {
		if x.ID == id {
			return &x, nil
		}
	}
	return nil, store.ErrNotFound
}

func match(f store.Filter, r *store.Result) bool {
	return (f.Origin == "" || f.Origin == r.Origin) && (f.Test == "" || f.Test == r.Test) &&
		(f.Agent == "" || f.Agent == r.Agent) && (f.Server == "" || f.Server == r.Server) &&
		(f.Direction == "" || f.Direction == r.Direction) &&
		(f.Since.IsZero() || !r.Start.Before(f.Since)) && (f.Until.IsZero() || r.Start.Before(f.Until)) &&
		(f.BeforeStart.IsZero() || r.Start.Before(f.BeforeStart))
}

func (m *memStore) List(_ context.Context, f store.Filter) ([]store.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Result
	for _, x := range m.rows {
		if match(f, &x) {
			x.Doc = nil
			out = append(out, x)
		}
	}
	slices.SortFunc(out, func(a, b store.Result) int { return b.Start.Compare(a.Start) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func figure(r *store.Result, name string) *float64 {
	switch name {
	case "max_mbps":
		return r.MaxMbps
	case "summary_mbps":
		return r.SummaryMbps
	case "loss_ratio":
		return r.LossRatio
	case "rtt_min_ms":
		return r.RTTMinMs
	case "rtt_range_ms":
		return r.RTTRangeMs
	case "delay_var_ms":
		return r.DelayVarMs
	case "loaded_ms":
		return r.LoadedMs
	case "rpm":
		return r.RPM
	}
	return nil
}

func (m *memStore) Series(ctx context.Context, f store.Filter, fig string, points int) ([]store.Point, error) {
	if figure(&store.Result{}, fig) == nil && !slices.Contains([]string{"max_mbps", "summary_mbps", "loss_ratio", "rtt_min_ms", "rtt_range_ms", "delay_var_ms", "loaded_ms", "rpm"}, fig) {
		return nil, fmt.Errorf("no figure %q", fig)
	}
	rows, _ := m.List(ctx, f)
	slices.Reverse(rows)
	var pts []store.Point
	for i := range rows {
		if v := figure(&rows[i], fig); v != nil {
			pts = append(pts, store.Point{T: rows[i].Start, V: *v})
		}
	}
	if points <= 0 || len(pts) <= points {
		return pts, nil
	}
	// Buckets of equal time between the first and the last point.
	t0, span := pts[0].T, pts[len(pts)-1].T.Sub(pts[0].T)+1
	var out []store.Point
	var sum, n float64
	var tsum time.Duration
	cur := -1
	for _, p := range pts {
		b := int(int64(p.T.Sub(t0)) * int64(points) / int64(span))
		if b != cur && n > 0 {
			out = append(out, store.Point{T: t0.Add(tsum / time.Duration(n)), V: sum / n})
			sum, n, tsum = 0, 0, 0
		}
		cur = b
		sum, n, tsum = sum+p.V, n+1, tsum+p.T.Sub(t0)
	}
	out = append(out, store.Point{T: t0.Add(tsum / time.Duration(n)), V: sum / n})
	return out, nil
}

func (m *memStore) Prune(context.Context, store.Retention) (int, error) { return 0, nil }

func (m *memStore) Fleet(ctx context.Context, f store.Filter) (*store.Fleet, error) {
	f.Limit = 0
	rows, _ := m.List(ctx, f)
	fl := &store.Fleet{}
	si, ai := map[string]int{}, map[string]int{}
	for _, r := range rows { // newest first: an agent's first row is its last result
		i, ok := si[r.Server]
		if !ok {
			i = len(fl.Servers)
			si[r.Server] = i
			fl.Servers = append(fl.Servers, store.ServerSummary{Server: r.Server, ByStatus: map[store.Status]int{}, Capacity: make([]int, len(store.CapacityEdges))})
		}
		s := &fl.Servers[i]
		s.Tests++
		s.ByStatus[r.Status]++
		if r.MaxMbps != nil {
			b := 0
			for j, e := range store.CapacityEdges {
				if *r.MaxMbps >= e {
					b = j
				}
			}
			s.Capacity[b]++
		}
		j, ok := ai[r.Agent]
		if !ok {
			j = len(fl.Agents)
			ai[r.Agent] = j
			fl.Agents = append(fl.Agents, store.AgentSummary{Agent: r.Agent, Last: r.Start, LastStatus: r.Status, LastMaxMbps: r.MaxMbps})
		}
		a := &fl.Agents[j]
		a.Tests++
		if r.Status == store.StatusMissed {
			a.Missed++
		}
	}
	slices.SortFunc(fl.Servers, func(a, b store.ServerSummary) int { return cmpString(a.Server, b.Server) })
	slices.SortFunc(fl.Agents, func(a, b store.AgentSummary) int { return cmpString(a.Agent, b.Agent) })
	return fl, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (m *memStore) Close() error { return nil }

// fakeAgent runs a "test" that writes a result to its store and sends the
// events a client's stream would: start, three summed Sub-Intervals (and
// a connection's own, which the page leaves out), end. A test runs until
// release is closed (nil: at once), so a test can hold it running.
type fakeAgent struct {
	st      store.Store
	tests   []string
	release chan struct{}
	newID   func() string
	mkDoc   func() []byte

	mu      sync.Mutex
	running string
	subs    map[chan []byte]struct{}
	done    chan struct{} // closed when the last started run ended
}

func (a *fakeAgent) Tests() []string { return a.tests }

func (a *fakeAgent) Running() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running
}

func (a *fakeAgent) Subscribe() (<-chan []byte, func()) {
	ch := make(chan []byte, 64)
	a.mu.Lock()
	if a.subs == nil {
		a.subs = map[chan []byte]struct{}{}
	}
	a.subs[ch] = struct{}{}
	a.mu.Unlock()
	return ch, func() {
		a.mu.Lock()
		delete(a.subs, ch)
		a.mu.Unlock()
	}
}

func (a *fakeAgent) emit(line string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for ch := range a.subs {
		select {
		case ch <- []byte(line):
		default: // a subscriber that does not keep up loses events, as the agent's do
		}
	}
}

func (a *fakeAgent) RunNow(name string) error {
	a.mu.Lock()
	if a.running != "" {
		a.mu.Unlock()
		return fmt.Errorf("run %s: %w", name, ErrBusy)
	}
	a.running = name
	a.done = make(chan struct{})
	done := a.done
	a.mu.Unlock()
	go func() {
		defer close(done)
		start := time.Now()
		a.emit(`{"event":"start","data":{"Role":"Receiver"}}`)
		for i := 1; i <= 3; i++ {
			a.emit(fmt.Sprintf(`{"event":"subinterval","data":{"Connection":1,"Interval":%d,"IPLayerCapacity":1.5}}`, i))
			a.emit(fmt.Sprintf(`{"event":"subinterval","data":{"Connection":0,"Interval":%d,"IPLayerCapacity":%d.5}}`, i, 100*i))
		}
		if a.release != nil {
			<-a.release
		}
		mbps, rtt, loss := 321.5, 4.2, 0.001
		r := &store.Result{ID: a.newID(), Origin: store.OriginClient, Test: name, Agent: "probe-1", Server: "198.18.0.1:25000",
			Start: start, End: time.Now(), Direction: "down", Status: store.StatusOK,
			MaxMbps: &mbps, SummaryMbps: &mbps, LossRatio: &loss, RTTMinMs: &rtt}
		if a.mkDoc != nil {
			r.Doc = a.mkDoc()
		}
		// The end event first, the row after it, as an agent may do: the
		// page must wait for the row.
		a.emit(`{"event":"end","data":{"ErrorStatus":0}}`)
		time.Sleep(50 * time.Millisecond) // widens the window the page must cope with; no test waits on it
		a.st.Put(context.Background(), r)
		a.mu.Lock()
		a.running = ""
		a.mu.Unlock()
	}()
	return nil
}

// wait is the end of the last run started.
func (a *fakeAgent) wait() {
	a.mu.Lock()
	d := a.done
	a.mu.Unlock()
	if d != nil {
		<-d
	}
}
