//go:build !small

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/udpstp/udpstp/report/plot"
	"github.com/udpstp/udpstp/store"
)

// historyCommand reads the result store the agent writes (docs/history.md):
// one command whose first argument is the verb, so that its options are
// read as getopt reads them, anywhere on the line, and the manual page and
// completion list them with it.
func historyCommand() *cli.Command {
	return getoptCommand(&cli.Command{
		Name:      "history",
		Usage:     "list, show, export and plot the results in the store the agent writes",
		UsageText: "udpstp history [list] [--format table|csv|json|ndjson] [--test NAME] [--since 7d] ... | show ID [--json] | export | plot ID [-o FILE.svg|FILE.png]",
		Description: "Reads the result store (--store) without writing it, also while the agent runs.\n" +
			"list (the default) prints the results newest first, filtered by --test, --server,\n" +
			"--direction, --agent, --since and --until, at most --limit of them; show ID prints\n" +
			"one result's figures and its JSON document (--json: the document alone, as the\n" +
			"client wrote it); export writes the results --format ndjson would list, each with\n" +
			"its whole document under \"doc\"; plot ID draws the result as udpstp plot does.\n" +
			"The columns and JSON fields, and how RPM and its grade are computed, are in\n" +
			"docs/history.md.",
	}, historyFlags, historyAction)
}

// historyFormats are --format's values; table is the default on a
// terminal, ndjson otherwise.
var historyFormats = []string{"table", "csv", "json", "ndjson"}

// historyDefaultLimit is list's --limit when none is given: a page of a
// terminal, not a fleet's millions of rows. export has none.
const historyDefaultLimit = 100

func historyFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "store", Value: store.DefaultSpec,
			Usage: "read the results in `STORE`: sqlite:PATH or postgres://user@host/db"},
		&cli.StringFlag{Name: "format", Usage: "print as `FORMAT`: table, csv, json or ndjson", DefaultText: "table on a terminal, else ndjson"},
		&cli.StringFlag{Name: "test", Usage: "only the results of the test named `NAME`"},
		&cli.StringFlag{Name: "server", Usage: "only the results against `HOST:PORT`"},
		&cli.StringFlag{Name: "direction", Usage: "only the results in `DIRECTION`: up, down or bidirectional"},
		&cli.StringFlag{Name: "agent", Usage: "only the results of the probe `AGENT`"},
		&cli.StringFlag{Name: "since", Usage: "only the results started at or after `WHEN`: a duration back from now (7d, 24h, 90m) or RFC 3339"},
		&cli.StringFlag{Name: "until", Usage: "only the results started before `WHEN`: as --since"},
		&cli.IntFlag{Name: "limit", Usage: "at most `N` results, the newest (0: all)", DefaultText: fmt.Sprintf("%d for list, all for export", historyDefaultLimit)},
		&cli.BoolFlag{Name: "json", Usage: "show: print the result's JSON document alone, as the client wrote it"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, TakesFile: true,
			Usage: "plot: write the plot to `FILE` (.svg or .png), atomically; - is SVG on standard output", DefaultText: "ID.svg"},
	}
}

// openStore opens the store for reading only: history writes nothing,
// migrates nothing, creates nothing, and needs no write permission
// (docs/history.md).
func openStore(ctx context.Context, spec string) (store.Store, error) {
	return store.OpenReader(ctx, spec)
}

