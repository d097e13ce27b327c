// Package golden reads the OB-UDPST 9.0.0 reference captures and outputs that
// the golden tests compare udpstp against. The data is part of the
// repository (testdata/obudpst at the module root; UDPSTP_GOLDEN_DIR points
// elsewhere), so every clone runs the golden tests: a missing directory or
// file fails the test, it never skips.
package golden

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// EnvDir overrides where the reference data is looked for.
const EnvDir = "UDPSTP_GOLDEN_DIR"

// Dir returns the reference data directory and whether it exists.
func Dir() (string, bool) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, isDir(d)
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", false
	}
	d := filepath.Join(root, "testdata", "obudpst")
	return d, isDir(d)
}

// Require returns the data directory; without it the test fails: the data
// is in the repository, so its absence is a broken checkout, not a machine
// that cannot run the test.
func Require(t testing.TB) string {
	t.Helper()
	d, ok := Dir()
	if !ok {
		t.Fatalf("OB-UDPST reference data not found at %q (it belongs in the repository; %s overrides it)", d, EnvDir)
	}
	return d
}

// File returns the path of a file in the reference data; a missing file
// fails the test.
func File(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Require(t), name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("OB-UDPST reference file: %v", err)
	}
	return p
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// ModuleRoot is the directory of go.mod above the working directory (a
// test runs in its package's directory).
func ModuleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		d = parent
	}
}

// PDU is one captured UDP datagram (one line of pdus.jsonl).
type PDU struct {
	T         float64 `json:"t"`
	Dir       string  `json:"dir"` // "c2s" or "s2c"
	SrcPort   int     `json:"src_port"`
	DstPort   int     `json:"dst_port"`
	Len       int     `json:"len"`
	ID        string  `json:"pdu_id"`
	Hex       string  `json:"hex"`
	Truncated bool    `json:"truncated"` // Load PDUs: Bytes holds the first 64 bytes only
	LoadIndex int     `json:"load_index"`
	TOS       int     `json:"tos"`
	AF        int     `json:"af"`
	Bytes     []byte  `json:"-"`
}

// Scenario is one folder of reference data.
type Scenario struct {
	Name string
	Path string
	Meta Meta
}

// Meta is a scenario's meta.json.
type Meta struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Runs        []Run  `json:"runs"`
}

// Run is one of a scenario's runs ("text" or "json").
type Run struct {
	Run              string     `json:"run"`
	ClientCmd        []string   `json:"client_cmd"`
	ClientExitStatus int        `json:"client_exit_status"`
	ServerCmds       [][]string `json:"server_cmds"`
}

// Scenarios lists every scenario folder that has a meta.json, sorted by name.
func Scenarios(t testing.TB) []Scenario {
	t.Helper()
	return readScenarios(t, Require(t), false)
}

// readScenarios reads dir's scenario folders, sorted by name. A folder
// without a meta.json is passed over, or fails the test when every folder
// must have one (strict).
func readScenarios(t testing.TB, dir string, strict bool) []Scenario {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("captures: %v", err)
	}
	var out []Scenario
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(filepath.Join(p, "meta.json"))
		if err != nil {
			if strict {
				t.Fatalf("%s: %v", e.Name(), err)
			}
			continue
		}
		s := Scenario{Name: e.Name(), Path: p}
		if err := json.Unmarshal(b, &s.Meta); err != nil {
			t.Fatalf("%s: meta.json: %v", e.Name(), err)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// CaptureFiles are the capture files a scenario may have, with the run each
// belongs to.
var CaptureFiles = map[string]string{"pdus.jsonl": "text", "pdus_jsonrun.jsonl": "json"}

// PDUs reads a capture file of the scenario; it returns nil if the file is
// absent.
func (s Scenario) PDUs(t testing.TB, file string) []PDU {
	t.Helper()
	f, err := os.Open(filepath.Join(s.Path, file))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []PDU
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var p PDU
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("%s/%s:%d: %v", s.Name, file, line, err)
		}
		if p.Bytes, err = hex.DecodeString(p.Hex); err != nil {
			t.Fatalf("%s/%s:%d: hex: %v", s.Name, file, line, err)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// RunNamed returns the run called name ("text" or "json").
func (s Scenario) RunNamed(name string) (Run, bool) {
	for _, r := range s.Meta.Runs {
		if r.Run == name {
			return r, true
		}
	}
	return Run{}, false
}

// Options is a udpst command line split into options and positional
// arguments. Flags without a value map to "".
type Options struct {
	Opts map[byte]string
	Args []string
}

// udpstValueOpts are the udpst options that take a value.
const udpstValueOpts = "CfOBimayKGItPpAbLUFchqElkZ"

// ParseUdpstArgs splits a udpst argv (argv[0] included) the way getopt does
// for the options the reference runs use. It reports false for a command
// that is not udpst (the crafted-PDU scenarios run a script).
func ParseUdpstArgs(argv []string) (Options, bool) {
	o := Options{Opts: map[byte]string{}}
	if len(argv) == 0 || filepath.Base(argv[0]) != "udpst" {
		return o, false
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if len(a) < 2 || a[0] != '-' {
			o.Args = append(o.Args, a)
			continue
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			if strings.IndexByte(udpstValueOpts, c) >= 0 {
				v := a[j+1:]
				if v == "" && i+1 < len(argv) {
					i++
					v = argv[i]
				}
				o.Opts[c] = v
				break
			}
			o.Opts[c] = ""
		}
	}
	return o, true
}

// Has reports whether option c was given.
func (o Options) Has(c byte) bool { _, ok := o.Opts[c]; return ok }

// ForEachCapture runs fn as a subtest for every capture file of every
// scenario, with the expectations of the run the file belongs to.
func ForEachCapture(t *testing.T, fn func(t *testing.T, s Scenario, e Expect, pdus []PDU)) {
	t.Helper()
	for _, sc := range Scenarios(t) {
		for _, file := range []string{"pdus.jsonl", "pdus_jsonrun.jsonl"} {
			pdus := sc.PDUs(t, file)
			if pdus == nil {
				continue
			}
			e, _ := sc.Expect(CaptureFiles[file])
			t.Run(sc.Name+"/"+file, func(t *testing.T) { fn(t, sc, e, pdus) })
		}
	}
}
