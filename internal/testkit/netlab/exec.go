package netlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// cmdTimeout bounds every ip, tc and nft invocation, so a wedged tool
// fails the lab instead of hanging a test until go test's timeout (which
// would skip every cleanup).
const cmdTimeout = 20 * time.Second

// sbinDirs are searched after PATH: a non-login root shell or a
// `sudo -E go test` may have a PATH without the sbin directories where
// Debian installs ip, tc and nft.
var sbinDirs = []string{"/usr/sbin", "/sbin", "/usr/local/sbin"}

// lookTool finds an executable by name in PATH or in sbinDirs.
func lookTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range sbinDirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH or %s", name, strings.Join(sbinDirs, ", "))
}

// tools are the resolved paths of the programs the lab runs.
type tools struct {
	ip, tc, nft string
}

// run executes path with args, feeding stdin if not nil, and returns its
// stdout. The error names the full command line and carries its stderr.
func run(stdin []byte, path string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w after %v", ctx.Err(), cmdTimeout)
		}
		return stdout.Bytes(), &CmdError{Args: append([]string{path}, args...), Err: err, Stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.Bytes(), nil
}

// CmdError is the error of a failed ip, tc or nft command.
type CmdError struct {
	Args   []string // the command line, program path first
	Err    error    // how it failed: exit status, start failure, timeout
	Stderr string   // what it wrote to stderr, trimmed
}

func (e *CmdError) Error() string {
	msg := fmt.Sprintf("netlab: `%s`: %v", strings.Join(e.Args, " "), e.Err)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *CmdError) Unwrap() error { return e.Err }

// stderrContains reports whether err is a CmdError whose stderr contains s;
// used to recognise "already exists" and "not found" answers of iproute2.
func stderrContains(err error, s string) bool {
	var ce *CmdError
	return errors.As(err, &ce) && strings.Contains(ce.Stderr, s)
}
