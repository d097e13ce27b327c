package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/buildinfo"
)

// version and commit are udpstp's release and the commit it was built
// from, as a build gives them with -ldflags "-X main.version=1.2.3 -X
// main.commit=..." (the Makefile does, from git); those win. Left empty,
// they are what Go recorded in the binary (so a `go install ...@v1.2.3`
// binary says v1.2.3), else "devel" and unknown. main hands them to
// internal/buildinfo first thing (linkVersion), and every use reads
// buildinfo.Get().
var version, commit string

// linkVersion hands the linker's values to internal/buildinfo.
func linkVersion() {
	buildinfo.SetLinked(buildinfo.Linked{Version: version, Commit: commit})
}

// versionCommand prints our version and the protocol versions we speak,
// which is what decides whether two ends can test together.
func versionCommand() *cli.Command {
	return &cli.Command{
		Name:         "version",
		Usage:        "print the udpstp version, its build and the protocol versions it speaks",
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if err := noArguments(c); err != nil {
				return err
			}
			writeVersion(c.App.Writer)
			return nil
		},
	}
}

// noArguments refuses positional arguments to a command that takes none.
func noArguments(c *cli.Context) error {
	if c.Args().Present() {
		return configError("%s: unexpected argument %q (%s takes no arguments)", c.Command.Name, c.Args().First(), c.Command.Name)
	}
	return nil
}

// writeVersion prints what `udpstp version`, --version and -V say:
//
//	udpstp v1.2.3
//	Commit: 0123456789ab (2026-11-30T03:11:05Z, modified)
//	Go: go1.26.8 linux/amd64
//	Protocol version: 20 (client sends 20, server accepts 11-20), as OB-UDPST 9.0.0
func writeVersion(w io.Writer) {
	bi := buildinfo.Get()
	fmt.Fprintf(w, "udpstp %s\n", bi.Version)
	commit := "unknown (built without VCS information)"
	if bi.Commit != "" {
		commit = bi.ShortCommit()
		var extra []string
		if bi.Time != "" {
			extra = append(extra, bi.Time)
		}
		if bi.Modified {
			extra = append(extra, "modified")
		}
		if len(extra) > 0 {
			commit += " (" + strings.Join(extra, ", ") + ")"
		}
	}
	fmt.Fprintf(w, "Commit: %s\n", commit)
	fmt.Fprintf(w, "Go: %s %s\n", bi.GoVersion, bi.Platform)
	fmt.Fprintf(w, "Protocol version: %d (client sends %d, server accepts %d-%d), as OB-UDPST 9.0.0\n",
		control.ProtocolVersion, control.ProtocolVersion, control.MinProtocolVersion, control.ProtocolVersion)
}
