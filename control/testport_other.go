//go:build !linux

package control

// DefaultTestPorts is IANA's dynamic range off Linux.
func DefaultTestPorts() PortRange { return FallbackTestPorts }
