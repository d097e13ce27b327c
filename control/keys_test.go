package control

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func manyEntries(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%d,key%d\n", i%256, i)
	}
	return b.String()
}

func TestParseKeyFile(t *testing.T) {
	long64 := strings.Repeat("k", 64)
	for _, tc := range []struct {
		name string
		in   string
		want map[uint8]string // nil: an error is expected
		err  string           // substring of the error
	}{
		{"simple", "1,abc\n", map[uint8]string{1: "abc"}, ""},
		{"no final newline", "1,abc\n2,def", map[uint8]string{1: "abc", 2: "def"}, ""},
		{"space separator", "3 key3\n", map[uint8]string{3: "key3"}, ""},
		{"tab separator", "3\tkey3\n", map[uint8]string{3: "key3"}, ""},
		{"mixed runs of separators", "  4 ,\t, key4 \t\n", map[uint8]string{4: "key4"}, ""},
		{"CRLF", "5,k5\r\n6,k6\r\n", map[uint8]string{5: "k5", 6: "k6"}, ""},
		{"comments and blanks", "# header\n\n   \t\n  # indented\n7,k7 # trailing\n8,k8#tight\n",
			map[uint8]string{7: "k7", 8: "k8"}, ""},
		{"hash ends the key", "9,ab#cd\n", map[uint8]string{9: "ab"}, ""},
		{"extra tokens ignored", "10,key extra tokens\n", map[uint8]string{10: "key"}, ""},
		{"hex id", "0x1f,a\n0XFF,b\n0xA,c\n", map[uint8]string{31: "a", 255: "b", 10: "c"}, ""},
		{"octal id", "017,a\n0377,b\n00,c\n", map[uint8]string{15: "a", 255: "b", 0: "c"}, ""},
		{"decimal bounds", "0,a\n255,b\n", map[uint8]string{0: "a", 255: "b"}, ""},
		{"plus sign", "+12,a\n", map[uint8]string{12: "a"}, ""},
		{"64-char key", "1," + long64 + "\n", map[uint8]string{1: long64}, ""},
		{"256 entries", manyEntries(256), nil, ""},
		{"golden.keys", goldenKeysText, map[uint8]string{0: "legacykey-golden", 1: "firstkey-golden",
			2: "secondkey-golden", 7: "seventhkey-golden", 255: "maxid-key-golden"}, ""},

		{"empty file", "", nil, "no key entries"},
		{"comments only", "# nothing\n\n", nil, "no key entries"},
		{"one token", "0,a\n1\n", nil, "line 2: only one token \"1\""},
		{"one token before comment", "1 # key,in,comment\n", nil, "line 1: only one token \"1\""},
		{"key only after empty id", ",key\n", nil, "line 1: only one token \"key\""},
		{"bad id", "x1,a\n", nil, "line 1: invalid key ID \"x1\""},
		{"id with junk", "1a,a\n", nil, "line 1: invalid key ID \"1a\""},
		{"bad octal", "08,a\n", nil, "line 1: invalid key ID \"08\""},
		{"bare 0x", "0x,a\n", nil, "line 1: invalid key ID \"0x\""},
		{"id 256", "256,a\n", nil, "line 1: key ID 256 out of range 0..255"},
		{"hex id 0x100", "0x100,a\n", nil, "line 1: key ID 0x100 out of range"},
		{"negative id", "-1,a\n", nil, "line 1: key ID -1 out of range"},
		{"huge id", "99999999999999999999999,a\n", nil, "out of range"},
		{"duplicate id", "1,a\n# c\n1,b\n", nil, "line 3: duplicate key ID 1"},
		{"duplicate via octal", "8,a\n010,b\n", nil, "line 2: duplicate key ID 8"},
		{"duplicate via hex", "16,a\n0x10,b\n", nil, "line 2: duplicate key ID 16"},
		{"65-char key", "1," + long64 + "x\n", nil, "line 1: key for ID 1 longer than 64 characters"},
		{"257 entries", manyEntries(257), nil, "line 257: more than 256 key entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseKeyFile(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil {
					t.Fatalf("no error, %d entries", f.Len())
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %q, want it to contain %q", err, tc.err)
				}
				if strings.ContainsAny(err.Error(), "\r\n") {
					t.Errorf("error spans lines: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil { // only count
				if f.Len() != 256 {
					t.Errorf("%d entries", f.Len())
				}
				return
			}
			if f.Len() != len(tc.want) {
				t.Errorf("%d entries, want %d", f.Len(), len(tc.want))
			}
			for id, key := range tc.want {
				got, ok := f.Key(id)
				if !ok || string(got) != key {
					t.Errorf("id %d: %q %v, want %q", id, got, ok, key)
				}
			}
		})
	}
}

