//go:build !small

package main

// `udpstp collector`: package collector's HTTPS service and its CA,
// enrolment and revocation (docs/fleet.md, "Probes across the internet:
// the collector").

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/agent"
	"github.com/udpstp/udpstp/collector"
	"github.com/udpstp/udpstp/internal/atomicfile"
	"github.com/udpstp/udpstp/store"
)

func collectorCommand() *cli.Command {
	storeFlag := func() cli.Flag {
		return &cli.StringFlag{Name: "store", Usage: "the result store `SPEC`: sqlite:PATH or postgres://..."}
	}
	return &cli.Command{
		Name:      "collector",
		Usage:     "take results from probes over HTTPS (client certificates) into the result store",
		UsageText: "udpstp collector --tls-cert FILE --tls-key FILE --client-ca FILE --store SPEC [--listen ADDR] [--http ADDR]\nudpstp collector ca init --dir DIR\nudpstp collector enroll NAME --ca DIR --store SPEC --out DIR\nudpstp collector revoke NAME --store SPEC\nudpstp collector probes --store SPEC [--json]\nudpstp collector config set NAME FILE --store SPEC",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: ":8443", Usage: "the probes' HTTPS `ADDR`"},
			&cli.StringFlag{Name: "http", Value: "127.0.0.1:8081", Usage: "the fleet's page and /metrics, plain HTTP on a loopback `ADDR`"},
			&cli.StringFlag{Name: "tls-cert", TakesFile: true, Usage: "the collector's certificate `FILE` (PEM)"},
			&cli.StringFlag{Name: "tls-key", TakesFile: true, Usage: "the collector's key `FILE` (PEM)"},
			&cli.StringFlag{Name: "client-ca", TakesFile: true, Usage: "the probes' CA certificate `FILE` (ca.crt of `collector ca init`)"},
			&cli.StringFlag{Name: "store", Usage: "the result store `SPEC`: sqlite:PATH or postgres://..."},
			&cli.Int64Flag{Name: "max-upload", Value: collector.DefaultMaxBody, Usage: "refuse an upload over `BYTES` (413)"},
			&cli.Float64Flag{Name: "rate", Value: collector.DefaultRate, Usage: "each probe's uploads a second (token bucket; 429 past it)"},
			&cli.IntFlag{Name: "burst", Value: collector.DefaultBurst, Usage: "each probe's burst of uploads"},
		},
		OnUsageError: usageError,
		Action:       collectorAction,
		Subcommands: []*cli.Command{
			{Name: "ca", Usage: "the probes' CA", OnUsageError: usageError, Subcommands: []*cli.Command{{
				Name: "init", Usage: "make the CA in DIR (ca.key 0600, ca.crt)", OnUsageError: usageError,
				Flags: []cli.Flag{&cli.StringFlag{Name: "dir", Required: true, TakesFile: true, Usage: "the CA's `DIR`"}},
				Action: func(c *cli.Context) error {
					if err := collector.InitCA(c.String("dir"), time.Now()); err != nil {
						return cli.Exit("collector: "+err.Error(), exitInit)
					}
					return nil
				},
			}}},
			// NAME may come before the options (`enroll NAME --ca DIR`):
			// getoptCommand reads options anywhere.
			getoptCommand(&cli.Command{Name: "enroll", Usage: "issue a probe's credential and record it in the store", ArgsUsage: "NAME"},
				func() []cli.Flag {
					return []cli.Flag{
						&cli.StringFlag{Name: "ca", TakesFile: true, Usage: "the CA's `DIR`"},
						storeFlag(),
						&cli.StringFlag{Name: "out", TakesFile: true, Usage: "write probe.crt, probe.key (and ca.crt) to `DIR`"},
						&cli.StringFlag{Name: "server-ca", TakesFile: true, Usage: "copy the collector's server CA `FILE` to the probe's ca.crt (none: the probe trusts the system roots)"},
					}
				}, collectorEnroll),
			{Name: "config", Usage: "the probes' agent configurations", OnUsageError: usageError, Subcommands: []*cli.Command{
				getoptCommand(&cli.Command{Name: "set", Usage: "set the agent configuration (TOML) the probe NAME fetches", ArgsUsage: "NAME FILE"},
					func() []cli.Flag {
						return []cli.Flag{storeFlag(), &cli.DurationFlag{Name: "test-min-every", Hidden: true, Usage: "tests of the agent: a shorter least mean spacing"}}
					}, collectorConfigSet),
			}},
			getoptCommand(&cli.Command{Name: "revoke", Usage: "revoke every credential of a probe (effective on its next request)", ArgsUsage: "NAME"},
				func() []cli.Flag { return []cli.Flag{storeFlag()} }, collectorRevoke),
			getoptCommand(&cli.Command{Name: "probes", Usage: "list the enrolled probes: when enrolled, revoked, last heard from"},
				func() []cli.Flag {
					return []cli.Flag{storeFlag(), &cli.BoolFlag{Name: "json", Usage: "print a JSON array, for scripts"}}
				}, collectorProbes),
		},
	}
}

