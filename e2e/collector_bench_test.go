//go:build !small && linux

package e2e

// internal/testkit/pgtest runs PostgreSQL as another user: Linux only.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/collector"
	"github.com/udpstp/udpstp/internal/testkit/pgtest"
	"github.com/udpstp/udpstp/store"
)

// benchProbes is how many probes BenchmarkCollectorPostgres1000 enrols
// and has upload at once.
const benchProbes = 1000

// BenchmarkCollectorPostgres1000: 1,000 probes, each with its own client
// certificate from the collector's CA, upload one result each (a real
// OB-UDPST document) at once, each over a new TLS connection, through one
// `udpstp collector` process (the release build under make bench,
// benchBin) into PostgreSQL with fsync on (docs/fleet.md, "Figures: 1,000
// probes at once"; goal: all 1,000 stored in under 10 s). One op is the 1,000 uploads: from
// their start to the last answer, each a 200 (the collector answers once
// the store committed the result); the store is then counted. The
// figures: the wall time (s/1000-uploads), the collector's resident
// memory before the load and at its peak (VmHWM), its heap at its peak
// (the largest heap its GC trace reports, GODEBUG=gctrace=1) and its CPU
// time per op, and the clients' (this process's). The 1,000 clients run
// on the same machine: their handshakes take CPU from the collector's.
func BenchmarkCollectorPostgres1000(b *testing.B) {
	c := pgtest.Start(b, "fsync=on", "full_page_writes=on")
	dsn := c.NewDatabase(b)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	dir := b.TempDir()
	certFile, keyFile, serverCAFile := writeServerCert(b, dir)
	caDir := filepath.Join(dir, "ca")
	if err := collector.InitCA(caDir, time.Now()); err != nil {
		b.Fatal(err)
	}
	probes := enrolBenchProbes(b, st, caDir, serverCAFile)

	port := freeTCPPort(b)
	cmd := exec.Command(benchBin(), "collector", "--listen", "127.0.0.1:"+strconv.Itoa(port), "--http", "127.0.0.1:"+strconv.Itoa(freeTCPPort(b)),
		"--tls-cert", certFile, "--tls-key", keyFile, "--client-ca", filepath.Join(caDir, collector.CACertFile), "--store", dsn)
	cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
	col := start(b, cmd, procOpts{name: "collector", merge: true, ready: "collector serving", stop: os.Interrupt})
	col.stopAtCleanup(b, "collector")
	pid := col.cmd.Process.Pid
	url := fmt.Sprintf("https://127.0.0.1:%d/v1/results", port)
	doc, err := os.ReadFile(filepath.Join("..", "testdata", "obudpst", "ds_default_v4", "client.json"))
	if err != nil {
		b.Fatal(err)
	}
	before, err := statusField(fmt.Sprintf("/proc/%d/status", pid), "VmRSS")
	if err != nil {
		b.Fatal(err)
	}
	cpu0, self0 := cpuSeconds(b, pid), selfCPUSeconds(b)
	rounds := 0
	var wall time.Duration
	for b.Loop() {
		wall += uploadAll(b, url, probes, rounds, doc)
		rounds++
	}
	b.StopTimer()
	cpu, self := cpuSeconds(b, pid)-cpu0, selfCPUSeconds(b)-self0
	rs, err := st.List(ctx, store.Filter{})
	if err != nil {
		b.Fatal(err)
	}
	if len(rs) != rounds*benchProbes {
		b.Fatalf("%d results stored, want %d", len(rs), rounds*benchProbes)
	}
	peak, err := statusField(fmt.Sprintf("/proc/%d/status", pid), "VmHWM")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(wall.Seconds()/float64(rounds), "s/1000-uploads")
	b.ReportMetric(cpu/float64(rounds), "collector-CPU-s/op")
	b.ReportMetric(self/float64(rounds), "clients-CPU-s/op")
	b.ReportMetric(float64(before)/1024, "RSS-idle-MB")
	b.ReportMetric(float64(peak)/1024, "RSS-peak-MB")
	b.ReportMetric(peakHeapMB(col.log()), "heap-peak-MB")
}

