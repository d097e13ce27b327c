//go:build !small

package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyFixture puts a plot fixture into a temporary directory.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "report", "plot", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlotCommand(t *testing.T) {
	in := copyFixture(t, "udpstp_us_c2_t5.json")
	dir := filepath.Dir(in)

	// Default output: the input's name with .svg.
	if r := run(t, "plot", in); r.code != 0 {
		t.Fatalf("plot: exit %d %q", r.code, r.msg)
	}
	svg, err := os.ReadFile(strings.TrimSuffix(in, ".json") + ".svg")
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Fatalf("default output: %v, %.80q", err, svg)
	}

	// -o after the file (getopt order), PNG by extension.
	out := filepath.Join(dir, "x.png")
	if r := run(t, "plot", in, "-o", out); r.code != 0 {
		t.Fatalf("plot -o png: exit %d %q", r.code, r.msg)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("plot -o x.png wrote no PNG: %v", err)
	}

	// -o - is SVG on standard output.
	if r := run(t, "plot", "--output", "-", in); r.code != 0 || !strings.HasPrefix(r.out, "<?xml") || !strings.Contains(r.out, "</svg>") {
		t.Errorf("plot -o -: exit %d %q, output %.60q", r.code, r.msg, r.out)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"not":"a result"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	mustFail(t, exitConfig, []string{"plot"}, "a result file is needed")
	mustFail(t, exitConfig, []string{"plot", in, in}, "one result file")
	mustFail(t, exitConfig, []string{"plot", in, "-o", filepath.Join(dir, "x.pdf")}, ".svg or .png")
	mustFail(t, exitConfig, []string{"plot", in, "-o"}, "--output/-o needs a value")
	mustFail(t, exitConfig, []string{"plot", "--colour", in}, "colour")
	mustFail(t, exitInit, []string{"plot", filepath.Join(dir, "absent.json")}, "absent.json")
	mustFail(t, exitFailure, []string{"plot", bad}, "bad.json", "no ErrorStatus")
	if _, err := os.Stat(filepath.Join(dir, "bad.svg")); !os.IsNotExist(err) {
		t.Errorf("a failed plot left a file: %v", err)
	}
	// An unwritable destination is an initialization error, and the
	// input is untouched.
	mustFail(t, exitInit, []string{"plot", in, "-o", filepath.Join(dir, "no", "such", "dir.svg")}, "dir.svg")
}

// The results of --bidirectional and --repeat are drawn too: both
// directions in one figure, the runs side by side.
func TestPlotBidirectionalAndRepeat(t *testing.T) {
	for name, want := range map[string]string{
		"udpstp_bidir_t5.json":         ">Bidirectional test to 127.0.0.1: ",
		"udpstp_repeat3_ds_c2_t5.json": ">3 downstream tests to 127.0.0.1; ",
		"udpstp_repeat2_bidir_t5.json": ">2 bidirectional tests to 127.0.0.1; ",
	} {
		in := copyFixture(t, name)
		r := run(t, "plot", in, "-o", "-")
		if r.code != 0 || !strings.Contains(r.out, want) {
			t.Errorf("plot %s: exit %d %q, heading %q not drawn", name, r.code, r.msg, want)
		}
	}
}
