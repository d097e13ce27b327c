//go:build !portable

package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestYieldKeepsTimerSlack: an Engine Thread's yield, unlocked from its OS
// thread, may come back on another thread when other goroutines keep the
// scheduler busy. After every yield the thread it is on has the 1 ns timer
// slack, and no other goroutine ever runs on a thread with it: busy
// goroutines on every P, which make it move, look at their own thread's
// slack as they go.
func TestYieldKeepsTimerSlack(t *testing.T) {
	var stop atomic.Bool
	var leaked, looked atomic.Int64
	var wg sync.WaitGroup
	for range 2 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1e9 && !stop.Load(); i++ {
				if i%1000 == 0 {
					looked.Add(1)
					if timerSlack() == 1 {
						leaked.Add(1)
					}
					runtime.Gosched()
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()

	type outcome struct {
		yields, moved, badSlack int
		err                     error
	}
	done := make(chan outcome)
	go func() {
		// The goroutine exits locked: its thread, with the 1 ns slack,
		// exits with it.
		runtime.LockOSThread()
		var o outcome
		if o.err = SetTimerSlack(1); o.err != nil {
			done <- o
			return
		}
		for ; o.yields < 20000 && (o.yields < 2000 || o.moved < 3); o.yields++ {
			tid := unix.Gettid()
			yieldThread()
			if unix.Gettid() != tid {
				o.moved++
			}
			if timerSlack() != 1 {
				o.badSlack++
			}
		}
		done <- o
	}()
	o := <-done
	if o.err != nil {
		t.Skipf("timer slack: %v", o.err)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d yields, %d came back on another thread; other goroutines looked at their thread's slack %d times",
		o.yields, o.moved, looked.Load())
	if o.badSlack != 0 {
		t.Errorf("after %d of %d yields the thread's timer slack was not 1 ns", o.badSlack, o.yields)
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("other goroutines ran %d times on a thread with the 1 ns timer slack", n)
	}
}
