//go:build unix

package server

import "syscall"

// detachedAttr starts a process in a session of its own, without a
// controlling terminal: a shell's hangup does not reach it.
func detachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
