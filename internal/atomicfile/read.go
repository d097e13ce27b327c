package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// The files a service reads at its own paths (the agent's configuration,
// the result store) follow the rules of the files it writes: a FIFO
// planted at the name must not block the open or the read (a SIGHUP
// reload that waits on one holds up SIGTERM), nor a link lead elsewhere,
// nor a device feed it without end (docs/security.md, "The result store
// and the agent's configuration").

// ErrTooLarge is the error, wrapped, for a file longer than a reader
// takes.
var ErrTooLarge = errors.New("larger than allowed")

// ReadFile reads the regular file at path (as Open opens it), at most
// limit bytes: a longer file is an error that wraps ErrTooLarge.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w (%d bytes)", path, ErrTooLarge, limit)
	}
	return b, nil
}

// CheckRegular reports whether the name path is absent (exists false) or
// a regular file, for a file another library then opens by its name
// (SQLite): such a file planted as a FIFO would block that open. It looks
// at the name with lstat(2) and opens nothing: closing a descriptor of a
// file drops every POSIX lock the process holds on it, and SQLite holds
// them on the store's files while another connection of the same process
// is open (the check would corrupt its locking). The library's own open
// by name comes after the check in any case.
func CheckRegular(path string) (exists bool, err error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return true, err
	case !fi.Mode().IsRegular():
		return true, &notRegular{path, kind(fi.Mode())}
	}
	return true, nil
}
