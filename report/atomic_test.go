package report

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "result.json")
	onlyFile := func() {
		t.Helper()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != 1 || ents[0].Name() != "result.json" {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("directory holds %v, want only result.json", names)
		}
	}

	if err := WriteFileAtomic(path, []byte("first\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "first\n" {
		t.Errorf("content %q", b)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, %v", st.Mode(), err)
	}
	onlyFile()

	// An existing file is replaced as a whole.
	if err := WriteFileAtomic(path, []byte("second, longer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "second, longer\n" {
		t.Errorf("content %q", b)
	}
	onlyFile()

	// A relative path in the working directory works too.
	t.Chdir(dir)
	if err := WriteFileAtomic("result.json", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || len(b) != 0 {
		t.Errorf("content %q, %v", b, err)
	}
	onlyFile()
}

func TestWriteFileAtomicErrors(t *testing.T) {
	dir := t.TempDir()
	err := WriteFileAtomic(filepath.Join(dir, "missing", "result.json"), []byte("x"), 0o644)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
	// The target is a directory: the rename fails and the old content and
	// the directory stay as they were, without a temporary file.
	target := filepath.Join(dir, "result.json")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(target, []byte("x"), 0o644); err == nil {
		t.Error("writing over a directory succeeded")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d entries left in the directory, want 1", len(ents))
	}
}

// TestCheckWritable: a writable directory passes and is left as it was; a
// missing directory, a path through a file and a directory as the path
// fail, naming the problem; so does a read-only directory (not as root,
// who may write anywhere).
func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "result.json")
	if err := CheckWritable(ok); err != nil {
		t.Errorf("%s: %v", ok, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the check left %d files behind", len(ents))
	}
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
		if err := CheckWritable(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}
