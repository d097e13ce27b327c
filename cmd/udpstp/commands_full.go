//go:build !small

package main

import "github.com/urfave/cli/v2"

// optionalCommands are the commands the small build (commands_small.go)
// leaves out: `udpstp plot`, which brings a font and a rasterizer;
// `udpstp history` and `udpstp agent`, which bring the result store.
func optionalCommands() []*cli.Command {
	return []*cli.Command{plotCommand(), historyCommand(), agentCommand(), collectorCommand()}
}
