package udpstp

// This file holds docs/architecture.md's list of packages true to the module.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
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

// readLayersBlock returns the lines of the fenced block "```layers" of
// docs/architecture.md: "layer N  pkg pkg ...", the packages of layer N.
func readLayersBlock(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	layers := map[string]int{}
	in, found := false, false
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case !in && line == "```layers":
			in, found = true, true
		case in && line == "```":
			in = false
		case in && line != "":
			f := strings.Fields(line)
			if len(f) < 3 || f[0] != "layer" {
				t.Fatalf("docs/architecture.md:%d: %q: want \"layer N  package package ...\"", n+1, line)
			}
			layer, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("docs/architecture.md:%d: %q: want \"layer N  package package ...\"", n+1, line)
			}
			for _, p := range f[2:] {
				if l, dup := layers[p]; dup {
					t.Errorf("docs/architecture.md:%d: %s is drawn again (first in layer %d)", n+1, p, l)
				}
				layers[p] = layer
			}
		}
	}
	if !found || in {
		t.Fatal("docs/architecture.md has no closed ```layers block")
	}
	return layers
}

// lowestLayers gives each package the lowest layer it can stand in: 0
// without imports from the module, else one above its highest import.
func lowestLayers(imports map[string][]string) map[string]int {
	layer := map[string]int{}
	var place func(p string, depth int) int
	place = func(p string, depth int) int {
		if l, ok := layer[p]; ok {
			return l
		}
		if depth > len(imports) { // a cycle: go build refuses it first
			return 0
		}
		l := 0
		for _, i := range imports[p] {
			l = max(l, place(i, depth+1)+1)
		}
		layer[p] = l
		return l
	}
	for p := range imports {
		place(p, 0)
	}
	return layer
}

// TestArchitectureLayers holds the layer drawing of docs/architecture.md
// to the module: every package is drawn once, in the lowest layer its
// imports allow (so every arrow points down and the drawing says how far
// each package stands from the bottom). A failure prints the block as it
// should read.
func TestArchitectureLayers(t *testing.T) {
	drawn := readLayersBlock(t)
	want := lowestLayers(goListImports(t))
	bad := false
	for p, l := range want {
		d, ok := drawn[p]
		switch {
		case !ok:
			t.Errorf("docs/architecture.md's layers block lacks %s (layer %d)", p, l)
			bad = true
		case d != l:
			t.Errorf("docs/architecture.md draws %s in layer %d; its imports place it in layer %d", p, d, l)
			bad = true
		}
	}
	for p := range drawn {
		if _, ok := want[p]; !ok {
			t.Errorf("docs/architecture.md draws %s, which is no package of the module", p)
			bad = true
		}
	}
	if bad {
		byLayer := map[int][]string{}
		top := 0
		for p, l := range want {
			byLayer[l] = append(byLayer[l], p)
			top = max(top, l)
		}
		var b strings.Builder
		for l := top; l >= 0; l-- {
			slices.Sort(byLayer[l])
			fmt.Fprintf(&b, "layer %d  %s\n", l, strings.Join(byLayer[l], " "))
		}
		t.Logf("the layers block should read:\n%s", b.String())
	}
}

// tableRow is a row of docs/architecture.md's package table:
// "| `pkg` | layer | half | what it holds |".
var tableRow = regexp.MustCompile("^\\| `([^`]+)` \\| (\\d+) \\| (measurement|continuous|both|tests) \\| (.+) \\|$")

// TestArchitectureTable holds the table that says what each package holds
// to the module: every package has one row, with the layer its imports
// give it.
func TestArchitectureTable(t *testing.T) {
	b, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	want := lowestLayers(goListImports(t))
	rows := map[string]int{}
	for n, line := range strings.Split(string(b), "\n") {
		m := tableRow.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		p, layer := m[1], m[2]
		if _, dup := rows[p]; dup {
			t.Errorf("docs/architecture.md:%d: %s has a second row", n+1, p)
		}
		l, _ := strconv.Atoi(layer)
		rows[p] = l
		w, ok := want[p]
		switch {
		case !ok:
			t.Errorf("docs/architecture.md:%d: %s is no package of the module", n+1, p)
		case w != l:
			t.Errorf("docs/architecture.md:%d: %s in layer %d; its imports place it in layer %d", n+1, p, l, w)
		}
	}
	for p, l := range want {
		if _, ok := rows[p]; !ok {
			t.Errorf("docs/architecture.md's package table has no row for %s (layer %d): say what it holds", p, l)
		}
	}
}
