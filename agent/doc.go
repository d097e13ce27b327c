// Package agent measures continuously: `udpstp agent` runs the tests of a
// configuration file on their schedules, keeps every result in a store
// (package store), and serves them: Prometheus metrics, a blackbox-style
// /probe that runs one bounded test on request, /healthz and the web page.
//
// The configuration (config.go) is one TOML file, read at start and on
// SIGHUP; an unknown key or a bad value is an error naming the file, line
// and key. A test's schedule (schedule.go) is either memoryless spacing,
// exponential with a mean and clamped to 0.1x-2.5x of it as M-Lab's ndt7
// clients space their tests so that a fleet of probes never synchronises,
// or a cron expression. One lock (runner.go) keeps the agent's tests one at
// a time, whoever starts them: a schedule, the page's "run now" or /probe.
// A slot the agent could not keep (the machine slept past it, every server
// refused or did not answer) is stored as a result with status missed and
// a warning saying why, never skipped silently. Tests run in-process
// through client.Run; their JSON documents, with udpstp's figures, are
// what the store keeps. docs/agent.md is the user's guide.
package agent
