//go:build !linux

package netstat

import "errors"

// ReadSelf: only Linux has /proc/self/net (read_linux.go).
func ReadSelf() (Counters, error) { return nil, errors.ErrUnsupported }
