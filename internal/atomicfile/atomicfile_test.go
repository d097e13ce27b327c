//go:build unix

package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// onlyFiles fails unless dir holds exactly names (no temporary file left).
func onlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("directory holds %v, want %v", got, names)
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "result.json")
	if err := Write(path, []byte("first\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "first\n" {
		t.Errorf("content %q", b)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, %v", st.Mode(), err)
	}
	onlyFiles(t, dir, "result.json")

	// An existing file is replaced as a whole and keeps its mode, whatever
	// the mode asked for a new file.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("second, longer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "second, longer\n" {
		t.Errorf("content %q", b)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("an existing 0600 file came back %v, %v", st.Mode(), err)
	}
	onlyFiles(t, dir, "result.json")

	// A relative path in the working directory works too.
	t.Chdir(dir)
	if err := Write("result.json", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || len(b) != 0 {
		t.Errorf("content %q, %v", b, err)
	}
	onlyFiles(t, dir, "result.json")
}

// hostile plants, in a fresh directory, a victim file only root may read
// and, at the name "out", each thing that is not a regular file.
func hostile(t *testing.T) (dir, victim string, planted map[string]func(string) error) {
	dir = t.TempDir()
	victim = filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("root only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, victim, map[string]func(string) error{
		"is a symbolic link": func(p string) error { return os.Symlink(victim, p) },
		"is a FIFO":          func(p string) error { return syscall.Mkfifo(p, 0o666) },
		"is a directory":     func(p string) error { return os.Mkdir(p, 0o755) },
	}
}

// bounded runs f and fails the test if it has not returned within a
// minute: a FIFO must never block an open.
func bounded(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s: still blocked after a minute", what)
		return nil
	}
}

// TestRefusesWhatIsNotAFile: Write, Create, Check, CheckOpen and Open
// each refuse a symbolic link (to a root-only file, left untouched), a FIFO
// (without blocking) and a directory, naming what is there.
func TestRefusesWhatIsNotAFile(t *testing.T) {
	ops := map[string]func(string) error{
		"Write":     func(p string) error { return Write(p, []byte("attack\n"), 0o644) },
		"Create":    func(p string) error { f, err := Create(p, 0o644); closeIf(f); return err },
		"Check":     Check,
		"CheckOpen": CheckOpen,
		"Open":      func(p string) error { f, err := Open(p, os.O_RDONLY); closeIf(f); return err },
	}
	for op, do := range ops {
		dir, victim, planted := hostile(t)
		for what, plant := range planted {
			p := filepath.Join(dir, strings.ReplaceAll(what, " ", "_"))
			if err := plant(p); err != nil {
				t.Fatal(err)
			}
			err := bounded(t, op+" "+what, func() error { return do(p) })
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), what) {
				t.Errorf("%s over a name that %s: %v", op, what, err)
			}
		}
		if b, err := os.ReadFile(victim); err != nil || string(b) != "root only\n" {
			t.Errorf("%s: the symbolic link's target now holds %q, %v", op, b, err)
		}
		onlyFiles(t, dir, "is_a_FIFO", "is_a_directory", "is_a_symbolic_link", "victim")
	}
	// A device is refused too, and nothing is written to it.
	if f, err := Create("/dev/null", 0o644); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "is a device") {
		closeIf(f)
		t.Errorf("Create(/dev/null): %v", err)
	}
}

func closeIf(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// TestPlantedTemporaryNames: links planted at every name a writer could
// predict (NAME.tmp, .NAME.tmp) are neither followed nor truncated.
func TestPlantedTemporaryNames(t *testing.T) {
	dir, victim, _ := hostile(t)
	path := filepath.Join(dir, "stats.json")
	for _, n := range []string{"stats.json.tmp", ".stats.json.tmp"} {
		if err := os.Symlink(victim, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := Check(path); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("stats\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "root only\n" {
		t.Errorf("the planted link's target now holds %q, %v", b, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "stats\n" {
		t.Errorf("content %q", b)
	}
	onlyFiles(t, dir, ".stats.json.tmp", "stats.json", "stats.json.tmp", "victim")
}

// TestForeignFileInStickyDirectory: another user's file in a sticky
// directory is refused by every operation and left as it was; the
// writer's own file there, and another's in a plain directory, are not.
func TestForeignFileInStickyDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user (chown)")
	}
	const other = 54321
	sticky := t.TempDir()
	if err := os.Chmod(sticky, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(sticky, "result.json")
	if err := os.WriteFile(theirs, []byte("theirs\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, other, other); err != nil {
		t.Fatal(err)
	}
	for op, do := range map[string]func(string) error{
		"Write":     func(p string) error { return Write(p, []byte("ours\n"), 0o644) },
		"Create":    func(p string) error { f, err := Create(p, 0o644); closeIf(f); return err },
		"Check":     Check,
		"CheckOpen": CheckOpen,
		"Open":      func(p string) error { f, err := Open(p, os.O_RDONLY); closeIf(f); return err },
	} {
		if err := do(theirs); !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), "uid 54321") {
			t.Errorf("%s over another user's file in a sticky directory: %v", op, err)
		}
	}
	if b, _ := os.ReadFile(theirs); string(b) != "theirs\n" {
		t.Errorf("their file now holds %q", b)
	}
	ours := filepath.Join(sticky, "ours.json")
	if err := Write(ours, []byte("x"), 0o644); err != nil {
		t.Errorf("our own file in a sticky directory: %v", err)
	}
	plain := filepath.Join(t.TempDir(), "r.json")
	os.WriteFile(plain, nil, 0o644)
	os.Chown(plain, other, other)
	if err := Check(plain); err != nil {
		t.Errorf("another user's file in a plain directory: %v", err)
	}
}

// TestCreate: a new file gets perm; an existing one is truncated in place
// and keeps its mode.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "export.csv")
	if err := os.WriteFile(p, []byte("old content\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Create(p, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new\n")
	f.Close()
	st, _ := os.Stat(p)
	if b, _ := os.ReadFile(p); string(b) != "new\n" || st.Mode().Perm() != 0o600 {
		t.Errorf("content %q, mode %v", b, st.Mode())
	}
	q := filepath.Join(dir, "new.csv")
	f, err = Create(q, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if st, _ := os.Stat(q); st.Mode().Perm() != 0o640&^umask() {
		t.Errorf("new file mode %v", st.Mode())
	}
}

func umask() fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	err := Write(filepath.Join(dir, "missing", "result.json"), []byte("x"), 0o644)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
	if err := Write(dir+"/", []byte("x"), 0o644); err == nil {
		t.Error("a name ending in / was written")
	}
}

// TestCheck: a writable directory passes and is left as it was; a missing
// directory, a path through a file and a directory as the path fail,
// naming the problem; so does a read-only directory (not as root, who may
// write anywhere).
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "result.json")
	if err := Check(ok); err != nil {
		t.Errorf("%s: %v", ok, err)
	}
	onlyFiles(t, dir)
	file := filepath.Join(dir, "plain")
	os.WriteFile(file, nil, 0o644)
	cases := map[string]string{
		filepath.Join(dir, "missing", "r.json"): "no such file or directory",
		filepath.Join(file, "r.json"):           "not a directory",
		dir:                                     "is a directory",
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o555)
		cases[filepath.Join(ro, "r.json")] = "permission denied"
	}
	for path, want := range cases {
		if err := Check(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}
