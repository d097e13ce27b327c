package netlab

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// interruptSignals close every open lab before the process dies of them.
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// live is the set of labs not yet closed. While it is not empty, a
// goroutine listens for interruptSignals; the listener is stopped when the
// last lab closes, so a process without labs keeps its normal signal
// handling.
var live struct {
	sync.Mutex
	labs map[*Lab]struct{}
	ch   chan os.Signal
}

// register adds l to the live labs, starting the listener if needed.
func register(l *Lab) {
	live.Lock()
	defer live.Unlock()
	if live.labs == nil {
		live.labs = make(map[*Lab]struct{})
	}
	if len(live.labs) == 0 {
		live.ch = make(chan os.Signal, 1)
		signal.Notify(live.ch, interruptSignals...)
		go onInterrupt(live.ch)
	}
	live.labs[l] = struct{}{}
}

// unregister removes l, stopping the listener with the last lab.
func unregister(l *Lab) {
	live.Lock()
	defer live.Unlock()
	if _, ok := live.labs[l]; !ok {
		return
	}
	delete(live.labs, l)
	if len(live.labs) == 0 {
		signal.Stop(live.ch)
		close(live.ch) // no more deliveries after Stop: ends onInterrupt
		live.ch = nil
	}
}

// onInterrupt waits for an interrupt on ch; it closes every live lab, then
// restores the default action of the signal and raises it again, so the
// process ends as it would have without the lab.
func onInterrupt(ch chan os.Signal) {
	sig, ok := <-ch
	if !ok {
		return
	}
	live.Lock()
	labs := make([]*Lab, 0, len(live.labs))
	for l := range live.labs {
		labs = append(labs, l)
	}
	live.Unlock()
	for _, l := range labs {
		_ = l.Close() // nothing to report to: the process is going away
	}
	signal.Reset(sig)
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Signal(sig)
	}
}
