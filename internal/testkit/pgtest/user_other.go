//go:build !linux

package pgtest

import (
	"errors"
	"os/exec"
)

// unprivileged: running the cluster as another user is Linux's only
// (user_linux.go); elsewhere run the tests as an ordinary user.
func unprivileged() (func(*exec.Cmd), int, int, error) {
	return nil, 0, 0, errors.New("running as root: initdb refuses root, and switching to nobody is done on Linux only")
}
