package netlab

import (
	"errors"

	"golang.org/x/sys/unix"
)

// pidAlive reports whether a process with this pid exists (EPERM means it
// exists but belongs to someone else).
func pidAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// killPid sends SIGKILL to pid; a process that is already gone is not an
// error.
func killPid(pid int) error {
	if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		return err
	}
	return nil
}
