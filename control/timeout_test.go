package control

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/memnet"
)

// A Setup that gets no answer before ctx's deadline, sooner than its own,
// is a timeout, whichever of its two timers (the socket's wait, ctx's)
// sees the deadline first: the same SetupError every time, never
// context.DeadlineExceeded. Callers (a failover search, a round-trip
// measurement) then say one thing for one cause.
func TestSetupDeadlineIsATimeout(t *testing.T) {
	n := fakeNet{&memnet.Net{Wire: memnet.NewWire(), NextPort: 50000}} // nothing listens
	ccfg := testClientConfig()
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		_, err := Setup(ctx, n, &ccfg, ServerAddr{Host: "127.0.0.1", Port: 24601}, 0, 5, func(string) {})
		cancel()
		var se *SetupError
		if !errors.As(err, &se) || !errors.Is(err, ErrNoAnswer) || !strings.Contains(se.Msg, "Timeout awaiting response") {
			t.Fatalf("try %d: %v, want the Setup's timeout", i, err)
		}
	}
	// An interrupt is not a timeout.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if _, err := Setup(ctx, n, &ccfg, ServerAddr{Host: "127.0.0.1", Port: 24601}, 0, 5, func(string) {}); !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted: %v, want context.Canceled", err)
	}
}
