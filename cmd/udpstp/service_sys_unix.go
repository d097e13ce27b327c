//go:build unix

package main

import "syscall"

// detachedAttr starts a process in a session of its own, without a
// controlling terminal: a shell's hangup does not reach it.
func detachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
