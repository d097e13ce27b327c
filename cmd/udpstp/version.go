package main

import (
	"fmt"
	"runtime"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/control"
)

// version is udpstp's release. Builds set it with
// -ldflags "-X main.version=1.2.3".
var version = "0.1.0-dev"

// versionCommand prints our version and the protocol versions we speak,
// which is what decides whether two ends can test together.
func versionCommand() *cli.Command {
	return &cli.Command{
		Name:         "version",
		Usage:        "print the udpstp version and the protocol versions it speaks",
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return configError("version: unexpected argument %q (version takes no arguments)", c.Args().First())
			}
			w := c.App.Writer
			fmt.Fprintf(w, "udpstp %s (%s %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			fmt.Fprintf(w, "Protocol version: %d (client sends %d, server accepts %d-%d), as OB-UDPST 9.0.0\n",
				control.ProtocolVersion, control.ProtocolVersion, control.MinProtocolVersion, control.ProtocolVersion)
			return nil
		},
	}
}
