//go:build !small

package web

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/udpstp/udpstp/store"
)

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
	// redraw, if set, is a test's next slot drawn after its run, as the
	// agent's schedule loop does once the result is stored and the test
	// lock let go.
	redraw func(name string) time.Time

	mu      sync.Mutex
	next    map[string]time.Time // NextRuns
	running string
	subs    map[chan []byte]struct{}
	done    chan struct{} // closed when the last started run ended
}

func (a *fakeAgent) Tests() []string { return a.tests }

func (a *fakeAgent) NextRuns() map[string]time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.next)
}

// setNext sets test name's next slot (zero: none).
func (a *fakeAgent) setNext(name string, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next == nil {
		a.next = map[string]time.Time{}
	}
	if at.IsZero() {
		delete(a.next, name)
		return
	}
	a.next[name] = at
}

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
		if a.redraw != nil {
			// As above, and past the page's first fetch again after the
			// row: the page must wait for the new slot too.
			time.Sleep(300 * time.Millisecond)
			a.setNext(name, a.redraw(name))
		}
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
