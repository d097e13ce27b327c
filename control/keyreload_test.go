package control

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReloadKeyFile: a reload refuses what looks half-written (no line end
// at the end, a key cut to the start of the key in use) as
// ErrKeyFileIncomplete, and what ParseKeyFile refuses; it takes a rotated
// file, a shorter key that is not the start of the old one, and the
// golden OB-UDPST key file. The start-up read still takes a file without
// a final line end, as OB-UDPST's fgets loop does.
func TestReloadKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys")
	cur, err := ParseKeyFile(strings.NewReader("1,old-key-abcdef\n2,second\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file, want string
		incomplete bool
	}{
		{"1,old-k", "no line end", true},
		{"1,old-key-abcdef\n2,sec", "no line end", true},
		{"1,old-key-abcdef # comm", "no line end", true},
		{"1,old-k\n2,second\n", "the key of ID 1 is the first 5 of the 14 characters", true},
		{"1,old-key-abcdef\n2\n", "line 2", false},
		{"", "no key entries", false},
		{"1,old-key-abcdef\n1,again\n", "duplicate key ID 1", false},
		{"1,old-key-abcdef\n2," + strings.Repeat("k", MaxKeyLen+1) + "\n", "longer than 64", false},
	} {
		os.WriteFile(path, []byte(c.file), 0o600)
		_, err := ReloadKeyFile(path, cur)
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrKeyFileIncomplete) != c.incomplete {
			t.Errorf("%q: %v, want %q (incomplete %v)", c.file, err, c.want, c.incomplete)
		}
	}
	for _, file := range []string{"1,old-key-abcdef\n2,second\n", "# rotated\n1,brand-new\n3,third\n", "1,old-key-abcdef-longer\n", "2,xyz\n"} {
		os.WriteFile(path, []byte(file), 0o600)
		if f, err := ReloadKeyFile(path, cur); err != nil || f.Len() == 0 {
			t.Errorf("%q: %v", file, err)
		}
	}
	golden, err := os.ReadFile(goldenPath(t, "ds_keyfile_srv_client_a_y1", "golden.keys"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, golden, 0o600)
	if _, err := ReloadKeyFile(path, cur); err != nil {
		t.Errorf("the golden key file: %v", err)
	}
	os.WriteFile(path, []byte("1,no-line-end"), 0o600)
	if f, err := LoadKeyFile(path); err != nil || f.Len() != 1 {
		t.Errorf("start-up read of a file without a final line end: %v", err)
	}
}

// TestKeyReloadsLogOncePerEpisode: failed reloads keep the keys and write
// one line until a reload succeeds, which counts them; the next failure
// starts a new episode with its own line.
func TestKeyReloadsLogOncePerEpisode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	var log bytes.Buffer
	r := &KeyReloads{Path: path, Option: "--key-file/-K", Log: slog.New(slog.NewTextHandler(&log, nil))}
	f, _ := ParseKeyFile(strings.NewReader("1,old-key-abcdef\n"))
	cur := &ServerKeys{File: f}
	for _, half := range []string{"1,old", "1,old-key\n", "1,old-key-abcdef\n2", "1,x\n1,y\n"} {
		os.WriteFile(path, []byte(half), 0o600)
		if k := r.Reload(cur, func(*ServerKeys) { t.Fatalf("%q was put in use", half) }); k != nil {
			t.Fatalf("%q was put in use", half)
		}
	}
	if n := strings.Count(log.String(), "key file not reloaded"); n != 1 || !strings.Contains(log.String(), "no line end") {
		t.Errorf("%d failure lines, want 1 with the first reason:\n%s", n, log.String())
	}
	os.WriteFile(path, []byte("1,old-key-abcdef\n2,new-key\n"), 0o600)
	var used *ServerKeys
	k := r.Reload(cur, func(k *ServerKeys) {
		used = k
		if strings.Contains(log.String(), "key file reloaded") {
			t.Error("the reload was logged before its keys were in use")
		}
	})
	if k == nil || used != k || k.File.Len() != 2 || !strings.Contains(log.String(), "failed_reloads_before=4") {
		t.Errorf("the good file: %v\n%s", k, log.String())
	}
	os.WriteFile(path, []byte("1,o"), 0o600)
	r.Reload(k, func(*ServerKeys) { t.Error("a broken file was put in use") })
	if n := strings.Count(log.String(), "key file not reloaded"); n != 2 {
		t.Errorf("%d failure lines after a new episode, want 2", n)
	}
}