// benchProbe is one enrolled probe: its credential, as its agent would
// load it (collector.LoadCredential's configuration).
type benchProbe struct {
	name string
	tls  *tls.Config
}

// enrolBenchProbes issues benchProbes credentials from the CA in caDir
// and records them in st, as `collector enroll` does.
func enrolBenchProbes(b *testing.B, st store.Store, caDir, serverCAFile string) []benchProbe {
	ca, err := collector.LoadCA(caDir)
	if err != nil {
		b.Fatal(err)
	}
	caPEM, err := os.ReadFile(serverCAFile)
	if err != nil {
		b.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		b.Fatal("no server CA")
	}
	probes := make([]benchProbe, benchProbes)
	errs := make(chan error, benchProbes)
	var wg sync.WaitGroup
	// A few at a time: each enrolment is a durable commit.
	sem := make(chan struct{}, 8)
	for i := range probes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			name := fmt.Sprintf("probe-%04d", i)
			is, err := ca.Issue(name, time.Now())
			if err != nil {
				errs <- err
				return
			}
			cert, err := tls.X509KeyPair(is.CertPEM, is.KeyPEM)
			if err != nil {
				errs <- err
				return
			}
			if err := st.(store.Probes).Enrol(context.Background(), name, is.Serial, time.Now()); err != nil {
				errs <- err
				return
			}
			probes[i] = benchProbe{name: name, tls: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, MinVersion: tls.VersionTLS12}}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return probes
}

// uploadAll has every probe upload one result (round r's) at once, each
// over a new connection, and returns the time from their start to the
// last answer; any answer but 200 fails the benchmark.
func uploadAll(b *testing.B, url string, probes []benchProbe, r int, doc []byte) time.Duration {
	bodies := make([][]byte, len(probes))
	clients := make([]*http.Client, len(probes))
	for i, p := range probes {
		start := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
		bodies[i] = fmt.Appendf(nil, `{"id":"00000000-0000-4000-8000-%06d%06d","test":"down","server":"198.18.0.1:25000","start":%q,"doc":%s}`, r, i, start, doc)
		clients[i] = &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: p.tls, DisableKeepAlives: true}}
	}
	errs := make(chan error, len(probes))
	go0 := make(chan struct{})
	var ready, done sync.WaitGroup
	for i := range probes {
		ready.Add(1)
		done.Go(func() {
			ready.Done()
			<-go0
			resp, err := clients[i].Post(url, "application/json", bytes.NewReader(bodies[i]))
			if err != nil {
				errs <- fmt.Errorf("%s: %w", probes[i].name, err)
				return
			}
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("%s: %s %s", probes[i].name, resp.Status, msg)
			}
		})
	}
	ready.Wait()
	t0 := time.Now()
	close(go0)
	done.Wait()
	took := time.Since(t0)
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 5 {
			b.Error(err)
		}
	}
	if n > 0 {
		b.Fatalf("%d of %d uploads failed", n, len(probes))
	}
	return took
}

// cpuSeconds is the user and system time of process pid (/proc/PID/stat's
// utime and stime, in clock ticks of 1/100 s).
func cpuSeconds(b *testing.B, pid int) float64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// "pid (comm) state ...": utime and stime are the 12th and 13th
	// fields after comm.
	f := bytes.Fields(stat[bytes.LastIndexByte(stat, ')')+1:])
	u, err1 := strconv.ParseFloat(string(f[11]), 64)
	s, err2 := strconv.ParseFloat(string(f[12]), 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, stat)
	}
	return (u + s) / 100
}

// selfCPUSeconds is this process's user and system time.
func selfCPUSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// gcHeap is a GC trace line's heap sizes: at the cycle's start, at its
// end, and live ("A->B->C MB").
var gcHeap = regexp.MustCompile(`(\d+)->(\d+)->\d+ MB`)

// peakHeapMB is the largest heap a GODEBUG=gctrace=1 log reports.
func peakHeapMB(log string) float64 {
	peak := 0.0
	for _, m := range gcHeap.FindAllStringSubmatch(log, -1) {
		for _, v := range m[1:3] {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				peak = max(peak, f)
			}
		}
	}
	return peak
}
