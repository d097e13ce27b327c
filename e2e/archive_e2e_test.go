package e2e

// The server's archive (docs/fleet.md): one record per test served, ours
// and OB-UDPST's clients, both directions; pseudonyms; a kill -9 leaves a
// readable archive.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/server/archive"
	"github.com/udpstp/udpstp/store"
)

// archived is the part of an archive record the tests read.
type archived struct {
	UUID, Client, Direction, Status string
	ClientAddresses                 string `json:"client_addresses"`
	EndReason                       string `json:"end_reason"`
	ClientPort                      int    `json:"client_port"`
	ErrorStatus                     int    `json:"error_status"`
	Requested                       struct {
		TestIntTimeS int `json:"test_int_time_s"`
		RateIndex    int `json:"rate_index"`
	}
	SubIntervals []struct {
		N    int
		Mbps float64 `json:"mbps_l3"`
	} `json:"sub_intervals"`
	Summary struct {
		MaxMbps *float64 `json:"max_mbps_l3"`
	}
}

// readArchive reads every finished file in dir as a reader would (gzip's
// multi-member stream, lines of JSON), failing on a partial line.
func readArchive(t *testing.T, dir string) []archived {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, archive.FilePrefix+"*"+archive.FileSuffix))
	if err != nil {
		t.Fatal(err)
	}
	var recs []archived
	for _, n := range names { // names sort by the time a file was begun
		f, err := os.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		b, err := io.ReadAll(z)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			t.Fatalf("%s ends in a partial line: %q", n, b[max(0, len(b)-80):])
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			var r archived
			if err := json.Unmarshal(l, &r); err != nil {
				t.Fatalf("%s: a line that is not a record: %v: %q", n, err, l)
			}
			recs = append(recs, r)
		}
	}
	return recs
}

// stopServer interrupts a server and waits for it to exit.
func stopServer(t *testing.T, p *proc) {
	t.Helper()
	p.stop(t, os.Interrupt)
}

// checkArchived holds a record to the client's result of the same test.
func checkArchived(t *testing.T, rec archived, dir string, r testResult) {
	t.Helper()
	want := map[string]string{"-d": "down", "-u": "up"}[dir]
	if rec.Direction != want || rec.ErrorStatus != 0 || rec.Status != "ok" || rec.EndReason != "stopped" || rec.UUID == "" {
		t.Errorf("%s: record %+v", dir, rec)
	}
	if rec.Requested.TestIntTimeS != 5 || rec.Requested.RateIndex != 20 {
		t.Errorf("%s: requested options %+v, want -t 5 -I 20", dir, rec.Requested)
	}
	// The client's Sub-Intervals are the same Status PDU figures on both
	// ends: each one the server recorded has the client's rate.
	client := r.Output.IncrementalResult
	checkSubIntervals(t, len(rec.SubIntervals), len(client))
	for _, s := range rec.SubIntervals {
		if s.N < 1 || s.N > len(client) {
			continue
		}
		if c := client[s.N-1].IPLayerCapacity; math.Abs(c-s.Mbps) > 0.01+0.001*c {
			t.Errorf("%s: Sub-Interval %d: archived %.3f Mbps, client %.2f", dir, s.N, s.Mbps, c)
		}
	}
	if rec.Summary.MaxMbps == nil || math.Abs(*rec.Summary.MaxMbps-r.Output.AtMax.MaxIPLayerCapacity) > 0.01+0.001**rec.Summary.MaxMbps {
		t.Errorf("%s: archived maximum %v, client %.2f", dir, rec.Summary.MaxMbps, r.Output.AtMax.MaxIPLayerCapacity)
	}
}

