//go:build !linux || portable

package engine

import (
	"errors"
	"os"
)

// errNoFDSockets: socket activation passes descriptors to Linux servers only.
var errNoFDSockets = errors.New("engine: sockets from descriptors (socket activation) need Linux")

// SocketFromFD is supported on Linux only; elsewhere it fails. It does not
// close fd.
func SocketFromFD(fd int) (*Socket, error) { return nil, errNoFDSockets }

// SocketFromFile is supported on Linux only; elsewhere it closes f and fails.
func SocketFromFile(f *os.File) (*Socket, error) {
	f.Close()
	return nil, errNoFDSockets
}
