package main

// `udpstp server`: OB-UDPST's `udpst [option]... [address]` without -u/-d.
// The server's -t, -m, -I and -B are limits granted to clients, not test
// parameters; client-only options are refused with OB-UDPST's message.

import (
	"context"
	"errors"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/server"
)

// serverCommand is `udpstp server`, which runs the service with run.
func serverCommand(run func(context.Context, *control.ServerConfig, localOptions) error) *cli.Command {
	return getoptCommand(&cli.Command{
		Name:      "server",
		Usage:     "answer capacity tests from clients, like `udpst` without -u/-d",
		UsageText: "udpstp server [options] [bind-address[:port]...]",
		Description: "Serves tests to udpstp and OB-UDPST clients until interrupted (SIGINT or\n" +
			"SIGTERM), or after one test with -1. Without an address it listens on every\n" +
			"address, IPv4 and IPv6. Every option of OB-UDPST's udpst server is here under\n" +
			"its letter and a long name; options may come before or after the addresses.\n" +
			"An IPv6 address with a port is written [addr]:port. -? prints this help and\n" +
			"exits 50, as udpst does; help is --help.",
	}, func() []cli.Flag { return flagsFor(forServer) }, func(c *cli.Context) error { return serverAction(c, run) })
}

func serverAction(c *cli.Context, run func(context.Context, *control.ServerConfig, localOptions) error) error {
	v := optionValues{c, forServer}
	cfg, lo, err := serverConfig(v)
	if err != nil {
		return err
	}
	if v.on("show-rates") {
		return showRates(c, cfg.NoJumbo, cfg.TraditionalMTU, cfg.Family)
	}
	return startServer(c, cfg, lo, run)
}

// serverConfig builds the server's config from its command line.
func serverConfig(v optionValues) (*control.ServerConfig, localOptions, error) {
	var lo localOptions
	cfg := control.DefaultServerConfig()
	if err := checkRole(v.c, forServer); err != nil {
		return nil, lo, err
	}
	if err := bindAddresses(v, &cfg); err != nil {
		return nil, lo, err
	}
	if err := serverOptions(v, &cfg); err != nil {
		return nil, lo, err
	}
	var err error
	if lo.Service, err = serviceOpts(v); err != nil {
		return nil, lo, err
	}
	lo.NoGSO = v.on("no-gso")
	if err := checkDebug(v); err != nil {
		return nil, lo, err
	}
	if v.set("log-file") && !v.on("daemon") {
		return nil, lo, configError("ERROR: Log file only supported when executing as daemon (%s needs %s)", opt("log-file"), opt("daemon"))
	}
	if err := checkUnsupported(v.c, forServer); err != nil {
		return nil, lo, err
	}
	if err := serverKeys(v, &cfg); err != nil {
		return nil, lo, err
	}
	return &cfg, lo, nil
}

// bindAddresses reads -p and the local addresses. OB-UDPST takes one
// address; we take several, all on one control port: the port of
// address:port (OB-UDPST lets it override -p), else -p.
func bindAddresses(v optionValues, cfg *control.ServerConfig) error {
	if err := v.number("port", &cfg.Port); err != nil {
		return err
	}
	port := cfg.Port
	for i, a := range v.c.Args().Slice() {
		s, err := parseHostPort(a, port)
		if err != nil {
			return err
		}
		if i > 0 && s.Port != cfg.Port {
			return configError("ERROR: Bind addresses must share one control port (%s)", strings.Join(v.c.Args().Slice(), " "))
		}
		cfg.Port = s.Port
		cfg.BindAddrs = append(cfg.BindAddrs, s.Host)
	}
	return nil
}

// serverOptions reads the options that map onto cfg, in OB-UDPST's getopt
// order.
func serverOptions(v optionValues, cfg *control.ServerConfig) (err error) {
	if cfg.Family, err = family(v); err != nil {
		return err
	}
	cfg.OneTest = v.on("one-test")
	cfg.ShowErrors = v.on("show-errors")
	cfg.Verbose = v.on("verbose")
	cfg.NoSubInt = v.on("summary-only")
	cfg.NoJumbo = v.on("no-jumbo")
	cfg.TraditionalMTU = v.on("traditional-mtu")
	cfg.Debug = v.on("debug")
	cfg.AllowRandom = v.on("random-payload")
	if err := v.number("bandwidth", &cfg.MaxBandwidth); err != nil {
		return err
	}
	cfg.LossRatio = v.on("loss-ratio")
	if err := v.number("dscp-ecn", &cfg.MaxDSCPECN); err != nil {
		return err
	}
	if err := checkAuthKey(v); err != nil {
		return err
	}
	cfg.NoSeqRollback = v.on("no-seq-rollback")
	if v.set("rate-index") {
		// A server's -I is a maximum; like OB-UDPST it accepts and
		// ignores the '@' that makes a client's row a starting point.
		if cfg.MaxRateIndex, _, err = parseRateIndex(v.text("rate-index")); err != nil {
			return err
		}
	}
	return v.numbers([]numberField{
		{"test-time", &cfg.MaxTestTime},
		{"socket-buffer", &cfg.SockBuf},
		{"max-connections", &cfg.MaxConnections},
	})
}

// serverKeys sets the keys from -a and -K, which a server may combine:
// a request's key ID picks the file entry, the -a key is the fallback.
// A key file that does not load exits with status 51, as in OB-UDPST.
func serverKeys(v optionValues, cfg *control.ServerConfig) error {
	if !v.set("auth-key") && !v.set("key-file") {
		return nil // no authentication, as control.DefaultServerConfig
	}
	keys, err := server.ReadKeys(v.text("auth-key"), v.text("key-file"))
	var kf *server.KeyFileError
	switch {
	case errors.As(err, &kf):
		return cli.Exit("ERROR: "+kf.Error(), exitKeyFile)
	case err != nil:
		return configError("ERROR: %v (%s)", err, opt("auth-key"))
	}
	cfg.Keys = keys
	return nil
}
