package netlab

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// inNamespace runs fn on an OS thread switched into the network namespace
// held open by the file path. The goroutine is locked to its thread for
// the whole call; the thread is switched back afterwards and released, or,
// if switching back fails, left locked so the runtime discards it and no
// goroutine ever runs in the wrong namespace. New runtime threads are not
// cloned from a locked thread (Go 1.10+), so fn's namespace does not leak.
func inNamespace(path string, fn func() error) error {
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("netlab: opening namespace: %w", err)
	}
	defer target.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			errc <- fmt.Errorf("netlab: opening own namespace: %w", err)
			return // thread stays locked and is discarded: harmless
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netlab: setns %s: %w", path, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netlab: switching back from %s: %w (fn: %v)", path, err, ferr)
			return // stays locked: the thread dies with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
