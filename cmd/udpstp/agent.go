//go:build !small

package main

// `udpstp agent`: the long-running service of package agent, its flags and
// the client's own parser handed to it, so that a test's options in the
// agent's file are checked exactly as on the command line.

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/agent"
	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/buildinfo"
	"github.com/udpstp/udpstp/internal/enginenet"
	"github.com/udpstp/udpstp/store"
	"github.com/udpstp/udpstp/web"
)

func agentCommand() *cli.Command {
	return &cli.Command{
		Name:      "agent",
		Usage:     "run tests on schedules, keep their results, serve them (page, /metrics, /probe)",
		UsageText: "udpstp agent [--config FILE] [--http ADDR] [--store sqlite:PATH] [--identity NAME]",
		Description: "Runs the tests of a TOML file (--config; see docs/agent.md) on their schedules,\n" +
			"one at a time, stores every result, and serves a page, Prometheus metrics\n" +
			"(/metrics) and a blackbox-style /probe?target=host[:port]&direction=up|down&duration=S.\n" +
			"SIGHUP reads the file again; a file with an error leaves the old one in force.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", TakesFile: true, Usage: "the tests and their schedules, a TOML `FILE` (none: no scheduled tests)"},
			&cli.StringFlag{Name: "http", Value: "127.0.0.1:8080", Usage: "listen on `ADDR` for the page, /metrics and /probe"},
			&cli.StringFlag{Name: "store", Usage: "the result store: sqlite:PATH or postgres://...", DefaultText: "sqlite:$STATE_DIRECTORY/results.db or sqlite:/var/lib/udpstp/results.db"},
			&cli.StringFlag{Name: "spool", TakesFile: true, Usage: "with --store postgres://...: keep every result first in a local SQLite `PATH` and upload it from there, so that a PostgreSQL down loses nothing", DefaultText: "spool.db beside the default store"},
			&cli.StringFlag{Name: "credential", TakesFile: true, Usage: "with --store https://COLLECTOR/: the probe's `DIR` of probe.crt, probe.key and ca.crt (udpstp collector enroll)"},
			&cli.StringFlag{Name: "identity", Usage: "the probe's `NAME` in its results", DefaultText: "the host name"},
			&cli.DurationFlag{Name: "config-every", Value: agentConfigEvery, Usage: "with --store https://COLLECTOR/ and no --config: fetch the configuration from the collector every `DURATION` (and on SIGHUP)"},
			&cli.DurationFlag{Name: "test-min-every", Hidden: true, Usage: "tests of the agent: a shorter least mean spacing"},
		},
		OnUsageError: usageError,
		Action:       agentAction,
	}
}

func agentAction(c *cli.Context) error {
	if c.Args().Present() {
		return configError("agent: unexpected argument %q (the tests go in --config)", c.Args().First())
	}
	identity := c.String("identity")
	if identity == "" {
		h, err := os.Hostname()
		if err != nil {
			return cli.Exit(fmt.Sprintf("agent: --identity not given and no host name: %v", err), exitConfig)
		}
		identity = h
	}
	spec := c.String("store")
	if spec == "" {
		spec = "sqlite:" + defaultStorePath()
	}
	if err := store.CheckScheme(spec, agentStoreSchemes()); err != nil {
		return configError("agent: %v", err)
	}
	spool := c.String("spool")
	if remote := !strings.HasPrefix(spec, "sqlite:"); !remote && spool != "" {
		return configError("agent: --spool is for a remote --store (postgres://...); %s is local", spec)
	} else if remote && spool == "" {
		spool = filepath.Join(filepath.Dir(defaultStorePath()), "spool.db")
	}
	reload, stopReloads := reloadRequests() // before anything slow
	defer stopReloads()
	ctx, stop := signalContext(c)
	defer stop()
	log := slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))
	engineEnv := enginenet.ReadEnv(os.Getenv)
	remote, configPath, reload, err := collectorRemote(ctx, c, spec, spool, reload, log) // collector.go
	if err != nil {
		return configError("agent: %v", err)
	}
	err = agent.Serve(ctx, agent.ServeConfig{
		Remote:     remote,
		ConfigPath: configPath,
		HTTP:       c.String("http"),
		Store:      spec,
		Spool:      spool,
		Page:       agentPage,
		Reload:     reload,
		Systemd:    systemdEnv(),
		Load:       agent.LoadOptions{Parse: parseClientArgs, MinEvery: c.Duration("test-min-every")},
		Options: agent.Options{Identity: identity, Log: log, Version: buildinfo.Get().Version,
			Network: agentNetwork(log, engineEnv)}, // agent_memory.go
	})
	switch {
	case err == nil:
		return nil
	case agent.IsConfigError(err):
		return cli.Exit("agent: "+err.Error(), exitConfig)
	}
	return cli.Exit("agent: "+err.Error(), exitInit)
}

// agentPage is the web page of package web over a's store.
func agentPage(a *agent.Agent, st store.Store, log *slog.Logger) http.Handler {
	cfg := web.Config{Store: st, Agent: webAgent{a}, Logger: log, StreamsPerClient: a.Config().HTTP.StreamsPerClient}
	if sp, ok := st.(*store.Spool); ok {
		cfg.Pending = sp.Pending
	}
	return web.Handler(cfg)
}

// webAgent is an agent as the page sees it: its busy error is the page's.
type webAgent struct{ *agent.Agent }

func (w webAgent) RunNow(name string) error {
	err := w.Agent.RunNow(name)
	if errors.Is(err, agent.ErrBusy) {
		return fmt.Errorf("%w: %w", web.ErrBusy, err)
	}
	return err
}

// agentStoreSchemes are the --store specs the agent takes: the store's
// own (store.Schemes) and a collector (https://, collector.go). Anything
// else is refused at start: a forgotten "sqlite:" was once taken for a
// PostgreSQL URL.
func agentStoreSchemes() []string { return append(store.Schemes(), "https://") }

// defaultStorePath is the store under systemd's StateDirectory=, else
// /var/lib/udpstp.
func defaultStorePath() string {
	dir := "/var/lib/udpstp"
	if d, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":"); d != "" {
		dir = d
	}
	return filepath.Join(dir, "results.db")
}

// parseClientArgs reads a client's arguments (options, "--", one server)
// with `udpstp client`'s parser and checks.
func parseClientArgs(args []string) (*control.ClientConfig, client.Plan, error) {
	setupCLI() // -h is the client's high-speed delta, not help
	var cfg *control.ClientConfig
	var plan client.Plan
	cmd := getoptCommand(&cli.Command{Name: "client"}, func() []cli.Flag { return flagsFor(forClient) }, func(c *cli.Context) error {
		cc, lo, err := clientConfig(optionValues{c, forClient})
		if err != nil {
			return err
		}
		cfg, plan = cc, lo.Plan
		return nil
	})
	app := &cli.App{Name: "udpstp", Writer: io.Discard, ErrWriter: io.Discard, Commands: []*cli.Command{cmd},
		OnUsageError: usageError, ExitErrHandler: func(*cli.Context, error) {}}
	if err := app.Run(append([]string{"udpstp", "client"}, args...)); err != nil {
		return nil, plan, err
	}
	if cfg == nil {
		return nil, plan, fmt.Errorf("not a test: %s", strings.Join(args, " "))
	}
	return cfg, plan, nil
}
