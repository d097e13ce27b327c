//go:build !unix

package server

import "syscall"

// detachedAttr: no sessions here; the process is started as it is.
func detachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
