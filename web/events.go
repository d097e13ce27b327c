//go:build !small

package web

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"time"

	"github.com/udpstp/udpstp/internal/sourcekey"
)

// The event stream's bounds: how many pages may follow it at once (each
// holds a subscription), how often an idle stream says it is alive (so
// that proxies keep it open), and how long a write to a page that stopped
// reading may take before the stream is dropped.
const (
	maxEventStreams = 32
	eventPing       = 25 * time.Second
	eventWrite      = 10 * time.Second
)

// DefaultStreamsPerClient is Config.StreamsPerClient's default.
const DefaultStreamsPerClient = 4

// takeStream takes one of the event streams for a client at remote (a
// request's RemoteAddr): at most maxEventStreams in all and
// StreamsPerClient per client address (an IPv6 client's /64), so that one
// client cannot hold them all. It returns the release, or nil and why not.
func (s *server) takeStream(remote string) (func(), string) {
	key := clientKey(remote)
	s.streamMu.Lock()
	defer s.streamMu.Unlock()
	if s.streams >= maxEventStreams {
		return nil, "too many pages follow the tests: try later"
	}
	if s.perClient[key] >= s.cfg.StreamsPerClient {
		return nil, "this address follows the tests from too many pages: close one"
	}
	s.streams++
	s.perClient[key]++
	return func() {
		s.streamMu.Lock()
		defer s.streamMu.Unlock()
		s.streams--
		if s.perClient[key]--; s.perClient[key] <= 0 {
			delete(s.perClient, key)
		}
	}, ""
}

// clientKey is the client streams are counted by (sourcekey.Of).
func clientKey(remote string) string {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return remote
	}
	return sourcekey.Of(ap.Addr()).String()
}

// progress is what the page's script gets of an event of the running
// test: the figures it shows, not the event's whole data (the "end"
// event's holds the whole document).
type progress struct {
	Test      string   `json:"test"`
	Event     string   `json:"event"`
	Direction string   `json:"direction,omitempty"`
	Run       int      `json:"run,omitempty"`
	Interval  int      `json:"interval,omitempty"`
	Mbps      *float64 `json:"mbps,omitempty"`
	Message   string   `json:"message,omitempty"`
}

// streamEvent is the part of a line of the client's event stream
// (docs/json-stream.md) that progress takes.
type streamEvent struct {
	Event     string `json:"event"`
	Direction string `json:"direction"`
	Run       int    `json:"run"`
	Data      struct {
		Connection      *int
		Interval        int
		IPLayerCapacity *float64
		Message         string
	} `json:"data"`
}

// events is /events: server-sent events of the running test. "state" says
// which test runs (on connecting and when one starts), "progress" carries
// a progress of it, "result" says that a test ended, its result being
// written to the store.
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	a := s.cfg.Agent
	if a == nil {
		w.WriteHeader(http.StatusNoContent) // an EventSource stops asking
		return
	}
	release, msg := s.takeStream(r.RemoteAddr)
	if release == nil {
		http.Error(w, msg, http.StatusServiceUnavailable)
		return
	}
	defer release()
	ch, unsubscribe := a.Subscribe()
	defer unsubscribe()

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	send := func(event string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		rc.SetWriteDeadline(time.Now().Add(eventWrite))
		if _, err := w.Write([]byte("event: " + event + "\ndata: " + string(b) + "\n\n")); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	w.Write([]byte("retry: 2000\n"))
	if !send("state", map[string]string{"running": a.Running()}) {
		return
	}
	ping := time.NewTicker(eventPing)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ping.C:
			rc.SetWriteDeadline(time.Now().Add(eventWrite))
			if _, err := w.Write([]byte(": ping\n\n")); err != nil || rc.Flush() != nil {
				return
			}
		case line, ok := <-ch:
			if !ok {
				return // the page's EventSource connects again
			}
			var ev streamEvent
			if json.Unmarshal(line, &ev) != nil {
				continue // not an event of the stream: skipped, as a reader skips unknown events
			}
			p := progress{Test: a.Running(), Event: ev.Event, Direction: ev.Direction, Run: ev.Run}
			ok = true
			switch ev.Event {
			case "start":
				ok = send("state", map[string]string{"running": p.Test}) && send("progress", p)
			case "subinterval":
				if ev.Data.Connection == nil || *ev.Data.Connection != 0 {
					continue // a connection's own: the page shows the sum
				}
				p.Interval, p.Mbps = ev.Data.Interval, ev.Data.IPLayerCapacity
				ok = send("progress", p)
			case "warning", "error":
				p.Message = ev.Data.Message
				ok = send("progress", p)
			case "end":
				ok = send("result", p)
			}
			if !ok {
				return
			}
		}
	}
}
