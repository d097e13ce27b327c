package report

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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