func collectorAction(c *cli.Context) error {
	if c.Args().Present() {
		return configError("collector: unexpected argument %q", c.Args().First())
	}
	if err := required(c, "tls-cert", "tls-key", "client-ca", "store"); err != nil {
		return err
	}
	ctx, stop := signalContext(c)
	defer stop()
	err := collector.Serve(ctx, collector.ServeConfig{Listen: c.String("listen"), HTTP: c.String("http"),
		TLSCert: c.String("tls-cert"), TLSKey: c.String("tls-key"), ClientCA: c.String("client-ca"), Store: c.String("store"),
		MaxBody: c.Int64("max-upload"), Rate: c.Float64("rate"), Burst: c.Int("burst"),
		Log: slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))})
	if err != nil {
		return cli.Exit("collector: "+err.Error(), exitInit)
	}
	return nil
}

func collectorEnroll(c *cli.Context) error {
	name := c.Args().First()
	if c.NArg() != 1 {
		return configError("collector enroll: want one probe NAME")
	}
	if err := required(c, "ca", "store", "out"); err != nil {
		return err
	}
	if err := collector.CheckName(name); err != nil {
		return configError("collector enroll: %v", err)
	}
	ca, err := collector.LoadCA(c.String("ca"))
	if err != nil {
		return cli.Exit("collector enroll: "+err.Error(), exitConfig)
	}
	var serverCA []byte
	if f := c.String("server-ca"); f != "" {
		if serverCA, err = collector.ReadPEM(f); err != nil {
			return cli.Exit("collector enroll: --server-ca: "+err.Error(), exitConfig)
		}
	}
	is, err := ca.Issue(name, time.Now())
	if err != nil {
		return cli.Exit("collector enroll: "+err.Error(), exitInit)
	}
	st, p, err := openProbes(c, "collector enroll", store.Open)
	if err != nil {
		return err
	}
	defer st.Close()
	// Recorded before the files are written: a credential on disk is
	// always one the collector knows.
	if err := p.Enrol(c.Context, name, is.Serial, time.Now()); err != nil {
		return cli.Exit("collector enroll: "+err.Error(), exitInit)
	}
	if err := collector.WriteCredential(c.String("out"), is, serverCA); err != nil {
		return cli.Exit("collector enroll: "+err.Error(), exitInit)
	}
	fmt.Fprintf(c.App.Writer, "enrolled %s (serial %s) in %s\n", name, is.Serial, c.String("out"))
	return nil
}

func collectorRevoke(c *cli.Context) error {
	if c.NArg() != 1 {
		return configError("collector revoke: want one probe NAME")
	}
	name := c.Args().First()
	if err := required(c, "store"); err != nil {
		return err
	}
	st, p, err := openProbes(c, "collector revoke", store.Open)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := p.Revoke(c.Context, name, time.Now())
	if err != nil {
		return cli.Exit("collector revoke: "+err.Error(), exitInit)
	}
	if n == 0 {
		return cli.Exit(fmt.Sprintf("collector revoke: no credential of %q is in force", name), exitConfig)
	}
	fmt.Fprintf(c.App.Writer, "revoked %d credential(s) of %s\n", n, name)
	return nil
}

