package e2e

// The drop-in udpst (udpst.go): our binary through a symlink named udpst
// takes OB-UDPST's command line and gives its exit statuses and JSON keys.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dropInName is the name that makes our binary the drop-in udpst
// (cmd/udpstp/udpst.go).
const dropInName = "udpst"

// udpstLink returns a symlink named udpst to our binary, in a temp dir.
func udpstLink(t *testing.T) string {
	t.Helper()
	l := filepath.Join(t.TempDir(), dropInName)
	if err := os.Symlink(udpstpBin, l); err != nil {
		t.Fatal(err)
	}
	return l
}

// runStatus runs bin with args and returns its exit status and output.
func runStatus(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	out, code, err := runClientProc(bin, args...)
	if err != nil {
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	return code, string(out)
}

// TestUdpstExitStatus: command lines that never reach a server exit with
// OB-UDPST's status through the udpst link.
func TestUdpstExitStatus(t *testing.T) {
	ob := udpstBin(t)
	processTest(t)
	ours := udpstLink(t)
	for _, args := range []string{
		"-W", "-d -W 127.0.0.1", "-d", "-u", "-?", "-h", "-t", "-d -t", "--output x -d 127.0.0.1",
		"-u -d 127.0.0.1", "-d -t 3 127.0.0.1", "-d -f xml 127.0.0.1", "-x -d 127.0.0.1",
		"-f json 127.0.0.1", "-D -d 127.0.0.1", "-d -C 30 127.0.0.1", "-d -m 0x100 127.0.0.1",
		"a b", "-d -K /nonexistent/udpst.keys 127.0.0.1", "-S", "-S -T -j",
	} {
		a := strings.Fields(args)
		want, wantOut := runStatus(t, ob, a...)
		got, gotOut := runStatus(t, ours, a...)
		if got != want {
			t.Errorf("udpst %s: exit %d, OB-UDPST's %d\nours: %s\nOB-UDPST: %s", args, got, want, firstLine(gotOut), firstLine(wantOut))
		}
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// TestUdpstJSONKeys: `udpst -d|-u -t 5 -f json HOST` through our link and
// OB-UDPST's binary, against our server and OB-UDPST's: the same exit
// status and the same JSON keys in the same order, top level and nested,
// with nothing set aside: the drop-in is always strict (it has no
// --extensions).
func TestUdpstJSONKeys(t *testing.T) {
	ob := udpstBin(t)
	e2e(t)
	ours := udpstLink(t)
	const host = "127.0.0.1"
	for _, srv := range []struct {
		name string
		bin  string
	}{{"udpstp server", udpstpBin}, {"udpst server", ob}} {
		for _, dir := range []string{"-d", "-u"} {
			t.Run(srv.name+"/"+dir, func(t *testing.T) {
				port := fmt.Sprint(freePort(t, host))
				sargs := []string{"-p", port, host}
				if srv.bin == udpstpBin {
					sargs = append([]string{"server"}, sargs...)
				}
				spawnServer(t, srv.bin, sargs...)
				args := []string{dir, "-t", "5", "-f", "json", "-p", port, host}
				wantCode, wantOut := runStatus(t, ob, args...)
				gotCode, gotOut := runStatus(t, ours, args...)
				if gotCode != wantCode {
					t.Errorf("exit %d, OB-UDPST's %d", gotCode, wantCode)
				}
				want, err := keyShape(wantOut)
				if err != nil {
					t.Fatalf("OB-UDPST's output: %v\n%s", err, wantOut)
				}
				got, err := keyShape(gotOut)
				if err != nil {
					t.Fatalf("our output: %v\n%s", err, gotOut)
				}
				if got != want {
					t.Errorf("JSON keys differ\nours:     %s\nOB-UDPST: %s", got, want)
				}
			})
		}
	}
}

// TestUdpstServerRole: `udpst -p PORT HOST` through our link (no
// direction) is a server, and OB-UDPST's client completes a test against
// it.
func TestUdpstServerRole(t *testing.T) {
	ob := udpstBin(t)
	e2e(t)
	const host = "127.0.0.1"
	port := freePort(t, host)
	p := startServerProc(t, exec.Command(udpstLink(t), "-p", fmt.Sprint(port), host), true)
	p.stopAtCleanup(t, dropInName)
	r, code, out := runTestProc(t, ob, "-d", "-t", "5", "-p", fmt.Sprint(port), host)
	checkComplete(t, r, code, out, 5)
}

// keyShape is the key structure of one JSON document: every object's
// keys in order, nested objects and arrays inside; an array shows each
// distinct element shape once, in order of appearance, so its length
// does not count.
func keyShape(doc string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(doc))
	var b strings.Builder
	if err := shapeValue(dec, &b); err != nil {
		return "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("more than one JSON value")
	}
	return b.String(), nil
}

// shapeValue writes the shape of the next value in dec to b.
func shapeValue(dec *json.Decoder, b *strings.Builder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		b.WriteByte('{')
		first := true
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			var sub strings.Builder
			if err := shapeValue(dec, &sub); err != nil {
				return err
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			fmt.Fprintf(b, "%s%s", k, sub.String())
		}
		_, err = dec.Token() // '}'
		b.WriteByte('}')
		return err
	case json.Delim('['):
		var seen []string
		for dec.More() {
			var sub strings.Builder
			if err := shapeValue(dec, &sub); err != nil {
				return err
			}
			if !slices.Contains(seen, sub.String()) {
				seen = append(seen, sub.String())
			}
		}
		_, err = dec.Token() // ']'
		b.WriteString("[" + strings.Join(seen, "|") + "]")
		return err
	}
	return nil // a scalar: only keys are compared
}

// TestKeyShape: the comparison sees a key renamed, moved, dropped or
// added at any depth, also our "udpstp" key.
func TestKeyShape(t *testing.T) {
	base := `{"A":1,"B":{"C":[{"D":1},{"D":2}]}}`
	ref, err := keyShape(base)
	if err != nil {
		t.Fatal(err)
	}
	if ref != `{A,B{C[{D}]}}` {
		t.Fatalf("shape %s", ref)
	}
	for _, other := range []string{
		`{"B":{"C":[{"D":1}]},"A":1}`,
		`{"A":1,"B":{"C":[{"D":1},{"E":2}]}}`,
		`{"A":1,"B":{"C":[]}}`,
		`{"A":1,"B":{"C":[{"D":1}]},"X":{}}`,
		`{"A":1,"B":{"C":[{"D":1}]},"udpstp":{}}`,
	} {
		s, err := keyShape(other)
		if err != nil {
			t.Fatal(err)
		}
		if s == ref {
			t.Errorf("%s has the same shape as %s", other, base)
		}
	}
}
