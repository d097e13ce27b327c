package main

import (
	"log/slog"
	"net/netip"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/engine"
)

// engineNet gives the Control Phase the engine's sockets and executors:
// one Engine Thread per Test Connection.
type engineNet struct {
	noGSO bool
	log   *slog.Logger
}

// newServerNet returns the executor the server runs its Data Phases on.
func newServerNet(lo localOptions, log *slog.Logger) *engineNet {
	return &engineNet{noGSO: lo.NoGSO, log: log}
}

// describe says how Data Phases run, for the server's start-up log line.
func (n *engineNet) describe() string {
	return "one Engine Thread per Test Connection"
}

func (n *engineNet) ListenUDP(laddr netip.AddrPort, o control.SocketOptions) (control.Socket, error) {
	s, err := engine.OpenUDP(laddr, engine.SocketOptions{
		Family: int(o.Family), V6Only: o.V6Only, SockBuf: o.SockBuf, NoGSO: n.noGSO,
	})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return s, nil
}

func (n *engineNet) RunDataPhase(sock control.Socket, core *dataphase.Conn, onEvent func(dataphase.Event)) control.DataPhase {
	return engine.RunConn(sock.(*engine.Socket), core, onEvent, n.log)
}
