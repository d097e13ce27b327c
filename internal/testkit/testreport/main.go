// Command testreport reads the JSON event stream of `go test -json` and
// says what the run proved and what it skipped.
//
// As a filter (`go test -json ./... | testreport -save run.json`) it
// prints what a plain `go test` prints: each package's result line, and
// the whole output of every test that failed; it saves the stream for a
// later summary, and exits 1 if a test or a build failed or a skip broke
// the rules below.
//
// With -summary (`testreport -summary unit.json race.json ...`) it reads
// saved streams and prints, for each, the number of skipped tests per
// package with each skipped test's name and reason, then the closing line `tests: N passed, N failed, N skipped`.
//
// The rules, checked in both modes:
//   - No golden or contract test may skip: a golden test compares with the
//     OB-UDPST reference data, which is in the repository, and a contract
//     test is the executor contract, which every executor must keep. They
//     are known by name: a test (or subtest) whose name contains
//     "Golden" (any case), or whose top-level name starts with
//     "TestContract".
//   - Every skip says why: a skipped test that printed nothing but its
//     own RUN and SKIP lines is reported as silent.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent, and
// the build events that `go test -json` adds).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	FailedBuild string
	ImportPath  string // build-output, build-fail
}

func main() {
	save := flag.String("save", "", "filter mode: also write the stream to this file")
	summary := flag.Bool("summary", false, "read the saved streams named as arguments and summarise them")
	flag.Parse()
	if *summary {
		os.Exit(runSummary(os.Stdout, flag.Args()))
	}
	os.Exit(runFilter(os.Stdin, os.Stdout, *save))
}

// runFilter is the filter mode; it returns the exit status.
func runFilter(in io.Reader, out io.Writer, save string) int {
	var sink io.Writer = io.Discard
	if save != "" {
		if err := os.MkdirAll(filepath.Dir(save), 0o755); err != nil {
			fmt.Fprintln(out, "testreport:", err)
			return 2
		}
		f, err := os.Create(save)
		if err != nil {
			fmt.Fprintln(out, "testreport:", err)
			return 2
		}
		defer f.Close()
		sink = f
	}
	r := newRun()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		fmt.Fprintf(sink, "%s\n", line)
		r.add(line, out)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "testreport: reading the stream:", err)
		return 2
	}
	r.printSkips(out, "", false)
	bad := r.printViolations(out)
	fmt.Fprintln(out, r.closing())
	if r.failed > 0 || r.failedPkgs > 0 || bad {
		return 1
	}
	return 0
}

// runSummary is the summary mode; it returns the exit status.
func runSummary(out io.Writer, files []string) int {
	if len(files) == 0 {
		fmt.Fprintln(out, "testreport -summary: name the saved streams")
		return 2
	}
	total := newRun()
	bad := false
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(out, "testreport:", err)
			return 2
		}
		r := newRun()
		for _, line := range strings.Split(string(b), "\n") {
			r.add([]byte(line), io.Discard)
		}
		label := strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
		r.printSkips(out, label, true)
		if r.printViolations(out) || r.failed > 0 || r.failedPkgs > 0 {
			bad = true
		}
		total.merge(r)
	}
	fmt.Fprintln(out, total.closing())
	if bad {
		return 1
	}
	return 0
}

// run is what one stream showed.
type run struct {
	output     map[string][]string // package + "\x00" + test: its output so far
	skipped    map[string][]string // package: its skipped tests
	reasons    map[string]string   // package + "\x00" + test: why it skipped
	passed     int
	failed     int
	failedPkgs int
}

func newRun() *run {
	return &run{output: map[string][]string{}, skipped: map[string][]string{}, reasons: map[string]string{}}
}

func key(pkg, test string) string { return pkg + "\x00" + test }

