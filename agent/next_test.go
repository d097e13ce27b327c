package agent

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
)

// TestNextRunShown: when each test runs next is in the log (at start)
// and in /metrics, so that whoever tries the agent knows when to look.
func TestNextRunShown(t *testing.T) {
	now := time.Date(2027, 5, 1, 10, 0, 30, 0, time.UTC)
	cfg := mustParse(t, "[[test]]\nname = \"hourly\"\nservers = [\"s1\"]\ndirection = \"down\"\ncron = \"0 * * * *\"\n")
	a, _ := newTestAgent(t, cfg, &fakeClient{}, func() time.Time { return now })
	var log syncBuffer
	a.o.Log = slog.New(slog.NewTextHandler(&log, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	await.True(t, "the slot drawn", func() bool { return a.sleeps.Load() > 0 })
	cancel()
	<-done
	if want := `msg="next test" test=hourly at=2027-05-01T11:00:00Z in=59m30s`; !strings.Contains(log.String(), want) {
		t.Errorf("log has no %s:\n%s", want, log.String())
	}
	rec := httptest.NewRecorder()
	a.Handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost:8080/metrics", nil))
	if want := `udpstp_agent_next_run_timestamp_seconds{test="hourly"} 1.8091692e+09`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("/metrics has no %s", want)
	}
	if got := a.NextRuns()["hourly"]; !got.Equal(time.Date(2027, 5, 1, 11, 0, 0, 0, time.UTC)) {
		t.Errorf("NextRuns: %s", got)
	}
}