func historyAction(c *cli.Context) error {
	args := c.Args().Slice()
	verb := "list"
	if len(args) > 0 {
		verb, args = args[0], args[1:]
	}
	var want int // arguments the verb takes
	switch verb {
	case "list", "export":
	case "show", "plot":
		want = 1
	default:
		return configError("history: unknown verb %q (%s)", verb, strings.Join(historyVerbs, ", "))
	}
	if len(args) != want {
		if want == 1 {
			return configError("history %s: one result ID is needed (udpstp history list shows them)", verb)
		}
		return configError("history %s: unexpected argument %q", verb, args[0])
	}
	format := c.String("format")
	if format == "" {
		format = "ndjson"
		if f, ok := c.App.Writer.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			format = "table"
		}
	}
	if !slices.Contains(historyFormats, format) {
		return configError("history: unknown --format %q (%s)", format, strings.Join(historyFormats, ", "))
	}
	f, err := historyFilter(c, time.Now())
	if err != nil {
		return err
	}
	if verb == "list" && !c.IsSet("limit") {
		f.Limit = historyDefaultLimit
	}
	ctx := c.Context
	if ctx == nil {
		ctx = context.Background()
	}
	st, err := openStore(ctx, c.String("store"))
	if err != nil {
		return cli.Exit("history: "+err.Error(), exitInit)
	}
	defer st.Close()
	w := c.App.Writer
	switch verb {
	case "list":
		rs, err := st.List(ctx, f)
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
		return writeResults(w, format, rs)
	case "export":
		// export is ndjson with each document; csv has no room for a
		// document: the rows list prints, all of them (--format csv
		// printed ndjson).
		switch {
		case !c.IsSet("format") || format == "ndjson":
			return exportResults(ctx, w, st, f)
		case format == "csv":
			rs, err := st.List(ctx, f)
			if err != nil {
				return fmt.Errorf("history export: %w", err)
			}
			return writeResults(w, format, rs)
		}
		return configError("history export: --format %s: export writes ndjson (each result with its document) or csv (without)", format)
	}
	r, err := getResult(ctx, st, args[0], c.String("store"))
	if err != nil {
		return err
	}
	if len(r.Doc) == 0 && (verb == "plot" || c.Bool("json")) {
		return cli.Exit(fmt.Sprintf("history %s: result %s has no JSON document (%s: %s)", verb, r.ID, r.Status, r.Warning), exitFailure)
	}
	if verb == "show" {
		if c.Bool("json") {
			_, err := w.Write(withNewline(r.Doc))
			return err
		}
		return showResult(w, r)
	}
	return plotResult(c, r)
}

// getResult is the result with id, or an error that says the store has
// none.
func getResult(ctx context.Context, st store.Store, id, spec string) (*store.Result, error) {
	r, err := st.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, cli.Exit(fmt.Sprintf("history: no result %q in %s (udpstp history list shows the IDs)", id, spec), exitFailure)
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return r, nil
}

// historyFilter is the store.Filter of the options; a bad --since,
// --until, --direction or --limit is a command-line error.
func historyFilter(c *cli.Context, now time.Time) (store.Filter, error) {
	f := store.Filter{Test: c.String("test"), Server: c.String("server"), Agent: c.String("agent"), Limit: c.Int("limit")}
	if f.Limit < 0 {
		return f, configError("history: --limit %d: want 0 (all) or more", f.Limit)
	}
	switch d := c.String("direction"); d {
	case "", "up", "down", "bidirectional":
		f.Direction = d
	default:
		return f, configError("history: unknown --direction %q (up, down or bidirectional)", d)
	}
	// A time given always bounds, the zero time (year 1) too; only an
	// absent option is no bound.
	for _, o := range []struct {
		name string
		dst  *time.Time
		set  *bool
	}{{"since", &f.Since, &f.SinceSet}, {"until", &f.Until, &f.UntilSet}} {
		if !c.IsSet(o.name) {
			continue
		}
		s := c.String(o.name)
		t, err := parseWhen(s, now)
		if err != nil {
			return f, configError("history: --%s %q: %v", o.name, s, err)
		}
		*o.dst, *o.set = t, true
	}
	return f, nil
}

// parseWhen reads --since and --until: a duration back from now (Go's
// units, and d for days: 7d, 24h, 1h30m) or a time in RFC 3339 (or a
// date, 2006-01-02, at midnight UTC).
func parseWhen(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	d, err := parseAgo(s)
	if err != nil {
		return time.Time{}, errors.New("want a duration back from now (7d, 24h, 90m) or a time in RFC 3339 (2026-12-01T08:00:00Z)")
	}
	return now.Add(-d), nil
}

// parseAgo is a non-negative duration with days (d) allowed before Go's
// units: "7d", "1d12h".
func parseAgo(s string) (time.Duration, error) {
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		var n int
		if _, err := fmt.Sscanf(s[:i], "%d", &n); err != nil || fmt.Sprint(n) != s[:i] || n < 0 || n > 100000 {
			return 0, errors.New("bad days")
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errors.New("bad duration")
	}
	return days + d, nil
}

// plotResult draws r as udpstp plot draws a result file.
func plotResult(c *cli.Context, r *store.Result) error {
	out := c.String("output")
	if out == "" {
		out = r.ID + ".svg"
	}
	format, err := plotFormat(out, "history plot")
	if err != nil {
		return err
	}
	doc, err := plot.ReadDoc(bytes.NewReader(r.Doc))
	if err != nil {
		return cli.Exit(fmt.Sprintf("history plot: result %s: %v", r.ID, err), exitFailure)
	}
	return writePlot(c, doc, "result "+r.ID, out, format, "history plot")
}

func withNewline(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return append(b[:len(b):len(b)], '\n')
	}
	return b
}
