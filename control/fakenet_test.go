package control

import (
	"log/slog"
	"net/netip"
	"testing"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/memnet"
)

// memnet's sockets and Data Phases are the Control Phase's (memnet cannot
// import control to say so itself); fakeNet is its Network.
var (
	_ Socket    = (*memnet.Socket)(nil)
	_ DataPhase = (*memnet.DataPhase)(nil)
	_ Network   = fakeNet{}
)

// fakeNet is the in-memory network (internal/testkit/memnet, which cannot import
// control) as a Network.
type fakeNet struct{ *memnet.Net }

func (n fakeNet) ListenUDP(laddr netip.AddrPort, o SocketOptions) (Socket, error) {
	s, err := n.Listen(laddr, o.Family)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return s, nil
}

func (n fakeNet) RunDataPhase(_ Socket, core *dataphase.Conn, onEvent func(dataphase.Event)) DataPhase {
	return n.Run(core, onEvent)
}

// inMemory starts a server with options o on an in-memory wire and returns
// it with a client network on the same wire; the server stops with the
// test.
func inMemory(t *testing.T, cfg ServerConfig, o ServerOptions) (*Server, fakeNet, *memnet.Wire) {
	t.Helper()
	w := memnet.NewWire()
	cfg.BindAddrs = []string{"127.0.0.1"}
	s, err := NewServerWith(cfg, fakeNet{&memnet.Net{Wire: w}}, slog.New(slog.DiscardHandler), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(memnet.Start(s.Serve))
	return s, fakeNet{&memnet.Net{Wire: w, NextPort: 50000}}, w
}
