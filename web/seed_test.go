//go:build !small

package web

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/store"
)

var idCounter atomic.Int64

// newID is a fresh UUID for a test's result.
func newID() string {
	return fmt.Sprintf("00000000-0000-4000-8000-%012x", idCounter.Add(1))
}

// newTestStore is a SQLite store in the test's temporary directory.
func newTestStore(t testing.TB) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// sampleDoc is a real result document (a two-connection downstream test).
func sampleDoc(t testing.TB) []byte {
	b, err := os.ReadFile("../report/plot/testdata/udpstp_ds_c2_t10.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// seeded is what seed wrote: the rows in the last 7 days per direction,
// and the servers and agents.
type seeded struct {
	inWeek  map[string]int // direction -> results started in the last 7 days with a MaxMbps
	rtt     int            // results in the last 7 days with an RTT
	servers []string
	agents  []string
	tests   []string
}

func f64(v float64) *float64 { return &v }

// seed writes n results spread over the last 10 days before now (so some
// fall outside the 7 days' range), over tests, probes, servers,
// directions and statuses; every tenth has no RTT (a figure not measured).
func seed(t testing.TB, st store.Store, now time.Time, n int, doc []byte) seeded {
	t.Helper()
	return seedSpan(t, st, now, n, 10*24*time.Hour, doc)
}

// seedSpan is seed over span before now.
func seedSpan(t testing.TB, st store.Store, now time.Time, n int, span time.Duration, doc []byte) seeded {
	t.Helper()
	sd := seeded{inWeek: map[string]int{},
		servers: []string{"198.18.0.1:25000", "198.18.0.2:25000", "[2001:db8::1]:25000"},
		agents:  []string{"probe-kitchen", "probe-rack"},
		tests:   []string{"home-down", "home-up", "home-both"}}
	dirs := []string{"down", "up", "bidirectional"}
	statuses := []store.Status{store.StatusOK, store.StatusOK, store.StatusOK, store.StatusWarning, store.StatusError, store.StatusMissed}
	for i := 0; i < n; i++ {
		start := now.Add(-span + span/time.Duration(n)*time.Duration(i)).Add(time.Second)
		k := i % 3
		r := &store.Result{ID: newID(), Origin: store.OriginClient, Test: sd.tests[k], Agent: sd.agents[i%2],
			Server: sd.servers[i%len(sd.servers)], Start: start, End: start.Add(10 * time.Second),
			Direction: dirs[k], Status: statuses[i%len(statuses)], Doc: doc}
		if r.Status != store.StatusMissed {
			r.MaxMbps = f64(float64(50 + (i*37)%900))
			r.SummaryMbps = f64(*r.MaxMbps * 0.95)
			r.LossRatio = f64(float64(i%7) / 1000)
			if i%10 != 0 {
				r.RTTMinMs = f64(float64(3 + i%20))
			}
			if k == 2 {
				r.LoadedMs = f64(float64(20 + i%50))
				r.RPM = f64(60000 / *r.LoadedMs)
				r.Grade = "good"
			}
		} else {
			r.Warning = "the agent was asleep"
		}
		if err := st.Put(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if !start.Before(now.Add(-7 * 24 * time.Hour)) {
			if r.MaxMbps != nil {
				sd.inWeek[r.Direction]++
			}
			if r.RTTMinMs != nil {
				sd.rtt++
			}
		}
	}
	return sd
}
