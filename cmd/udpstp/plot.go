//go:build !small

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/internal/atomicfile"
	"github.com/udpstp/udpstp/report/plot"
)

// plotCommand draws a result file, ours or OB-UDPST's, as SVG or PNG.
func plotCommand() *cli.Command {
	return getoptCommand(&cli.Command{
		Name:      "plot",
		Usage:     "draw a test result (the JSON of udpstp or OB-UDPST) as SVG or PNG",
		UsageText: "udpstp plot RESULT.json [-o FILE.svg|FILE.png]",
		Description: "Reads the JSON result of a client test, as udpstp client --output or -f json,\n" +
			"jsonb or jsonf writes it, or as OB-UDPST's udpst -f json does, and draws:\n" +
			"the IP-layer capacity of each Sub-Interval with the maximum marked, the delay\n" +
			"variation (RTT, or one-way with -o), the lost, out-of-order and duplicated\n" +
			"datagrams and, for udpstp's upstream results, the sending rate the search set.\n" +
			"udpstp's results of multi-connection tests also have each connection's\n" +
			"capacity; OB-UDPST's have only the sum. A --bidirectional result is drawn\n" +
			"with both directions on one time axis, the end of the idle baseline marked;\n" +
			"a --repeat result as each run's maximum and delay variation against its\n" +
			"number, with the median, and every run's capacity over time. The extension of the output file\n" +
			"(.svg or .png) selects the format; -o - writes SVG to standard output.",
	}, plotFlags, plotAction)
}

func plotFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, TakesFile: true,
			Usage: "write the plot to `FILE` (.svg or .png), atomically; - is SVG on standard output", DefaultText: "RESULT with .svg"},
	}
}

func plotAction(c *cli.Context) error {
	args := c.Args().Slice()
	switch len(args) {
	case 0:
		return configError("plot: a result file is needed (udpstp plot RESULT.json [-o FILE.svg|FILE.png])")
	case 1:
	default:
		return configError("plot: one result file at a time, got %d arguments", len(args))
	}
	in := args[0]
	out := c.String("output")
	if out == "" {
		out = strings.TrimSuffix(in, filepath.Ext(in)) + ".svg"
		if out == in {
			out = in + ".svg"
		}
	}
	format, err := plotFormat(out, "plot")
	if err != nil {
		return err
	}
	res, err := plot.ReadDocFile(in)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return cli.Exit(fmt.Sprintf("plot: %v", err), exitInit)
		}
		return cli.Exit(fmt.Sprintf("plot: %v", err), exitFailure)
	}
	return writePlot(c, res, in, out, format, "plot")
}

// plotFormat is the format -o FILE selects: SVG for "-" (standard
// output), else by FILE's extension; cmd names the command in the error.
func plotFormat(out, cmd string) (plot.Format, error) {
	if out == "-" {
		return plot.SVG, nil
	}
	f, err := plot.FormatOf(out)
	if err != nil {
		return f, configError("%s: %v", cmd, err)
	}
	return f, nil
}

// writePlot draws doc (read from what) in format to out: the app's
// standard output for "-", else the file, replaced atomically.
func writePlot(c *cli.Context, doc *plot.Doc, what, out string, format plot.Format, cmd string) error {
	var buf bytes.Buffer
	if err := plot.RenderDoc(&buf, doc, format); err != nil {
		return fmt.Errorf("%s: %s: %w", cmd, what, err)
	}
	if out == "-" {
		if _, err := c.App.Writer.Write(buf.Bytes()); err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		return nil
	}
	if err := atomicfile.Write(out, buf.Bytes(), 0o644); err != nil {
		return cli.Exit(fmt.Sprintf("%s: %v", cmd, err), exitInit)
	}
	return nil
}
