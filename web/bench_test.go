//go:build !small

package web

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/store"
)

// benchRows is the store for the overview's bound: 100,000 results.
const benchRows = 100_000

// benchStore is the benchmark's SQLite store, seeded once per process
// (the benchmark runs several times): in /dev/shm where there is one, so
// that seeding does not wait for 100,000 fsyncs, which measure the disk,
// not the page.
var benchStore struct {
	once sync.Once
	dir  string
	now  time.Time
	st   store.Store
	err  error
}

func seededBench(b *testing.B) (store.Store, time.Time) {
	benchStore.once.Do(func() {
		parent := ""
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			parent = "/dev/shm"
		}
		benchStore.dir, benchStore.err = os.MkdirTemp(parent, "udpstp-web-bench-")
		if benchStore.err != nil {
			return
		}
		benchStore.st, benchStore.err = store.Open(context.Background(), "sqlite:"+filepath.Join(benchStore.dir, "results.db"))
		if benchStore.err != nil {
			return
		}
		benchStore.now = time.Now().Truncate(time.Second)
		start := time.Now()
		// A year and some of results (seed spreads them over 10 days
		// before now; stretch time instead: one every 6 minutes or so).
		seedSpan(b, benchStore.st, benchStore.now, benchRows, 400*24*time.Hour, nil)
		b.Logf("seeded %d results in %v", benchRows, time.Since(start).Round(time.Millisecond))
	})
	if benchStore.err != nil {
		b.Fatal(benchStore.err)
	}
	return benchStore.st, benchStore.now
}

// BenchmarkOverview100k: the overview page over a year of a store of
// 100,000 results (under 1 s), every chart's series reduced by
// the store to the page's resolution. ms/page is a page's mean time (the
// first, with the store's pages not yet in memory, is worst-ms/page);
// above the bound the benchmark fails.
func BenchmarkOverview100k(b *testing.B) {
	st, now := seededBench(b)
	agent := &fakeAgent{st: st, tests: []string{"home-down", "home-up", "home-both"}}
	h := Handler(Config{Store: st, Agent: agent, Now: func() time.Time { return now }})
	b.ResetTimer()
	var worst time.Duration
	for b.Loop() {
		start := time.Now()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/?range=1y", nil))
		if w.Code != 200 {
			b.Fatalf("overview: %d %s", w.Code, w.Body.String())
		}
		worst = max(worst, time.Since(start))
		// The page drew the year: the store reduced each line to the
		// resolution, not to nothing.
		if m := pointsRE.FindStringSubmatch(w.Body.String()); m == nil || m[2] != strconv.Itoa(DefaultPoints) {
			b.Fatalf("the overview's first line: %q, want %d points", m, DefaultPoints)
		}
	}
	mean := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(mean.Microseconds())/1e3, "ms/page")
	b.ReportMetric(float64(worst.Microseconds())/1e3, "worst-ms/page")
	if mean > time.Second {
		b.Errorf("the overview took %v a page (the slowest %v) over %d results, want under 1 s", mean, worst, benchRows)
	}
}

// BenchmarkFleet100k: the fleet page over the same store.
func BenchmarkFleet100k(b *testing.B) {
	st, now := seededBench(b)
	h := Handler(Config{Store: st, Now: func() time.Time { return now }})
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/fleet?range=1y", nil))
		if w.Code != 200 {
			b.Fatalf("fleet: %d", w.Code)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/page")
}

// TestMain removes the benchmark's store.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchStore.st != nil {
		benchStore.st.Close()
	}
	if benchStore.dir != "" {
		os.RemoveAll(benchStore.dir)
	}
	os.Exit(code)
}
