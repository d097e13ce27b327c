package udpstp

// This file holds the client and the agent apart from the server: they
// run their Data Phases on internal/enginenet, never through package
// server (docs/architecture.md, "Packages").

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// goListDeps returns what `go list -deps` gives for pkgs, as built for
// Linux.
func goListDeps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go list needs the go command on PATH: %v", err)
	}
	cmd := exec.Command(goBin, append([]string{"list", "-deps"}, pkgs...)...)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", strings.Join(pkgs, " "), err)
	}
	return strings.Fields(string(out))
}

// TestClientAgentWithoutServer: `go list -deps` of the client, the agent
// and the executor they share holds no package of server, and neither
// does what `udpstp agent`'s command (cmd/udpstp/agent.go) imports.
func TestClientAgentWithoutServer(t *testing.T) {
	const server = "github.com/udpstp/udpstp/server"
	isServer := func(p string) bool { return p == server || strings.HasPrefix(p, server+"/") }
	for _, pkg := range []string{"./client", "./agent", "./internal/enginenet"} {
		for _, d := range goListDeps(t, pkg) {
			if isServer(d) {
				t.Errorf("go list -deps %s holds %s", pkg, d)
			}
		}
	}

	f, err := parser.ParseFile(token.NewFileSet(), "cmd/udpstp/agent.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var imports []string
	for _, im := range f.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		if isServer(p) {
			t.Errorf("cmd/udpstp/agent.go imports %s", p)
		}
		if strings.HasPrefix(p, "github.com/udpstp/udpstp/") {
			imports = append(imports, p)
		}
	}
	if len(imports) == 0 {
		t.Fatal("cmd/udpstp/agent.go imports nothing of the module: the check above checked nothing")
	}
	for _, d := range goListDeps(t, imports...) {
		if isServer(d) {
			t.Errorf("cmd/udpstp/agent.go's imports (%s) hold %s", strings.Join(imports, " "), d)
		}
	}
}
