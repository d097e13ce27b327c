package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/control"
)

func init() { runServer = serve }

// serve runs `udpstp server` until ctx ends: the control sockets answer
// Setup Requests and every accepted Test Connection gets its own Engine
// Thread.
func serve(ctx context.Context, cfg *control.ServerConfig, lo localOptions) error {
	log := serverLogger(cfg)
	net := newServerNet(lo, log)
	srv, err := control.NewServer(*cfg, net, log)
	if err != nil {
		return cli.Exit("ERROR: "+err.Error(), 75)
	}
	log.Info("udpstp server started", "version", version, "protocol", fmt.Sprintf("%d (accepts %d-%d)",
		control.ProtocolVersion, control.MinProtocolVersion, control.ProtocolVersion),
		"listen", srv.Addrs(), "executor", net.describe(),
		"jumbo", !cfg.NoJumbo, "traditional_mtu", cfg.TraditionalMTU, "max_bandwidth_mbps", cfg.MaxBandwidth,
		"auth", cfg.Keys.Configured(), "max_connections", cfg.MaxConnections, "gso", !lo.NoGSO)
	if err := srv.Serve(ctx); err != nil {
		return cli.Exit("ERROR: "+err.Error(), 1)
	}
	log.Info("udpstp server stopped")
	return nil
}

// serverLogger logs to standard error: warnings and the start and end of
// tests by default, Sub-Intervals with -v, rate adjustments with -D.
func serverLogger(cfg *control.ServerConfig) *slog.Logger {
	level := slog.LevelInfo
	if cfg.Debug {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
