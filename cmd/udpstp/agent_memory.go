//go:build !small

package main

import (
	"log/slog"
	"runtime/debug"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/enginenet"
)

// agentNetwork opens the engine's client network for one test of the
// agent (a scheduled one, "run now" or /probe). Its closer also hands the
// test's memory back to the system: a test's sockets, batches and report
// are garbage once it ends, but the Go runtime keeps freed heap for reuse
// (up to its heap goal, 4 MB at least) and returns it only slowly, so an
// agent idle between tests hours apart would hold several MB it no longer
// uses (docs/agent.md, "Memory"). One forced collection per test is cheap
// beside a test of seconds, and tests are spaced by minutes.
func agentNetwork(log *slog.Logger, env enginenet.Env) func() (control.Network, func()) {
	return func() (control.Network, func()) {
		n, closeNet := enginenet.NewClient(enginenet.Options{Log: log, Env: env})
		return n, func() {
			closeNet()
			debug.FreeOSMemory()
		}
	}
}
