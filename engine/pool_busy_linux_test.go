//go:build !portable

package engine

import (
	"testing"
	"time"
)

// TestPoolBusy: the pool's busy time grows while its thread works, never
// exceeds the time since the pool started (one thread), and stops growing
// once the thread only waits.
func TestPoolBusy(t *testing.T) {
	start := time.Now()
	p := NewPool(PoolOptions{Threads: 1})
	defer p.Close()
	a, _ := openPair(t, "127.0.0.1:0", SocketOptions{})
	c := p.Run(a, newFakeCore(time.Millisecond, 50*time.Millisecond), nil)
	waitDone(t, c)
	st := p.Stats()
	elapsed := time.Since(start)
	t.Logf("stats %+v after %v", st, elapsed)
	if st.Busy <= 0 || st.Busy > elapsed {
		t.Fatalf("busy %v after %v with one thread", st.Busy, elapsed)
	}
	if st.Wakeups == 0 || st.Turns < st.Wakeups {
		t.Fatalf("stats %+v", st)
	}
	// Idle now: the thread waits for commands without a deadline, so a
	// second reading adds nothing but a turn that may still be ending.
	var again PoolStats
	for deadline := time.Now().Add(5 * time.Second); ; {
		again = p.Stats()
		if again.Busy == st.Busy || time.Now().After(deadline) {
			break
		}
		st = again
		time.Sleep(10 * time.Millisecond) // polling an idle thread, not a synchronisation
	}
	if again.Busy != st.Busy {
		t.Fatalf("busy time grows on an idle thread: %v, then %v", st.Busy, again.Busy)
	}
}
