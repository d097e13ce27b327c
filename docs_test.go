// Package udpstp holds no code: only the test that keeps
// docs/architecture.md's list of packages true to the module.
package udpstp

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// docPackage is a line of the packages block: a package of the module
// (relative to its root, "." for the root) and, when the line draws them,
// its imports from the module.
type docPackage struct {
	path    string
	imports []string // nil: not drawn
	line    int
}

// readPackagesBlock returns the lines of the fenced block "```packages"
// of docs/architecture.md.
func readPackagesBlock(t *testing.T) []docPackage {
	t.Helper()
	f, err := os.Open("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docPackage
	in, found := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case !in && line == "```packages":
			in, found = true, true
		case in && line == "```":
			in = false
		case in && line != "":
			p := docPackage{line: n}
			name, arrows, drawn := strings.Cut(line, "->")
			p.path = strings.TrimSpace(name)
			if drawn {
				p.imports = strings.Fields(arrows)
				if p.imports == nil {
					p.imports = []string{}
				}
			}
			out = append(out, p)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !found || in {
		t.Fatal("docs/architecture.md has no closed ```packages block")
	}
	return out
}

// goListImports returns every package of the module (relative to its
// root) with its imports from the module, as `go list` gives them for
// Linux: non-test files only.
func goListImports(t *testing.T) map[string][]string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go list needs the go command on PATH: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	mod, err := exec.Command(goBin, "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module := strings.TrimSpace(string(mod))
	rel := func(p string) (string, bool) {
		if p == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		p, _ := rel(f[0])
		imps := []string{}
		for _, i := range f[1:] {
			if r, ok := rel(i); ok {
				imps = append(imps, r)
			}
		}
		slices.Sort(imps)
		pkgs[p] = imps
	}
	return pkgs
}

// TestArchitecturePackages holds docs/architecture.md's list of packages
// to the module: every package is listed once, every line names a
// package, and where a line draws imports they are exactly the package's.
func TestArchitecturePackages(t *testing.T) {
	doc := readPackagesBlock(t)
	real := goListImports(t)
	seen := map[string]int{}
	for _, p := range doc {
		if l, dup := seen[p.path]; dup {
			t.Errorf("docs/architecture.md:%d: %s is listed again (first on line %d)", p.line, p.path, l)
			continue
		}
		seen[p.path] = p.line
		imps, ok := real[p.path]
		if !ok {
			t.Errorf("docs/architecture.md:%d: %s is no package of the module", p.line, p.path)
			continue
		}
		if p.imports == nil {
			continue
		}
		drawn := slices.Clone(p.imports)
		slices.Sort(drawn)
		if !slices.Equal(drawn, imps) {
			t.Errorf("docs/architecture.md:%d: %s -> %s; go list: %s -> %s",
				p.line, p.path, strings.Join(p.imports, " "), p.path, strings.Join(imps, " "))
		}
	}
	var missing []string
	for p := range real {
		if _, ok := seen[p]; !ok {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	for _, p := range missing {
		t.Errorf("docs/architecture.md's packages block lacks %s -> %s", p, strings.Join(real[p], " "))
	}
}
