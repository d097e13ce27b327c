//go:build unix

package atomicfile

import (
	"io/fs"
	"syscall"
)

// openFlags: never through a symbolic link at the name, never waiting for
// a FIFO's other end (a FIFO without a reader fails with ENXIO at once).
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// owner is the user ID that owns fi.
func owner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
