package validate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// The runtime user of the image (distroless's nonroot): the manifest's
// runAsUser must be the same.
const imageUID = 65532

// parseDockerfile parses the Dockerfile as BuildKit does (the parser and
// instruction checks of `docker build`, with the lint rules that run while
// parsing: any warning fails), and returns its stages.
func parseDockerfile(t *testing.T) []instructions.Stage {
	t.Helper()
	res, err := parser.Parse(strings.NewReader(readFile(t, dockerfilePath)))
	if err != nil {
		t.Fatalf("%s: %v", dockerfilePath, err)
	}
	for _, w := range res.Warnings {
		t.Errorf("%s: parser: %s", dockerfilePath, w.Short)
	}
	// BuildKit's ConsistentInstructionCasing rule runs only when it
	// converts a build (which resolves the base images over the network):
	// the same check here, in its strict form.
	for _, n := range res.AST.Children {
		if word, _, _ := strings.Cut(n.Original, " "); word != strings.ToUpper(word) {
			t.Errorf("%s: line %d: %s: instructions are upper case here", dockerfilePath, n.StartLine, word)
		}
	}
	var lint []string
	l := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		lint = append(lint, fmt.Sprintf("line %d: %s: %s", line, rule, msg))
	}})
	stages, _, err := instructions.Parse(res.AST, l)
	if err != nil {
		t.Fatalf("%s: %v", dockerfilePath, err)
	}
	for _, w := range lint {
		t.Errorf("%s: lint %s", dockerfilePath, w)
	}
	if len(stages) == 0 {
		t.Fatalf("%s: no stage", dockerfilePath)
	}
	return stages
}

func commands[T instructions.Command](s instructions.Stage) []T {
	var out []T
	for _, c := range s.Commands {
		if x, ok := c.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

func TestDockerfileBuildStage(t *testing.T) {
	stages := parseDockerfile(t)
	build := stages[0]
	if build.Name != "build" {
		t.Fatalf("first stage is %q, want the build stage named build", build.Name)
	}
	// The builder's Go must be the one go.mod asks for.
	wantImage := "golang:" + goVersion(t) + "-"
	if !strings.HasPrefix(build.BaseName, wantImage) {
		t.Errorf("build stage FROM %s, want %s* (go.mod's go %s)", build.BaseName, wantImage, goVersion(t))
	}
	var workdir string
	for _, w := range commands[*instructions.WorkdirCommand](build) {
		workdir = w.Path
	}
	made := false
	for _, r := range commands[*instructions.RunCommand](build) {
		if strings.Contains(strings.Join(r.CmdLine, " "), "make build") {
			made = true
		}
	}
	if !made {
		t.Error("the build stage does not run make build (the Makefile is what makes the binary static)")
	}

	// The final stage copies exactly what make build wrote.
	final := stages[len(stages)-1]
	want := workdir + "/" + binPath(t)
	var copied bool
	for _, c := range commands[*instructions.CopyCommand](final) {
		if c.From == build.Name && slices.Contains(c.SourcePaths, want) {
			copied = true
			if c.DestPath != "/usr/bin/udpstp" {
				t.Errorf("COPY %s to %s, want /usr/bin/udpstp", want, c.DestPath)
			}
		}
	}
	if !copied {
		t.Errorf("the final stage does not COPY --from=%s %s (WORKDIR %q + the Makefile's BIN)", build.Name, want, workdir)
	}
}

func TestDockerfileRuntimeStage(t *testing.T) {
	stages := parseDockerfile(t)
	final := stages[len(stages)-1]
	if final.BaseName != "scratch" && !strings.HasPrefix(final.BaseName, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %s, want scratch or distroless/static (the binary is static)", final.BaseName)
	}

	users := commands[*instructions.UserCommand](final)
	if len(users) == 0 {
		t.Fatal("the final stage sets no USER: the image would run as root")
	}
	user := users[len(users)-1].User
	uid, gid, _ := strings.Cut(user, ":")
	n, err := strconv.Atoi(uid)
	if err != nil || n == 0 {
		t.Errorf("USER %s: want a numeric non-root uid (a kubelet verifies runAsNonRoot only on numbers)", user)
	}
	if n != imageUID || gid != strconv.Itoa(imageUID) {
		t.Errorf("USER %s, want %d:%d (distroless nonroot; the manifest's runAsUser)", user, imageUID, imageUID)
	}

	var ports []string
	for _, e := range commands[*instructions.ExposeCommand](final) {
		ports = append(ports, e.Ports...)
	}
	if want := fmt.Sprintf("%d/udp", controlPort(t)); !slices.Contains(ports, want) {
		t.Errorf("EXPOSE %v, want %s (the control port of udpstp.socket)", ports, want)
	}

	eps := commands[*instructions.EntrypointCommand](final)
	if len(eps) != 1 || eps[0].PrependShell || !slices.Equal(eps[0].CmdLine, []string{"/usr/bin/udpstp"}) {
		t.Errorf("want one ENTRYPOINT [\"/usr/bin/udpstp\"] in exec form (there is no shell), got %+v", eps)
	}
	cmds := commands[*instructions.CmdCommand](final)
	if len(cmds) != 1 || cmds[0].PrependShell || len(cmds[0].CmdLine) == 0 || cmds[0].CmdLine[0] != "server" {
		t.Errorf("want CMD [\"server\", ...] in exec form, got %+v", cmds)
	}
	for _, r := range commands[*instructions.RunCommand](final) {
		t.Errorf("the final stage runs %q: distroless/static has no shell", strings.Join(r.CmdLine, " "))
	}
}
