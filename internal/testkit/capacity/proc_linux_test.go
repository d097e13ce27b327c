package capacity

import (
	"os"
	"testing"
	"time"
)

// TestBusiest: the busiest thread is the one with the most time on a CPU
// between the readings, not the most in total, and a thread born in
// between counts from zero.
func TestBusiest(t *testing.T) {
	ms := time.Millisecond
	before := map[string]threadFigures{"1": {900 * ms, 10}, "2": {100 * ms, 5000}}
	after := map[string]threadFigures{"1": {950 * ms, 12}, "2": {400 * ms, 6000}, "3": {70 * ms, 90}}
	if got, want := busiest(before, after), (threadFigures{300 * ms, 1000}); got != want {
		t.Errorf("busiest = %+v, want %+v (thread 2's span)", got, want)
	}
	delete(after, "2") // ended: thread 3, born in between, leads
	if got, want := busiest(before, after), (threadFigures{70 * ms, 90}); got != want {
		t.Errorf("busiest = %+v, want %+v (thread 3 from zero)", got, want)
	}
}

// TestThreadSched reads this process's threads: the one running the test
// is among them and has spent time on a CPU.
func TestThreadSched(t *testing.T) {
	m := threadSched(os.Getpid())
	if len(m) == 0 {
		t.Fatal("no thread read")
	}
	var total time.Duration
	for _, f := range m {
		total += f.cpu
	}
	if total <= 0 {
		t.Errorf("threads of pid %d read no CPU time: %v", os.Getpid(), m)
	}
}
