//go:build !linux

package netlab

import "errors"

// pidAlive is conservative where the lab cannot run: every process is
// taken to be alive, so Sweep deletes nothing.
func pidAlive(int) bool { return true }

func killPid(int) error { return errors.New("netlab: not supported on this OS") }
