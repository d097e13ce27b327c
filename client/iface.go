package client

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

// ifaceRates is -E: the local interface's traffic rates from the kernel's
// own byte counters, /sys/class/net/<intf>/statistics/{rx,tx}_bytes, read
// as OB-UDPST reads them (upd_intf_stats): the files stay open, each
// sample rereads them, and the rate is the bytes since the previous
// sample over the time since it. Index 0 is the test's direction (rx
// downstream, tx upstream), 1 the other one (the export's IntfMbpsAlt).
type ifaceRates struct {
	name    string
	files   [2]*os.File
	bytes   [2]uint64
	last    time.Time // the previous sample; zero before the first
	mbps    [2]float64
	now     func() time.Time
	exports []*dataphase.Export // -O rings that carry the rates
}

// sysClassNet is where the kernel's interface statistics are; a variable
// for the tests.
var sysClassNet = "/sys/class/net"

// openIface opens intf's counters for a test in the direction upstream.
// The error is OB-UDPST's line: "OPEN ERROR: reason (path)".
func openIface(intf string, upstream bool) (*ifaceRates, error) {
	if intf == "" || strings.ContainsAny(intf, "/\x00") || intf == "." || intf == ".." {
		return nil, fmt.Errorf("ERROR: '%s' is not an interface name", intf)
	}
	names := [2]string{"rx_bytes", "tx_bytes"}
	if upstream {
		names[0], names[1] = names[1], names[0]
	}
	f := &ifaceRates{name: intf, now: time.Now}
	for i, n := range names {
		path := filepath.Join(sysClassNet, intf, "statistics", n)
		file, err := os.Open(path)
		if err != nil {
			f.close()
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("OPEN ERROR: %v (%s)", err, path)
		}
		f.files[i] = file
	}
	return f, nil
}

// start takes the first sample, as OB-UDPST does when the first PDU of the
// test goes out.
func (f *ifaceRates) start() {
	if f.last.IsZero() {
		f.read(true)
	}
}

// sample reads the counters and returns the rate in the test's direction
// since the previous sample (report.Options.InterfaceRate).
func (f *ifaceRates) sample() float64 {
	f.read(false)
	for _, e := range f.exports {
		e.SetInterfaceRates(f.mbps[0], f.mbps[1])
	}
	return f.mbps[0]
}

// read is OB-UDPST's upd_intf_stats: a counter that reads 0 (or not at
// all) is left as it was; the sample time moves only when the second
// counter was read.
func (f *ifaceRates) read(initialize bool) {
	now := f.now()
	var buf [32]byte
	for i, file := range f.files {
		n, _ := file.ReadAt(buf[:], 0)
		v, err := strconv.ParseUint(strings.TrimSpace(string(buf[:n])), 10, 64)
		if err != nil || v == 0 {
			continue
		}
		if !initialize && !f.last.IsZero() {
			f.mbps[i] = counterRate(f.bytes[i], v, now.Sub(f.last))
		}
		f.bytes[i] = v
		if i == 1 {
			f.last = now
		}
	}
}

// counterRate is the Mbps of a byte counter that went from old to cur in
// d. A counter that went back wrapped, at 32 or 64 bits (OB-UDPST takes
// 32 when the old value fits in 32).
func counterRate(old, cur uint64, d time.Duration) float64 {
	us := d.Microseconds()
	if us <= 0 {
		return 0
	}
	var diff float64
	switch {
	case cur >= old:
		diff = float64(cur - old)
	case old <= 0xFFFFFFFF:
		diff = float64((0xFFFFFFFF - old) + cur + 1)
	default:
		diff = float64((^uint64(0) - old) + cur + 1)
	}
	return diff * 8 / float64(us)
}

func (f *ifaceRates) close() {
	for i, file := range f.files {
		if file != nil {
			file.Close()
			f.files[i] = nil
		}
	}
}

// InterfaceBytes reads intf's byte counters as -E reads them (the same
// files, the same checks of the name): bytes received and sent since the
// interface came up. The agent's cross-traffic figure is their change
// around a test (docs/agent.md, "Cross-traffic").
func InterfaceBytes(intf string) (rx, tx uint64, err error) {
	f, err := openIface(intf, false)
	if err != nil {
		return 0, 0, err
	}
	defer f.close()
	var vals [2]uint64
	var buf [32]byte
	for i, file := range f.files {
		n, err := file.ReadAt(buf[:], 0)
		if n == 0 && err != nil {
			return 0, 0, fmt.Errorf("reading %s's counters: %w", intf, err)
		}
		if vals[i], err = strconv.ParseUint(strings.TrimSpace(string(buf[:n])), 10, 64); err != nil {
			return 0, 0, fmt.Errorf("reading %s's counters: %w", intf, err)
		}
	}
	return vals[0], vals[1], nil
}
