package store

import (
	"net"
	"strings"
)

// defaultControlPort is OB-UDPST's control port (control.DefaultControlPort;
// store does not import control).
const defaultControlPort = "24601"

// ServerName is the name a fleet groups a server's results under. A
// probe records the server it tested as host:port, as used; the server's
// archive records itself by its --archive-name or host name, without a
// port (docs/fleet.md, "The server's archive"). So that one server is one
// row, the default port is dropped, and a host name is compared without
// case or a trailing dot: "Srv1.example.net.:24601" and "srv1.example.net"
// are one server; a server on another port keeps its port. Only the
// grouping (Fleet) and the Server filter use it: stored results keep
// their Server as written.
func ServerName(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil { // no port: a name as the archive writes it
		return strings.ToLower(strings.TrimSuffix(s, "."))
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if port == defaultControlPort {
		return host
	}
	return net.JoinHostPort(host, port)
}

// serverForms are the Server values a Server filter of s matches: s as
// given, its ServerName, and that name on the default port (a name
// without a port is the archive's, and a probe's record of the same
// server has the port).
func serverForms(s string) []string {
	forms := []string{s}
	add := func(x string) {
		for _, f := range forms {
			if f == x {
				return
			}
		}
		forms = append(forms, x)
	}
	n := ServerName(s)
	add(n)
	if _, _, err := net.SplitHostPort(n); err != nil {
		add(net.JoinHostPort(n, defaultControlPort))
	}
	return forms
}
