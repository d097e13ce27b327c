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
	before := map[string]taskFigures{"1": {cpu: 900 * ms, wakeups: 10}, "2": {cpu: 100 * ms, wakeups: 5000}}
	after := map[string]taskFigures{"1": {cpu: 950 * ms, wakeups: 12}, "2": {cpu: 400 * ms, wakeups: 6000}, "3": {cpu: 70 * ms, wakeups: 90}}
	if got, want := busiest(before, after), (taskFigures{cpu: 300 * ms, wakeups: 1000}); got != want {
		t.Errorf("busiest = %+v, want %+v (thread 2's span)", got, want)
	}
	delete(after, "2") // ended: thread 3, born in between, leads
	if got, want := busiest(before, after), (taskFigures{cpu: 70 * ms, wakeups: 90}); got != want {
		t.Errorf("busiest = %+v, want %+v (thread 3 from zero)", got, want)
	}
}

// TestThreadSched reads this process's threads, by its pid and as self:
// some thread has spent time on a CPU.
func TestThreadSched(t *testing.T) {
	for _, pid := range []int{os.Getpid(), 0} {
		m := threadSched(pid)
		if len(m) == 0 {
			t.Fatalf("pid %d: no thread read", pid)
		}
		if sum := total(m); sum.cpu <= 0 {
			t.Errorf("threads of pid %d read no CPU time: %v", pid, m)
		}
	}
}