// TestServerArchive: our client and (with UDPST_BIN) OB-UDPST's, each
// downstream and upstream, against our server with --archive: one record
// per test, in order, with its direction, its Sub-Intervals as the client
// reported them, the client as a pseudonym (the same for each test, not
// its address); the key file is made 0600; a clean stop leaves no .part
// file; --store (SQLite) holds the same records as server results. With
// --archive-addresses=plain the address is kept.
func TestServerArchive(t *testing.T) {
	processTest(t) // its tests run at a fixed 20 Mbit/s
	ob := optionalUdpstBin(t)
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			tmp := t.TempDir()
			arc, key, db := filepath.Join(tmp, "archive"), filepath.Join(tmp, "archive.key"), filepath.Join(tmp, "results.db")
			port := freePort(t, "127.0.0.1")
			args := []string{"server", "-p", fmt.Sprint(port), "--archive", arc, "--archive-name", "srv1"}
			if plain {
				args = append(args, "--archive-addresses", "plain")
			} else {
				args = append(args, "--archive-key", key, "--store", "sqlite:"+db)
			}
			srv := spawnServer(t, udpstpBin, append(args, "127.0.0.1")...)
			type run struct {
				dir string
				r   testResult
			}
			var runs []run
			clients := []string{udpstpBin}
			if ob != "" && !plain {
				clients = append(clients, ob)
			}
			for _, bin := range clients {
				for _, dir := range []string{"-d", "-u"} {
					a := []string{dir, "-t", "5", "-I", "20", "-p", fmt.Sprint(port), "127.0.0.1"}
					if bin == udpstpBin {
						a = append([]string{"client"}, a...)
					}
					r, code, out := runTestProc(t, bin, a...)
					checkComplete(t, r, code, out, 5)
					runs = append(runs, run{dir, r})
				}
			}
			stopServer(t, srv)
			recs := readArchive(t, arc)
			if len(recs) != len(runs) {
				t.Fatalf("%d records for %d tests: %+v\n%s", len(recs), len(runs), recs, srv.log())
			}
			ids := map[string]bool{}
			for i, rec := range recs {
				checkArchived(t, rec, runs[i].dir, runs[i].r)
				if ids[rec.UUID] {
					t.Errorf("UUID %s twice", rec.UUID)
				}
				ids[rec.UUID] = true
				if plain {
					if rec.Client != "127.0.0.1" || rec.ClientAddresses != "plain" || rec.ClientPort == 0 {
						t.Errorf("plain: client %q:%d (%s)", rec.Client, rec.ClientPort, rec.ClientAddresses)
					}
					continue
				}
				if !strings.HasPrefix(rec.Client, "p:") || len(rec.Client) != 34 || rec.ClientAddresses != "pseudonym" ||
					rec.Client != recs[0].Client || rec.ClientPort != 0 {
					t.Errorf("pseudonym: client %q port %d (%s), first %q", rec.Client, rec.ClientPort, rec.ClientAddresses, recs[0].Client)
				}
			}
			if parts, _ := filepath.Glob(filepath.Join(arc, "*"+archive.PartSuffix)); len(parts) > 0 {
				t.Errorf("a clean stop left %v", parts)
			}
			if !plain {
				fi, err := os.Stat(key)
				if err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("key file: %v, %v", fi, err)
				}
				checkStored(t, "sqlite:"+db, recs)
			}
		})
	}
}

// checkStored holds the store's server results to the archive's records:
// the same tests, each once, their figures and the record as the Doc.
func checkStored(t *testing.T, spec string, recs []archived) {
	t.Helper()
	st, err := store.Open(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rs, err := st.List(context.Background(), store.Filter{Origin: store.OriginServer})
	if err != nil || len(rs) != len(recs) {
		t.Fatalf("store: %d results for %d records: %v", len(rs), len(recs), err)
	}
	for _, rec := range recs {
		r, err := st.Get(context.Background(), rec.UUID)
		if err != nil {
			t.Fatalf("store: record %s: %v", rec.UUID, err)
		}
		var doc archived
		if err := json.Unmarshal(r.Doc, &doc); err != nil || doc.UUID != rec.UUID {
			t.Errorf("store: %s: Doc %v %q", rec.UUID, err, r.Doc)
		}
		if r.Direction != rec.Direction || r.Client != rec.Client || r.Server != "srv1" || r.Status != store.StatusOK ||
			r.MaxMbps == nil || *r.MaxMbps != *rec.Summary.MaxMbps {
			t.Errorf("store: %+v for record %+v", r, rec)
		}
	}
}

// TestServerArchiveKill: a server killed with SIGKILL while its archive
// file is open, with the last record torn (half a gzip member, as a crash
// mid-write leaves it), never shows a reader a partial line: the file is
// not yet a finished one, and the next start finishes it with its
// complete records only.
func TestServerArchiveKill(t *testing.T) {
	e2e(t)
	arc := filepath.Join(t.TempDir(), "archive")
	port := freePort(t, "127.0.0.1")
	args := []string{"server", "-p", fmt.Sprint(port), "--archive", arc, "127.0.0.1"}
	srv := spawnServer(t, udpstpBin, args...)
	for _, dir := range []string{"-d", "-u"} {
		r, code, out := ourClient(t, dir, "-t", "5", "-I", "20", "-p", fmt.Sprint(port), "127.0.0.1")
		checkComplete(t, r, code, out, 5)
	}
	var part string
	await.True(t, "two records in the open archive file", func() bool {
		ps, _ := filepath.Glob(filepath.Join(arc, "*"+archive.PartSuffix))
		if len(ps) != 1 {
			return false
		}
		part = ps[0]
		f, err := os.Open(part)
		if err != nil {
			return false
		}
		defer f.Close()
		lines, bad := archive.ReadMembers(f)
		return len(lines) == 2 && !bad
	})
	srv.kill()
	if recs := readArchive(t, arc); len(recs) != 0 {
		t.Fatalf("a reader sees %d records of the file being written", len(recs))
	}
	// The crash cut the next record's write short.
	b, err := os.ReadFile(part)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(b[:len(b)/3])
	f.Close()

	srv = spawnServer(t, udpstpBin, args...)
	if !strings.Contains(srv.log(), "records_kept=2") || !strings.Contains(srv.log(), "cut_records_dropped=1") {
		t.Errorf("start after the crash: %s", srv.log())
	}
	stopServer(t, srv)
	recs := readArchive(t, arc)
	if len(recs) != 2 || recs[0].Direction != "down" || recs[1].Direction != "up" {
		t.Fatalf("after the crash: %+v", recs)
	}
	if parts, _ := filepath.Glob(filepath.Join(arc, "*"+archive.PartSuffix)); len(parts) > 0 {
		t.Errorf("left after recovery: %v", parts)
	}
}
