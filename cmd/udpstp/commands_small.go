//go:build small

package main

// The small build (go build -tags small), for routers and CPE with little
// flash: the server and client with OB-UDPST's command line (also as the
// drop-in udpst), the rate table, version, man page and completions, and
// nothing a device running tests does not need. This file is where such
// parts are left out (commands_full.go has them): `udpstp plot` (its
// font and rasterizer), `udpstp history`, `udpstp agent` and `udpstp
// collector` (the result store, the web page, Prometheus's client).
// docs/install.md, "Router builds", has the sizes.

import "github.com/urfave/cli/v2"

// optionalCommands: none in the small build.
func optionalCommands() []*cli.Command { return nil }
