package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// TestRatesGolden compares our table with `udpst -S` in each variant, from
// the table header on (OB-UDPST's banner is not ours to print).
func TestRatesGolden(t *testing.T) {
	tests := []struct {
		file string
		o    dataphase.TableOptions
		ipv6 bool
	}{
		{"srates_default.txt", dataphase.TableOptions{}, false},
		{"srates_j.txt", dataphase.TableOptions{NoJumbo: true}, false},
		{"srates_T.txt", dataphase.TableOptions{TraditionalMTU: true}, false},
		{"srates_6.txt", dataphase.TableOptions{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := golden.File(t, tt.file)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
			start := -1
			for i, l := range want {
				if strings.HasPrefix(l, "Sending Rate Table") {
					start = i
					break
				}
			}
			if start < 0 {
				t.Fatalf("%s: no \"Sending Rate Table\" header line", path)
			}
			want = want[start:]

			var out bytes.Buffer
			if err := writeRateTable(&out, tt.o, tt.ipv6); err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")

			rows := 0
			for i := 0; i < len(want) && i < len(got); i++ {
				if got[i] != want[i] {
					t.Fatalf("%s line %d differs:\n got: %q\nwant: %q", path, start+i+1, got[i], want[i])
				}
				if i >= 2 && !strings.HasPrefix(got[i], "NOTE:") {
					rows++ // past the two header lines
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%s: we print %d lines from the header on, OB-UDPST %d", path, len(got), len(want))
			}
			if rows != dataphase.RateRows {
				t.Fatalf("%s: compared %d rows, want %d", path, rows, dataphase.RateRows)
			}
		})
	}
}

func TestRatesFlags(t *testing.T) {
	var out bytes.Buffer
	app := newApp()
	app.Writer = &out
	if err := app.Run([]string{"udpstp", "rates", "-j", "-T", "-6"}); err != nil {
		t.Fatalf("rates -j -T -6: %v", err)
	}
	var want bytes.Buffer
	if err := writeRateTable(&want, dataphase.TableOptions{NoJumbo: true, TraditionalMTU: true}, true); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Fatal("rates -j -T -6 did not print the no-jumbo, traditional-MTU IPv6 table")
	}
	if !strings.Contains(out.String(), " 1152)      100     1452   100  +") {
		t.Error("row 1152 of -j -T -6 is not 100 x 1452 bytes")
	}
}

// cli stops at the first positional argument, so "rates foo -j" would
// silently ignore -j; it must be refused instead.
func TestRatesRejectsArguments(t *testing.T) {
	for _, args := range [][]string{
		{"rates", "foo"},
		{"rates", "foo", "-j"},
		{"rates", "-j", "--", "-T"},
	} {
		app := newApp()
		app.Writer = io.Discard
		app.ErrWriter = io.Discard
		err := app.Run(append([]string{"udpstp"}, args...))
		var ec cli.ExitCoder
		if !errors.As(err, &ec) || ec.ExitCode() != exitConfig {
			t.Errorf("%q: err = %v, want exit code %d", args, err, exitConfig)
			continue
		}
		bad := args[len(args)-1]
		if args[1] == "foo" {
			bad = "foo"
		}
		if msg := err.Error(); !strings.Contains(msg, `"`+bad+`"`) || strings.Contains(msg, "\n") {
			t.Errorf("%q: message %q should be one line naming %q", args, msg, bad)
		}
	}
}

func TestRatesUnknownFlag(t *testing.T) {
	app := newApp()
	app.Writer = io.Discard
	app.ErrWriter = io.Discard
	err := app.Run([]string{"udpstp", "rates", "--jumbo"})
	var ec cli.ExitCoder
	if !errors.As(err, &ec) || ec.ExitCode() != exitConfig {
		t.Fatalf("unknown flag: err = %v, want exit code %d", err, exitConfig)
	}
}

func TestUnknownCommand(t *testing.T) {
	app := newApp()
	app.Writer = io.Discard
	app.ErrWriter = io.Discard
	err := app.Run([]string{"udpstp", "rats"})
	var ec cli.ExitCoder
	if !errors.As(err, &ec) || ec.ExitCode() != exitConfig {
		t.Fatalf("unknown command: err = %v, want exit code %d", err, exitConfig)
	}
	if !strings.Contains(err.Error(), `"rats"`) {
		t.Errorf("message %q does not name the command", err)
	}
}