// collectorRemote is the agent's remote store for --store https://...:
// the collector's client with the probe's --credential, and the agent's
// configuration file: --config's, else, with a collector, the last good
// one it fetched (kept beside the spool, fetched again every
// collector.DefaultConfigEvery and on SIGHUP). For another --store: nil
// and --config.
//
// hup is the process's SIGHUP requests; the channel returned is the
// agent's reload requests: hup itself without a collector's
// configuration, else the fetcher's (a change fetched, or a SIGHUP after
// its fetch).
func collectorRemote(ctx context.Context, c *cli.Context, spec, spool string, hup <-chan struct{}, log *slog.Logger) (store.Store, string, <-chan struct{}, error) {
	credential, config := c.String("credential"), c.String("config")
	if !strings.HasPrefix(spec, "https://") {
		if credential != "" {
			return nil, "", nil, fmt.Errorf("--credential is for --store https://COLLECTOR/")
		}
		return nil, config, hup, nil
	}
	if credential == "" {
		return nil, "", nil, fmt.Errorf("--store %s needs --credential DIR (udpstp collector enroll)", spec)
	}
	tc, err := collector.LoadCredential(credential)
	if err != nil {
		return nil, "", nil, err
	}
	link, err := collector.NewLink(spec, tc)
	if err != nil {
		return nil, "", nil, err
	}
	remote := collector.NewRemote(link, log)
	if config != "" {
		return remote, config, hup, nil
	}
	f := collector.NewConfigFetcher(link, spool+".config.toml")
	lo := agent.LoadOptions{Parse: parseClientArgs, MinEvery: c.Duration("test-min-every")}
	f.Parse = func(name string, b []byte) error { _, err := agent.Parse(name, b, lo); return err }
	f.MaxSize, f.Log, f.Every = agent.MaxConfigSize, log, c.Duration("config-every")
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := f.Start(sctx); err != nil {
		return nil, "", nil, err
	}
	reload := make(chan struct{}, 1)
	f.Reload = func() {
		select {
		case reload <- struct{}{}:
		default: // one waits already
		}
	}
	go f.Run(ctx, hup)
	return remote, f.Path, reload, nil
}

// collectorConfigSet is `udpstp collector config set NAME FILE`: the file
// is checked with the agent's own parser before it is stored.
func collectorConfigSet(c *cli.Context) error {
	if c.NArg() != 2 {
		return configError("collector config set: want NAME FILE")
	}
	name, file := c.Args().Get(0), c.Args().Get(1)
	if err := collector.CheckName(name); err != nil {
		return configError("collector config set: %v", err)
	}
	if err := required(c, "store"); err != nil {
		return err
	}
	b, err := atomicfile.ReadFile(file, agent.MaxConfigSize)
	if err != nil {
		return configError("collector config set: %v", err)
	}
	if _, err := agent.Parse(file, b, agent.LoadOptions{Parse: parseClientArgs, MinEvery: c.Duration("test-min-every")}); err != nil {
		return configError("collector config set: %v", err)
	}
	st, p, err := openProbes(c, "collector config set", store.Open)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := p.SetProbeConfig(c.Context, name, b, time.Now()); err != nil {
		return cli.Exit("collector config set: "+err.Error(), exitInit)
	}
	fmt.Fprintf(c.App.Writer, "configuration of %s set (hash %s); the probe takes it within %s or on SIGHUP\n", name, collector.Hash(b), collector.DefaultConfigEvery)
	return nil
}

// openProbes opens --store with open (store.Open; store.OpenReader for a
// command that only reads) and returns it, for the caller to close, with
// its probes; what names the command in its errors.
func openProbes(c *cli.Context, what string, open func(context.Context, string) (store.Store, error)) (store.Store, store.Probes, error) {
	st, err := open(c.Context, c.String("store"))
	if err != nil {
		return nil, nil, cli.Exit(what+": "+err.Error(), exitInit)
	}
	p, ok := st.(store.Probes)
	if !ok {
		st.Close()
		return nil, nil, configError("%s: this store keeps no probes", what)
	}
	return st, p, nil
}

// required refuses a command line without one of the flags names.
func required(c *cli.Context, names ...string) error {
	for _, f := range names {
		if c.String(f) == "" {
			return configError("collector %s: --%s is required", c.Command.Name, f)
		}
	}
	return nil
}

// agentConfigEvery is the default of the agent's --config-every.
const agentConfigEvery = collector.DefaultConfigEvery
