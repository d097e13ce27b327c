//go:build !unix

package main

import "syscall"

// detachedAttr: no sessions here; the process is started as it is.
func detachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
