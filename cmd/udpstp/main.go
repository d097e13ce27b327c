// Command udpstp is a UDP Speed Test Protocol (RFC 9946) server and client
// implementing the RFC 9097 capacity measurement, interoperable with
// OB-UDPST 9.0.0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/buildinfo"
	"github.com/udpstp/udpstp/server"
)

// Exit codes shared by every subcommand. exitConfig, exitKeyFile and exitInit
// match OB-UDPST, which exits 50 on any command-line or configuration error,
// 51 on a key file error and 75 when it cannot initialize.
const (
	exitFailure = server.ExitFailure
	exitConfig  = server.ExitConfig
	exitKeyFile = 51
	exitInit    = server.ExitInit
)

// runners are what `udpstp server` and `udpstp client` run once their
// command line is read: the service (serve) and a test (runTest). Tests
// pass recorders (newAppWith) to see exactly what a command line produced
// without running anything.
type runners struct {
	server func(ctx context.Context, cfg *control.ServerConfig, lo localOptions) error
	client func(ctx context.Context, cfg *control.ClientConfig, lo localOptions) int
}

// newApp is the udpstp command.
func newApp() *cli.App { return newAppWith(runners{server: serve, client: runTest}) }

// newAppWith is the udpstp command, whose server and client run with run.
func newAppWith(run runners) *cli.App {
	setupCLI() // --help, --version and -V (flags.go)
	return &cli.App{
		Name:                 "udpstp",
		Usage:                "UDP Speed Test Protocol (RFC 9946) server and client",
		Version:              buildinfo.Get().Version, // --version and -V (version.go)
		EnableBashCompletion: true,
		Suggest:              true,
		Commands: slices.Concat([]*cli.Command{serverCommand(run.server), clientCommand(run.client), ratesCommand()},
			optionalCommands(), // plot, left out of the small build (commands_small.go)
			[]*cli.Command{versionCommand(), completionCommand(), manCommand()}),
		OnUsageError: usageError,
		Action:       unknownCommand,
		// Errors come back from Run and main reports them. Without this
		// handler cli would print them itself and call os.Exit from inside
		// Run, out of our control and in the middle of tests.
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// usageError turns a flag parsing error into a configuration error so that it
// is reported as one line with exit code 50 instead of cli's usage dump.
// Commands set it as their OnUsageError too.
//
// The one exception is -h: help is --help only, because -h is OB-UDPST's
// high-speed delta on the client (see flags.go), and Go's flag package
// answers an undefined -h with flag.ErrHelp. Where -h means nothing else,
// help is what was asked for, so it is shown as before.
func usageError(c *cli.Context, err error, isSubcommand bool) error {
	if errors.Is(err, flag.ErrHelp) {
		if isSubcommand {
			return cli.ShowSubcommandHelp(c)
		}
		return cli.ShowAppHelp(c)
	}
	return cli.Exit(err.Error(), exitConfig)
}

// unknownCommand runs when no subcommand matched. cli's default would treat
// the word as a help topic and exit 3; an unknown command is a command-line
// error like any other, so it gets one line and exit code 50.
func unknownCommand(c *cli.Context) error {
	if !c.Args().Present() {
		return cli.ShowAppHelp(c)
	}
	name := c.Args().First()
	msg := fmt.Sprintf("unknown command %q", name)
	if cli.SuggestCommand != nil {
		msg += ". " + cli.SuggestCommand(c.App.VisibleCommands(), name)
	}
	return cli.Exit(msg, exitConfig)
}

func main() {
	linkVersion()
	if isDropIn(os.Args[0]) { // OB-UDPST's command line (udpst.go)
		os.Exit(runUdpst(os.Args, os.Stdout, os.Stderr))
	}
	err := newApp().Run(os.Args)
	if err == nil {
		return
	}
	if msg := strings.TrimSpace(err.Error()); msg != "" {
		fmt.Fprintf(os.Stderr, "udpstp: %s\n", strings.ReplaceAll(msg, "\n", "; "))
	}
	os.Exit(exitCode(err))
}

// exitCode is the exit status for err, an error Run returned: the status
// a cli.ExitCoder carries, else exitFailure.
func exitCode(err error) int { return server.ExitStatus(err) }
