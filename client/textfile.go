package client

// --textfile: the run's result for node_exporter's textfile collector
// (package metrics), written next to --output from the same JSON
// document.

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/atomicfile"
	"github.com/udpstp/udpstp/metrics"
	"github.com/udpstp/udpstp/report"
)

// writeTextfile writes doc, the run's JSON result, as cfg.TextFile and
// returns the run's status: unchanged, or report.StatusInit for a
// successful run whose file could not be written (as for OutputFile).
func writeTextfile(cfg *control.ClientConfig, doc []byte, status int, stderr io.Writer) int {
	if err := saveTextfile(cfg, doc); err != nil {
		fmt.Fprintf(stderr, "udpstp: ERROR: cannot write the textfile: %v\n", err)
		if status == 0 {
			status = report.StatusInit
		}
	}
	return status
}

// saveTextfile renders doc for the collector and writes it as a whole (a
// temporary file renamed over the name), so that it never reads half a
// file.
func saveTextfile(cfg *control.ClientConfig, doc []byte) error {
	if err := metrics.CheckTextfileName(cfg.TextFile); err != nil {
		return err
	}
	b, err := metrics.ResultTextfile(doc, resultLabels(cfg))
	if err != nil {
		return err
	}
	return atomicfile.Write(cfg.TextFile, b, 0o644)
}

// resultLabels are the textfile's labels: the servers as the command line
// named them (with the port where it is not the default), and the
// direction.
func resultLabels(cfg *control.ClientConfig) metrics.ResultLabels {
	l := metrics.ResultLabels{Direction: metrics.Downstream}
	if cfg.Upstream {
		l.Direction = metrics.Upstream
	}
	var names []string
	for _, s := range cfg.Servers {
		n := s.Host
		if s.Port != control.DefaultControlPort {
			n = net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
		}
		names = append(names, n)
	}
	l.Server = strings.Join(names, ",")
	return l
}
