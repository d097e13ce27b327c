//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadFile: a regular file is read whole up to the limit; a longer
// one, a FIFO with no writer (the call returns, it does not wait), a
// link (to a regular file too), a device and a directory are refused,
// the error naming what is there; CheckRegular says the same, and that an
// absent name is absent.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(file, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(file, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("a 10-byte file with a limit of 10: %q %v", b, err)
	}
	if _, err := ReadFile(file, 9); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a 10-byte file with a limit of 9: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{fifo: "is a FIFO", link: "is a symbolic link", "/dev/zero": "is a device", dir: "is a directory"} {
		if _, err := ReadFile(path, 1<<20); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), path+": "+kind) {
			t.Errorf("ReadFile %s: %v, want %q", path, err, kind)
		}
		if exists, err := CheckRegular(path); !exists || !errors.Is(err, ErrNotRegular) {
			t.Errorf("CheckRegular %s: %v %v", path, exists, err)
		}
	}
	if exists, err := CheckRegular(file); !exists || err != nil {
		t.Errorf("CheckRegular of a file: %v %v", exists, err)
	}
	if exists, err := CheckRegular(filepath.Join(dir, "absent")); exists || err != nil {
		t.Errorf("CheckRegular of an absent name: %v %v", exists, err)
	}
}
