package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotRegular is the error, wrapped, for a name that exists and is not
// a regular file (a symbolic link, a FIFO, a device, a directory, a
// socket).
var ErrNotRegular = errors.New("not a regular file")

// ErrForeign is the error, wrapped, for a file owned by another user in a
// sticky directory.
var ErrForeign = errors.New("owned by another user in a sticky directory")

// Write writes data to path so that path holds either its old content or
// all of data, never a part: the data goes to a temporary file created
// exclusively in the same directory (same file system, so the rename is
// atomic), is flushed to disk, renamed over path, and the directory is
// flushed so the rename itself survives a crash. An existing file keeps
// its mode (a 0600 file stays 0600); a new one gets perm.
func Write(path string, data []byte, perm fs.FileMode) (err error) {
	dir, base := split(path)
	if base == "" {
		return fmt.Errorf("%s: not a file name", path)
	}
	fi, err := target(path, dir)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if fi != nil {
		perm = fi.Mode().Perm()
	}
	// CreateTemp opens with O_CREATE|O_EXCL and a random suffix: nothing
	// planted at a predictable name can be followed or truncated.
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// CreateTemp makes the file 0600; give it the mode decided above.
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// rename(2) replaces the name itself: had a link been put at path
	// since the check, the link is replaced, never followed.
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(dir)
}

// Create opens path for writing in place, as a file written while a test
// runs (-O) must be, creating it with perm or truncating the regular file
// there (whose mode stays).
func Create(path string, perm fs.FileMode) (*os.File, error) {
	f, err := open(path, os.O_WRONLY|os.O_CREATE, perm)
	if err == nil {
		if err = f.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, err
}

// Append opens path for appending (a log file), creating it with perm.
func Append(path string, perm fs.FileMode) (*os.File, error) {
	return open(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
}

// Open opens the regular file at path for reading (flag os.O_RDONLY, or
// os.O_RDWR to cut it short), under Create's rules: a file someone else
// may have planted (a key, a file a crash left) is read only if it is
// one, never through a link nor by waiting for a FIFO's writer.
func Open(path string, flag int) (*os.File, error) {
	return open(path, flag&^(os.O_CREATE|os.O_TRUNC|os.O_APPEND), 0)
}

// open opens path with flag, neither through a symbolic link nor waiting
// for a FIFO's reader, and returns it only if what it opened is a regular
// file the rules allow.
func open(path string, flag int, perm fs.FileMode) (*os.File, error) {
	dir, base := split(path)
	if base == "" {
		return nil, fmt.Errorf("%s: not a file name", path)
	}
	if _, err := target(path, dir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, flag|openFlags, perm)
	if err != nil {
		return nil, err
	}
	// The name may have changed between the check and the open: what was
	// opened is what counts.
	fi, err := f.Stat()
	if err == nil {
		err = regular(path, dir, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Check reports whether Write can write path now: the name is absent or
// a regular file it may replace, and its directory takes a new file
// (created exclusively and removed here).
func Check(path string) error {
	dir, base := split(path)
	if base == "" {
		return fmt.Errorf("%s: not a file name", path)
	}
	if _, err := target(path, dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot create a file in %s: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("cannot remove %s: %w", name, err)
	}
	return nil
}

// CheckOpen reports whether Create or Append can open path now: what Check finds,
// and an existing file opens for writing (without truncating it).
func CheckOpen(path string) error {
	if err := Check(path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|openFlags, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// split is path's directory ("." for none) and base name.
func split(path string) (dir, base string) {
	dir, base = filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	return dir, base
}

// target is what is at path now (nil if nothing), refused unless a
// regular file that is not another user's in a sticky directory.
func target(path, dir string) (fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return fi, regular(path, dir, fi)
}

// regular refuses fi, found at path in dir, unless it is a regular file
// and, in a sticky directory, the writer's own.
func regular(path, dir string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return &notRegular{path, kind(fi.Mode())}
	}
	uid, ok := owner(fi)
	if !ok || uid == os.Geteuid() {
		return nil
	}
	di, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if di.Mode()&fs.ModeSticky == 0 {
		return nil
	}
	return fmt.Errorf("%s: uid %d's file, %w (%s): it may be planted", path, uid, ErrForeign, dir)
}

// notRegular is ErrNotRegular with the name and what it is.
type notRegular struct{ path, kind string }

func (e *notRegular) Error() string        { return e.path + ": " + e.kind }
func (e *notRegular) Is(target error) bool { return target == ErrNotRegular }

// kind names what a name that is not a regular file is.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "is a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "is a FIFO"
	case m.IsDir():
		return "is a directory"
	case m&fs.ModeDevice != 0:
		return "is a device"
	case m&fs.ModeSocket != 0:
		return "is a socket"
	}
	return "is not a file"
}

// syncDir flushes a directory's entries (the rename). Some systems cannot
// sync a directory; that is not worth failing a finished test for, so only
// the open error is reported.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	d.Sync()
	return d.Close()
}
