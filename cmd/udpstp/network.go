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
