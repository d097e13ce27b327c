package client

// --textfile: the run's result for node_exporter's textfile collector
// (package report/textfile), written next to --output from the same JSON
// document.

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/report"
	"github.com/udpstp/udpstp/report/textfile"
)

// writeTextfile writes doc, the run's JSON result, as cfg.TextFile and
// returns the run's status: unchanged, or report.StatusInit for a
// successful run whose file could not be written (as for OutputFile).
func writeTextfile(cfg *control.ClientConfig, doc []byte, status int, stderr io.Writer) int {
	if err := textfile.WriteResultTextfile(cfg.TextFile, doc, resultLabels(cfg)); err != nil {
		fmt.Fprintf(stderr, "udpstp: ERROR: cannot write the textfile: %v\n", err)
		if status == 0 {
			status = report.StatusInit
		}
	}
	return status
}

// resultLabels are the textfile's labels: the servers as the command line
// named them (with the port where it is not the default), and the
// direction.
func resultLabels(cfg *control.ClientConfig) textfile.ResultLabels {
	l := textfile.ResultLabels{Direction: textfile.Downstream}
	if cfg.Upstream {
		l.Direction = textfile.Upstream
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
