package client

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/atomicfile"
)

// What a run reads and writes besides the network, checked before the
// first Setup Request so that a wrong path fails at once rather than at
// the end of an hour's test: the result file (--output), the textfile
// (--textfile), the export file (-O) and the interface counters (-E).

// badFiles are the run's result files that failed the check: they are
// not written at the end either.
type badFiles struct{ output, textfile bool }

// preflight checks the run's files; it returns the message of the first
// problem ("" if none) and which result file it was.
func (r *run) preflight() (msg string, bad badFiles) {
	if f := r.o.failover; f != nil && f.err != "" {
		return f.err, bad
	}
	if msg := checkOutput(r.cfg); msg != "" {
		return msg, badFiles{output: true}
	}
	if f := r.cfg.TextFile; f != "" {
		if err := atomicfile.Check(f); err != nil {
			return fmt.Sprintf("FOPEN ERROR: %v (--textfile)", err), badFiles{textfile: true}
		}
	}
	if p := r.cfg.ExportFile; p != "" && !r.cfg.Upstream {
		if r.connMax > 1 && !exportUnique(p) {
			return fmt.Sprintf("ERROR: Export file name '%s' is the same for all %d Test Connections: add #i or #d (-O)", p, r.connMax), bad
		}
		for _, name := range r.exportProbes(p) {
			if err := atomicfile.CheckOpen(name); err != nil {
				return fmt.Sprintf("FOPEN ERROR: %v (-O)", err), bad
			}
		}
	}
	if r.cfg.Interface != "" {
		f, err := openIface(r.cfg.Interface, r.cfg.Upstream)
		if err != nil {
			return err.Error(), bad
		}
		r.iface = f
	}
	return "", bad
}

// checkOutput checks the result file (--output), if any: a single test's
// preflight and a plan's (plan.go) both start with it. It returns the
// message of the problem, "" if none.
func checkOutput(cfg *control.ClientConfig) string {
	if f := cfg.OutputFile; f != "" {
		if err := atomicfile.Check(f); err != nil {
			return fmt.Sprintf("FOPEN ERROR: %v (--output)", err)
		}
	}
	return ""
}

// exportProbes are the export file names of the Test Connections as far
// as they are known before the test: every connection's file when the name
// holds nothing only the activation tells (addresses, ports), else the
// first one's with those as 0, whose directory is what can be checked;
// none when the directory part depends on them.
func (r *run) exportProbes(pattern string) []string {
	late := func(s string) bool {
		return strings.Contains(s, "#l") || strings.Contains(s, "#r") || strings.Contains(s, "#s") || strings.Contains(s, "#d")
	}
	if dir, _ := filepath.Split(pattern); late(dir) {
		return nil
	}
	n := r.connMax
	if late(pattern) {
		n = 1
	}
	srv, now := r.cfg.Servers[0], time.Now()
	names := make([]string, n)
	for i := range names {
		names[i] = exportName(pattern, exportVars{Index: i, Count: r.connMax, Ident: int(r.mcIdent), Local: "0", Remote: "0",
			Host: srv.Host, ControlPort: srv.Port, Interface: r.cfg.Interface}, now)
	}
	return names
}

// startExport opens connection c's export file, if -O asked for one, and
// gives its ring to the Data Phase's Load Receiver. A file that cannot be
// opened is OB-UDPST's FOPEN ERROR line; the test goes on without it.
func (r *run) startExport(c *connState) {
	if r.cfg.ExportFile == "" || c.cc.Params.Upstream {
		return
	}
	cc := c.cc
	name := exportName(r.cfg.ExportFile, exportVars{
		Index: c.index, Count: r.connMax, Ident: int(r.mcIdent),
		Local: cc.Local.Addr().Unmap().String(), Remote: cc.TestPeer.Addr().Unmap().String(),
		RemotePort: int(cc.TestPeer.Port()), LocalPort: int(cc.Local.Port()),
		Host: c.server.Host, ControlPort: c.server.Port, Interface: r.cfg.Interface,
	}, time.Now())
	x, err := openExport(name, r.cfg.ExportAll)
	if err != nil {
		r.col.Alert(err.Error())
		r.emit(Event{Kind: EventWarning, Conn: c.index, Server: c.server, Code: -1, Text: err.Error()})
		return
	}
	c.export = x
	if r.iface != nil {
		r.iface.exports = append(r.iface.exports, x.ring)
	}
}

// closeExports ends the export writers once the Data Phases are over; a
// file that could not be written fully is an error of the run, as the
// result file's is.
func (r *run) closeExports(conns []*connState) (failed bool) {
	for _, c := range conns {
		if c.export == nil {
			continue
		}
		if err := c.export.close(); err != nil {
			fmt.Fprintf(r.o.Stderr, "udpstp: ERROR: export file: %v\n", err)
			failed = true
		}
		c.export = nil
	}
	return failed
}
