//go:build !small

package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/udpstp/udpstp/store"
)

// How `udpstp history` prints results: as store.Row (store/row.go), whose
// field names are the store's column names, the same in csv's header,
// json and ndjson.

// writeResults prints rs in format.
func writeResults(w io.Writer, format string, rs []store.Result) error {
	switch format {
	case "csv":
		cw := csv.NewWriter(w) // RFC 4180 quoting
		cw.Write(store.RowColumns)
		for i := range rs {
			row := rs[i].Row()
			cw.Write(row.Record())
		}
		cw.Flush()
		return cw.Error()
	case "json":
		rows := make([]store.Row, 0, len(rs))
		for i := range rs {
			rows = append(rows, rs[i].Row())
		}
		b, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case "ndjson":
		enc := json.NewEncoder(w)
		for i := range rs {
			if err := enc.Encode(rs[i].Row()); err != nil {
				return err
			}
		}
		return nil
	}
	return writeTable(w, rs)
}

// writeTable is the list for people: the time in UTC to the second, the
// figures rounded as the client's text rounds them, the ID last (whole,
// for show and plot).
func writeTable(w io.Writer, rs []store.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "START (UTC)\tTEST\tSERVER\tDIR\tSTATUS\tMAX Mbps\tSUM Mbps\tLOSS\tRTT ms\tLOADED ms\tRPM\tGRADE\tCROSS Mbps\tID")
	for i := range rs {
		r := &rs[i]
		start := "-"
		if !r.Start.IsZero() {
			start = r.Start.UTC().Format(time.DateTime)
		}
		status := string(r.Status)
		if r.ErrorStatus != 0 {
			status += " " + strconv.Itoa(r.ErrorStatus)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", start, dash(r.Test), dash(r.Server), dash(r.Direction), status,
			num(r.MaxMbps, 2), num(r.SummaryMbps, 2), sci(r.LossRatio), num(r.RTTMinMs, 0), num(r.LoadedMs, 0), num(r.RPM, 0), dash(r.Grade), crossText(r), r.ID)
	}
	return tw.Flush()
}

// crossText is the table's cross-traffic cell: "-" unmeasured, the rate,
// and "busy" when it was above the agent's threshold.
func crossText(r *store.Result) string {
	if r.CrossMbps == nil {
		return "-"
	}
	if r.CrossBusy {
		return num(r.CrossMbps, 1) + " busy"
	}
	return num(r.CrossMbps, 1)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func num(p *float64, prec int) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', prec, 64)
}

// sci is a loss ratio as OB-UDPST's -r prints it.
func sci(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2E", *p)
}

// exportResults writes the results f selects as ndjson, each with its
// document, read one at a time so that a long history is not held whole.
func exportResults(ctx context.Context, w io.Writer, st store.Store, f store.Filter) error {
	rs, err := st.List(ctx, f)
	if err != nil {
		return fmt.Errorf("history export: %w", err)
	}
	enc := json.NewEncoder(w)
	for i := range rs {
		full, err := st.Get(ctx, rs[i].ID)
		if err != nil {
			return fmt.Errorf("history export: result %s: %w", rs[i].ID, err)
		}
		row := full.Row()
		if json.Valid(full.Doc) {
			var b bytes.Buffer
			if json.Compact(&b, full.Doc) == nil {
				row.Doc = b.Bytes()
			}
		}
		if err := enc.Encode(row); err != nil {
			return err
		}
	}
	return nil
}

// showResult prints one result's figures, then its document: the
// client's text report is written as the test runs (each connection's
// Sub-Interval lines, messages where they came, the banner of the build
// that ran it) and cannot be rebuilt from the document (docs/history.md).
func showResult(w io.Writer, r *store.Result) error {
	var b strings.Builder
	line := func(label, value string) {
		if value != "" && value != "-" {
			fmt.Fprintf(&b, "%-37s %s\n", label+":", value)
		}
	}
	ms := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'f', -1, 64) + " ms"
	}
	line("Result", r.ID)
	line("Test", r.Test)
	line("Agent", r.Agent)
	line("Origin", string(r.Origin))
	line("Server", r.Server)
	line("Client", r.Client)
	if !r.Start.IsZero() {
		line("Start", r.Start.UTC().Format(time.RFC3339Nano))
	}
	if !r.End.IsZero() {
		line("End", r.End.UTC().Format(time.RFC3339Nano))
	}
	line("Direction", r.Direction)
	line("Status", fmt.Sprintf("%s (ErrorStatus %d)", r.Status, r.ErrorStatus))
	line("Message", r.Warning)
	if r.MaxMbps != nil {
		line("Maximum capacity (L3/IP)", num(r.MaxMbps, 2)+" Mbit/s")
	}
	if r.SummaryMbps != nil {
		line("Summary capacity (L3/IP)", num(r.SummaryMbps, 2)+" Mbit/s")
	}
	if up, down, ok := store.Halves(r.Doc); ok {
		// The pair's figures are the downstream half's: both, by name.
		for _, h := range []struct {
			name string
			r    *store.Result
		}{{"Upstream", &up}, {"Downstream", &down}} {
			if h.r.MaxMbps != nil && h.r.SummaryMbps != nil {
				line(h.name+" maximum/summary (L3/IP)", num(h.r.MaxMbps, 2)+"/"+num(h.r.SummaryMbps, 2)+" Mbit/s")
			}
		}
	}
	if r.LossRatio != nil {
		line("Loss ratio at the maximum", sci(r.LossRatio))
	}
	line("Minimum RTT", ms(r.RTTMinMs))
	line("RTT range", ms(r.RTTRangeMs))
	line("Delay variation at the maximum", ms(r.DelayVarMs))
	line("Round trip under load", ms(r.LoadedMs))
	if r.RPM != nil {
		line("Responsiveness", fmt.Sprintf("%s RPM (%s)", num(r.RPM, 0), r.Grade))
	}
	if r.CrossMbps != nil {
		busy := ""
		if r.CrossBusy {
			busy = " (above the agent's threshold: the test shared its line)"
		}
		line("Other traffic on the line", num(r.CrossMbps, 1)+" Mbit/s"+busy)
	}
	if len(r.Doc) == 0 {
		b.WriteString("\nNo JSON document: no test ran.\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("\nThe JSON document (the client's text report is not rebuilt from it: docs/history.md):\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	var doc bytes.Buffer
	if err := json.Indent(&doc, r.Doc, "", "  "); err != nil {
		// Not JSON (a corrupt row): as stored.
		doc.Reset()
		doc.Write(r.Doc)
	}
	_, err := w.Write(withNewline(doc.Bytes()))
	return err
}