// goldenKeysText is ds_keyfile_srv_client_a_y1/golden.keys as cmd.txt
// shows it; TestLoadKeyFileGolden checks the copy on disk agrees.
const goldenKeysText = `#-------------------------------------------------------
# Golden-test key file for udpst (CSV: <KeyID>,<Key> [#comment])
#-------------------------------------------------------
0,legacykey-golden        # key id 0
1,firstkey-golden         # key id 1
2,secondkey-golden        # key id 2 (used by us_keyfile_keyid2 client via -K -y 2)
7,seventhkey-golden       # key id 7
255,maxid-key-golden      # key id 255
`

func TestKeyFileIDs(t *testing.T) {
	f := mustKeyFile(t, "7,a\n0x2,b\n0,c\n")
	if got := f.IDs(); !slices.Equal(got, []uint8{7, 2, 0}) {
		t.Errorf("IDs %v", got)
	}
	f.IDs()[0] = 99 // a copy
	if _, ok := f.Key(7); !ok {
		t.Error("IDs exposed internal state")
	}
	if _, ok := f.Key(1); ok {
		t.Error("absent id found")
	}
	var nilFile *KeyFile
	if nilFile.Len() != 0 || nilFile.IDs() != nil {
		t.Error("nil KeyFile not empty")
	}
	if _, ok := nilFile.Key(0); ok {
		t.Error("nil KeyFile has a key")
	}
}

func TestLoadKeyFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.keys")
	if err := os.WriteFile(bad, []byte("1,a\n2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadKeyFile(bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad file: %v", err)
	}
	missing := filepath.Join(dir, "missing.keys")
	if _, err := LoadKeyFile(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
}

func TestLoadKeyFileGolden(t *testing.T) {
	path := goldenPath(t, "ds_keyfile_srv_client_a_y1", "golden.keys")
	onDisk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, []byte(goldenKeysText)) {
		t.Errorf("%s differs from the copy in this test", path)
	}
	f, err := LoadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.IDs(); !slices.Equal(got, []uint8{0, 1, 2, 7, 255}) {
		t.Errorf("IDs %v", got)
	}
}

func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		key string
		ok  bool
	}{{"", false}, {"a", true}, {strings.Repeat("x", 64), true}, {strings.Repeat("x", 65), false}} {
		if err := ValidateKey(tc.key); (err == nil) != tc.ok {
			t.Errorf("len %d: %v", len(tc.key), err)
		}
	}
}

func TestClientKey(t *testing.T) {
	one := mustKeyFile(t, "9,only\n")
	multi := mustKeyFile(t, "0,zero\n5,five\n")
	noZero := mustKeyFile(t, "3,three\n4,four\n")
	for _, tc := range []struct {
		name    string
		single  string
		file    *KeyFile
		id      int
		given   bool
		wantKey string
		wantID  uint8
		err     string
	}{
		{"nothing", "", nil, 0, false, "", 0, ""},
		{"-a", "secret", nil, 0, false, "secret", 0, ""},
		{"-a -y 5", "secret", nil, 5, true, "secret", 5, ""},
		{"-a -y 255", "secret", nil, 255, true, "secret", 255, ""},
		{"-a -y 256", "secret", nil, 256, true, "", 0, "out of range"},
		{"-a -y -1", "secret", nil, -1, true, "", 0, "out of range"},
		{"-a too long", strings.Repeat("s", 65), nil, 0, false, "", 0, "exceeds 64"},
		{"-a and -K", "secret", multi, 0, false, "", 0, "mutually exclusive"},
		{"-K single entry, no -y", "", one, 0, false, "only", 9, ""},
		{"-K single entry, -y matches", "", one, 9, true, "only", 9, ""},
		{"-K single entry, -y 0 given", "", one, 0, true, "", 0, "Authentication key ID (0) not found in key file"},
		{"-K multi, default id 0", "", multi, 0, false, "zero", 0, ""},
		{"-K multi, -y 5", "", multi, 5, true, "five", 5, ""},
		{"-K multi, -y 6", "", multi, 6, true, "", 0, "Authentication key ID (6) not found in key file"},
		{"-K without id 0, no -y", "", noZero, 0, false, "", 0, "Authentication key ID (0) not found in key file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, id, err := ClientKey(tc.single, tc.file, tc.id, tc.given)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(key) != tc.wantKey || id != tc.wantID || (tc.wantKey == "") != (key == nil) {
				t.Errorf("got %q id %d, want %q id %d", key, id, tc.wantKey, tc.wantID)
			}
		})
	}
}

func TestServerKeys(t *testing.T) {
	if _, err := NewServerKeys(strings.Repeat("x", 65), nil); err == nil {
		t.Error("over-long -a key accepted")
	}
	for _, tc := range []struct {
		single string
		file   *KeyFile
		want   bool
	}{
		{"", nil, false},
		{"k", nil, true},
		{"", mustKeyFile(t, "1,k"), true},
		{"k", mustKeyFile(t, "1,k"), true},
	} {
		k, err := NewServerKeys(tc.single, tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if k.Configured() != tc.want {
			t.Errorf("%q %v: Configured %v", tc.single, tc.file != nil, !tc.want)
		}
	}
}
