//go:build small

package main

// The small build (go build -tags small), for routers and CPE with little
// flash: the server and client with OB-UDPST's command line (also as the
// drop-in udpst), the rate table, version, man page and completions, and
// nothing a device running tests does not need. This file is where such
// parts are left out: today `udpstp plot` (gonum's plotting and fonts,
// commands_full.go); the web page and the result store are to be left out
// here too when they come. README.md "Router builds" has the sizes.

import "github.com/urfave/cli/v2"

// optionalCommands: none in the small build.
func optionalCommands() []*cli.Command { return nil }
