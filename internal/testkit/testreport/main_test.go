package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stream builds a go test -json stream from lines of "action pkg test
// output" (output may be empty; \n is added to it).
func stream(events ...[4]string) string {
	var b strings.Builder
	for _, e := range events {
		out := ""
		if e[3] != "" {
			out = `,"Output":` + quote(e[3]+"\n")
		}
		b.WriteString(`{"Action":"` + e[0] + `","Package":"` + e[1] + `","Test":"` + e[2] + `"` + out + "}\n")
	}
	return b.String()
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`"`, `\"`, "\n", `\n`, "\t", `\t`).Replace(s) + `"`
}

func TestFilterPassesAndFails(t *testing.T) {
	in := stream(
		[4]string{"start", "p/a", "", ""},
		[4]string{"run", "p/a", "TestOK", ""},
		[4]string{"output", "p/a", "TestOK", "=== RUN   TestOK"},
		[4]string{"output", "p/a", "TestOK", "    ok_test.go:3: chatter"},
		[4]string{"pass", "p/a", "TestOK", ""},
		[4]string{"run", "p/a", "TestBad", ""},
		[4]string{"output", "p/a", "TestBad", "=== RUN   TestBad"},
		[4]string{"output", "p/a", "TestBad", "    bad_test.go:9: wrong answer"},
		[4]string{"output", "p/a", "TestBad", "--- FAIL: TestBad (0.00s)"},
		[4]string{"fail", "p/a", "TestBad", ""},
		[4]string{"output", "p/a", "", "FAIL"},
		[4]string{"output", "p/a", "", "FAIL\tp/a\t0.01s"},
		[4]string{"fail", "p/a", "", ""},
	)
	var out strings.Builder
	save := filepath.Join(t.TempDir(), "run.json")
	code := runFilter(strings.NewReader(in), &out, save)
	got := out.String()
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"bad_test.go:9: wrong answer", "--- FAIL: TestBad", "FAIL\tp/a\t0.01s", "tests: 1 passed, 1 failed, 0 skipped"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "chatter") || strings.Contains(got, "=== RUN") {
		t.Errorf("a passing test's output or RUN lines printed:\n%s", got)
	}
	if b, err := os.ReadFile(save); err != nil || string(b) != in {
		t.Errorf("saved stream differs (%v)", err)
	}
}

func TestSkipRules(t *testing.T) {
	skip := func(pkg, test, why string) [][4]string {
		ev := [][4]string{{"run", pkg, test, ""}, {"output", pkg, test, "=== RUN   " + test}}
		if why != "" {
			ev = append(ev, [4]string{"output", pkg, test, "    x_test.go:1: " + why})
		}
		return append(ev, [4]string{"output", pkg, test, "--- SKIP: " + test + " (0.00s)"}, [4]string{"skip", pkg, test, ""})
	}
	cases := []struct {
		name string
		pkg  string
		test string
		why  string
		bad  string // "" when the skip is allowed
	}{
		{"a skip that says why", "p/a", "TestInterop", "UDPST_BIN is not set", ""},
		{"a silent skip", "p/a", "TestQuiet", "", "skipped without saying why"},
		{"a golden test", "p/b", "TestServerStatsGolden", "reference file missing", "a golden or contract test skipped"},
		{"a golden subtest", "p/b", "TestParseKeyFile/golden.keys", "x", "a golden or contract test skipped"},
		{"a contract subtest", "p/c", "TestContractPartialSends/pool-1", "loopback never refuses", "a golden or contract test skipped"},
		{"not a contract test", "p/c", "TestMyContractIsFine", "why not", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var evs [][4]string
			evs = append(evs, skip(c.pkg, c.test, c.why)...)
			evs = append(evs, [4]string{"output", c.pkg, "", "ok  \t" + c.pkg + "\t0.01s"}, [4]string{"pass", c.pkg, "", ""})
			var out strings.Builder
			code := runFilter(strings.NewReader(stream(evs...)), &out, "")
			got := out.String()
			if (code != 0) != (c.bad != "") || (c.bad != "" && !strings.Contains(got, c.bad)) {
				t.Errorf("exit %d, want a complaint %q:\n%s", code, c.bad, got)
			}
			if !strings.Contains(got, "1  "+c.pkg) || !strings.Contains(got, "tests: 0 passed, 0 failed, 1 skipped") {
				t.Errorf("skip count missing:\n%s", got)
			}
		})
	}
}

func TestBuildFailure(t *testing.T) {
	in := `{"ImportPath":"p/a [p/a.test]","Action":"build-output","Output":"a.go:3:1: syntax error\n"}
{"ImportPath":"p/a [p/a.test]","Action":"build-fail"}
{"Action":"start","Package":"p/a"}
{"Action":"output","Package":"p/a","Output":"FAIL\tp/a [build failed]\n"}
{"Action":"fail","Package":"p/a","FailedBuild":"p/a [p/a.test]"}
`
	var out strings.Builder
	if code := runFilter(strings.NewReader(in), &out, ""); code != 1 {
		t.Errorf("exit %d after a build failure", code)
	}
	if !strings.Contains(out.String(), "a.go:3:1: syntax error") {
		t.Errorf("build output not shown:\n%s", out.String())
	}
}

func TestSummary(t *testing.T) {
	dir := t.TempDir()
	unit := filepath.Join(dir, "unit.json")
	race := filepath.Join(dir, "race.json")
	os.WriteFile(unit, []byte(stream(
		[4]string{"pass", "p/a", "TestA", ""},
		[4]string{"output", "p/a", "TestS", "    s_test.go:1: needs root"},
		[4]string{"skip", "p/a", "TestS", ""},
	)), 0o644)
	os.WriteFile(race, []byte(stream(
		[4]string{"pass", "p/a", "TestA", ""},
		[4]string{"pass", "p/b", "TestB", ""},
	)), 0o644)
	var out strings.Builder
	if code := runSummary(&out, []string{unit, race}); code != 0 {
		t.Errorf("exit %d:\n%s", code, out.String())
	}
	got := out.String()
	for _, want := range []string{"skipped tests per package (unit):\n     1  p/a\n          TestS: s_test.go:1: needs root\n", "skipped tests per package (race): none", "tests: 3 passed, 0 failed, 1 skipped"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if !strings.HasSuffix(got, "tests: 3 passed, 0 failed, 1 skipped\n") {
		t.Errorf("the closing line is not last:\n%s", got)
	}
}

// TestTimeoutShown: a binary that times out ends its package with a
// failure and no end for the running tests; their output (the panic) is
// shown.
func TestTimeoutShown(t *testing.T) {
	in := stream(
		[4]string{"run", "p/a", "TestHang", ""},
		[4]string{"output", "p/a", "TestHang", "=== RUN   TestHang"},
		[4]string{"output", "p/a", "TestHang", "panic: test timed out after 10m0s"},
		[4]string{"output", "p/a", "", "FAIL\tp/a\t600.1s"},
		[4]string{"fail", "p/a", "", ""},
	)
	var out strings.Builder
	if code := runFilter(strings.NewReader(in), &out, ""); code != 1 {
		t.Errorf("exit %d after a timeout", code)
	}
	if !strings.Contains(out.String(), "panic: test timed out after 10m0s") {
		t.Errorf("the timeout's panic not shown:\n%s", out.String())
	}
}
