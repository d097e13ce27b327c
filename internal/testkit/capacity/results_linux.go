package capacity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/netlab"
	"github.com/udpstp/udpstp/report/resultdoc"
)

// Results: the table make bench prints, OB-UDPST's and our client's
// maxima, and the median of repeated runs.

// Table formats results as a Markdown table.
func Table(rs []*Result) string {
	var b strings.Builder
	b.WriteString("| server | direction | N | delivered % of plan | Skipped Bursts | send lag p50 / p99 (µs) | stamp to arrival p50 / p99 (µs) | server CPU | server wake-ups/s | busiest thread CPU / wake-ups/s | syscalls/packet | generator CPU | other load (CPU) | notes |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rs {
		dir := "down"
		if r.Upstream {
			dir = "up"
		}
		sk := "n/a"
		if r.SkippedBursts >= 0 {
			sk = strconv.FormatInt(r.SkippedBursts, 10)
		}
		notes := slices.Clone(r.Notes)
		if r.RcvbufErrsGen > 0 {
			notes = append(notes, fmt.Sprintf("generator buffer overflows %d", r.RcvbufErrsGen))
		}
		if r.RcvbufErrsSrv > 0 {
			notes = append(notes, fmt.Sprintf("server buffer overflows %d", r.RcvbufErrsSrv))
		}
		if r.Upstream && r.GenSkipped > 0 {
			notes = append(notes, "generator skipped Bursts")
		}
		if r.ServerRunq > 0.05 {
			notes = append(notes, fmt.Sprintf("server waited for its CPU %.0f ms/s", 1000*r.ServerRunq))
		}
		lag, gen := fmt.Sprintf("%d / %d", r.LagP50.Microseconds(), r.LagP99.Microseconds()), fmt.Sprintf("%.2f", r.GenCPU)
		age := "n/a"
		if r.AgeP50 != 0 {
			age = fmt.Sprintf("%d / %d", r.AgeP50.Microseconds(), r.AgeP99.Microseconds())
		}
		if r.Floor {
			lag, gen = "n/a", "n/a"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.2f | %s | %s | %s | %.3f | %.0f | %.3f / %.0f | %s | %s | %.2f | %s |\n",
			r.Server, dir, r.N, r.Share(), sk, lag, age,
			r.ServerCPU, r.ServerWakeups, r.BusiestCPU, r.BusiestWakeups, formatPerPacket(r.SyscallsPerPacket), gen, r.OtherCPU, strings.Join(notes, "; "))
	}
	return b.String()
}

// ClientMax runs one test of a client binary (udpstp or OB-UDPST) against
// a server of the same kind in the lab and returns its maximum IP-layer
// capacity in Mbit/s.
func ClientMax(ctx context.Context, lab *netlab.Lab, s Server, port int, upstream bool, seconds int, tmp string) (float64, error) {
	var mtuArgs []string
	if lab.Config().MTU <= netlab.DefaultMTU {
		// Datagrams for a 1500-byte MTU and no jumbo sizes, on both ends
		// (they must agree): both implementations otherwise use 9 KB
		// datagrams above 1 Gbit/s, which a 1500-byte path fragments
		// (and OB-UDPST then refuses GSO and ends the test; with -T alone
		// it still does).
		mtuArgs = []string{"-j", "-T"}
	}
	srv, err := startServer(lab, s, port, -1, tmp, mtuArgs...)
	if err != nil {
		return 0, err
	}
	defer srv.stop()
	dir := "-d"
	if upstream {
		dir = "-u"
	}
	args := append(mtuArgs, dir, "-f", "json", "-t", strconv.Itoa(seconds), "-p", strconv.Itoa(port), lab.ServerAddr.String())
	if s.Kind == Udpstp {
		args = append([]string{"client"}, args...)
	}
	cmd := lab.Command(lab.ClientNS, s.Bin, args...)
	cmd.Env = append(os.Environ(), s.Env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := lastLines(errb.Bytes(), 3)
		if i := bytes.Index(out.Bytes(), []byte(`"ErrorMessage"`)); i >= 0 {
			msg += " " + string(out.Bytes()[i:min(len(out.Bytes()), i+160)])
		}
		return 0, fmt.Errorf("%s client: %v: %s", s.Name, err, msg)
	}
	return parseMax(out.Bytes())
}

// parseMax reads Output.AtMax.MaxIPLayerCapacity of the client's JSON
// result (udpstp's or OB-UDPST's).
func parseMax(b []byte) (float64, error) {
	d, err := resultdoc.DecodeTest(b)
	if err != nil {
		return 0, fmt.Errorf("JSON result: %w", err)
	}
	if d.Output == nil || d.Output.AtMax == nil || d.Output.AtMax.MaxIPLayerCapacity == nil {
		return 0, errors.New("no MaxIPLayerCapacity in the JSON result")
	}
	return *d.Output.AtMax.MaxIPLayerCapacity, nil
}

// median is the median of v (the mean of the middle two for an even
// count); it sorts v.
func median(v []float64) float64 {
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// Median folds repeated runs of one server, direction and N into one
// result: the median of each figure, and every run's delivered share in a
// note so that a bimodal spread shows.
func Median(rs []*Result) *Result {
	if len(rs) == 1 {
		return rs[0]
	}
	m := *rs[0]
	med := func(f func(*Result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		return median(v)
	}
	m.Planned, m.Delivered = 100, med(func(r *Result) float64 { return r.Share() })
	m.SkippedBursts = int64(med(func(r *Result) float64 { return float64(r.SkippedBursts) }))
	m.GenSkipped = int64(med(func(r *Result) float64 { return float64(r.GenSkipped) }))
	m.LagP50 = time.Duration(med(func(r *Result) float64 { return float64(r.LagP50) }))
	m.LagP99 = time.Duration(med(func(r *Result) float64 { return float64(r.LagP99) }))
	m.AgeP50 = time.Duration(med(func(r *Result) float64 { return float64(r.AgeP50) }))
	m.AgeP99 = time.Duration(med(func(r *Result) float64 { return float64(r.AgeP99) }))
	m.ServerCPU = med(func(r *Result) float64 { return r.ServerCPU })
	m.ServerWakeups = med(func(r *Result) float64 { return r.ServerWakeups })
	m.BusiestCPU = med(func(r *Result) float64 { return r.BusiestCPU })
	m.BusiestWakeups = med(func(r *Result) float64 { return r.BusiestWakeups })
	m.SyscallsPerPacket = med(func(r *Result) float64 { return r.SyscallsPerPacket })
	m.ServerRunq = med(func(r *Result) float64 { return r.ServerRunq })
	m.OtherCPU = med(func(r *Result) float64 { return r.OtherCPU })
	m.GenCPU = med(func(r *Result) float64 { return r.GenCPU })
	m.RcvbufErrsGen = int64(med(func(r *Result) float64 { return float64(r.RcvbufErrsGen) }))
	m.RcvbufErrsSrv = int64(med(func(r *Result) float64 { return float64(r.RcvbufErrsSrv) }))
	shares := make([]string, len(rs))
	m.Notes = nil
	for i, r := range rs {
		shares[i] = fmt.Sprintf("%.2f", r.Share())
		for _, n := range r.Notes {
			if !slices.Contains(m.Notes, n) {
				m.Notes = append(m.Notes, n)
			}
		}
	}
	m.Notes = append([]string{fmt.Sprintf("median of %d runs (delivered %s)", len(rs), strings.Join(shares, ", "))}, m.Notes...)
	return &m
}