// add takes one line of the stream, printing to out what a plain go test
// would.
func (r *run) add(line []byte, out io.Writer) {
	if len(strings.TrimSpace(string(line))) == 0 {
		return
	}
	var e event
	if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
		fmt.Fprintf(out, "%s\n", line) // not an event: pass it on
		return
	}
	k := key(e.Package, e.Test)
	switch e.Action {
	case "build-output":
		fmt.Fprint(out, e.Output)
	case "output":
		if e.Test == "" {
			if e.Output != "PASS\n" && e.Output != "FAIL\n" {
				fmt.Fprint(out, e.Output) // a package's result line, a panic outside a test
			}
			return
		}
		r.output[k] = append(r.output[k], e.Output)
	case "pass":
		if e.Test != "" {
			r.passed++
		}
		delete(r.output, k)
	case "fail":
		if e.Test == "" {
			r.failedPkgs++
			r.flushUnfinished(e.Package, out)
			return
		}
		r.failed++
		for _, l := range r.output[k] {
			if !strings.HasPrefix(l, "=== ") {
				fmt.Fprint(out, l)
			}
		}
		delete(r.output, k)
	case "skip":
		if e.Test == "" {
			return // a package without tests
		}
		r.skipped[e.Package] = append(r.skipped[e.Package], e.Test)
		r.reasons[k] = skipReason(r.output[k])
		delete(r.output, k)
	}
}

// flushUnfinished prints the output of pkg's tests that never ended: a
// test binary that panicked or timed out (the panic and its goroutines are
// in the output of whichever test was running) ends its package with a
// failure and no end for them.
func (r *run) flushUnfinished(pkg string, out io.Writer) {
	var keys []string
	for k := range r.output {
		if strings.HasPrefix(k, pkg+"\x00") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, l := range r.output[k] {
			if !strings.HasPrefix(l, "=== ") {
				fmt.Fprint(out, l)
			}
		}
		delete(r.output, k)
	}
}

// skipReason is what a skipped test printed besides its RUN and SKIP
// lines, or "" if nothing.
func skipReason(lines []string) string {
	var keep []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		keep = append(keep, t)
	}
	return strings.Join(keep, " ")
}

func (r *run) merge(o *run) {
	r.passed += o.passed
	r.failed += o.failed
	r.failedPkgs += o.failedPkgs
	for p, ts := range o.skipped {
		r.skipped[p] = append(r.skipped[p], ts...)
	}
	for k, why := range o.reasons {
		r.reasons[k] = why
	}
}

func (r *run) skipCount() int {
	n := 0
	for _, ts := range r.skipped {
		n += len(ts)
	}
	return n
}

// printSkips prints the skipped tests per package: their count, and with
// detail each test's name and reason (a test run's own end keeps to the
// counts; make skipreport, read once at the end, names them).
func (r *run) printSkips(out io.Writer, label string, detail bool) {
	title := "skipped tests per package"
	if label != "" {
		title += " (" + label + ")"
	}
	if len(r.skipped) == 0 {
		fmt.Fprintf(out, "%s: none\n", title)
		return
	}
	fmt.Fprintf(out, "%s:\n", title)
	var pkgs []string
	for p := range r.skipped {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		fmt.Fprintf(out, "  %4d  %s\n", len(r.skipped[p]), p)
		if !detail {
			continue
		}
		tests := slices.Clone(r.skipped[p])
		sort.Strings(tests)
		for _, t := range tests {
			fmt.Fprintf(out, "          %s: %s\n", t, shorten(orNothing(r.reasons[key(p, t)]), maxReason))
		}
	}
}

// maxReason bounds a reason in the list: a skip that printed a log
// before its reason still takes one line.
const maxReason = 200

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// mustNotSkip reports whether test (a full name, subtests after slashes)
// is a golden or a contract test.
func mustNotSkip(test string) bool {
	top, _, _ := strings.Cut(test, "/")
	return strings.Contains(strings.ToLower(test), "golden") || strings.HasPrefix(top, "TestContract")
}

// printViolations prints every skip that breaks a rule and reports whether
// there was one.
func (r *run) printViolations(out io.Writer) bool {
	var lines []string
	for p, ts := range r.skipped {
		for _, t := range ts {
			why := r.reasons[key(p, t)]
			switch {
			case mustNotSkip(t):
				lines = append(lines, fmt.Sprintf("  %s %s: a golden or contract test skipped (%s)", p, t, orNothing(why)))
			case why == "":
				lines = append(lines, fmt.Sprintf("  %s %s: skipped without saying why", p, t))
			}
		}
	}
	if len(lines) == 0 {
		return false
	}
	sort.Strings(lines)
	fmt.Fprintln(out, "FAIL: skips that hide coverage (tests named *Golden* or TestContract* must run; every skip must say why):")
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
	return true
}

func orNothing(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

// closing is the run's last line, in the form CI reads.
func (r *run) closing() string {
	return fmt.Sprintf("tests: %d passed, %d failed, %d skipped", r.passed, r.failed, r.skipCount())
}
