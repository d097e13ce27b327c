package report

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestImportsStayBelowControl holds the layering: report prints what the
// Data Phase measured and may import dataphase and clock, never the
// Control Phase, the engine or the command (a type report needs from them
// moves down to dataphase instead).
func TestImportsStayBelowControl(t *testing.T) {
	const module = "github.com/udpstp/udpstp/"
	allowed := map[string]bool{module + "dataphase": true, module + "clock": true, module + "internal/testkit/golden": true,
		module + "internal/buildinfo": true} // a leaf: the version of the binary
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(path, module) && !allowed[path] {
				t.Errorf("%s imports %s", e.Name(), path)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no Go files read")
	}
}
