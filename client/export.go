package client

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/atomicfile"
	"github.com/udpstp/udpstp/report"
)

// -O [+]file: the Load Receiver's per-datagram export, in OB-UDPST's CSV.
// The Engine Thread puts each row into a dataphase.Export ring; the
// exporter's goroutine drains it a few times a second, formats the rows
// and writes them through a buffer, so the receive path makes no system
// call and no allocation for it.

// exportHeader is OB-UDPST's first line of the file.
const exportHeader = "SeqNo,PayLoad,ECNValue,SrcTxTime,DstRxTime,OWD,IntfMbps,IntfMbpsAlt,RTTTxTime,RTTRxTime,RTTRespDelay,RTT,StatusLoss\n"

// exportRing is the rows a ring holds: at the drain period below, some
// 300000 rows a second per Test Connection before any is lost, more than
// a 10 Gbit/s test of jumbo datagrams makes; about 2 MB.
const exportRing = 1 << 15

// exportDrain is how often the writer drains the rings.
const exportDrain = 100 * time.Millisecond

// exportVars are the values of OB-UDPST's #-conversions in an export file
// name (open_outputfile), for one Test Connection of a client.
type exportVars struct {
	Index, Count, Ident int    // #i (from 0), #c, #I: the multi-connection index, count and ID
	Local, Remote       string // #l, #r: the local and the server's addresses
	RemotePort          int    // #s: the server's test port (the source of the load)
	LocalPort           int    // #d: the local test port
	Host                string // #H: the server as given
	ControlPort         int    // #p
	Interface           string // #E: -E's interface
}

// exportName expands an -O file name as OB-UDPST does: its #-conversions
// (#i #c #I #l #r #s #d #M #D #H #p #E; any other '#' stays), then
// strftime's with the local time now.
func exportName(pattern string, v exportVars, now time.Time) string {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		ch := pattern[i]
		if ch != '#' || i+1 == len(pattern) {
			b.WriteByte(ch)
			continue
		}
		switch pattern[i+1] {
		case 'i':
			b.WriteString(strconv.Itoa(v.Index))
		case 'c':
			b.WriteString(strconv.Itoa(v.Count))
		case 'I':
			b.WriteString(strconv.Itoa(v.Ident))
		case 'l':
			b.WriteString(v.Local)
		case 'r':
			b.WriteString(v.Remote)
		case 's':
			b.WriteString(strconv.Itoa(v.RemotePort))
		case 'd':
			b.WriteString(strconv.Itoa(v.LocalPort))
		case 'M':
			b.WriteByte('C') // the client
		case 'D':
			b.WriteByte('D') // its export is always downstream
		case 'H':
			b.WriteString(v.Host)
		case 'p':
			b.WriteString(strconv.Itoa(v.ControlPort))
		case 'E':
			b.WriteString(v.Interface)
		default:
			b.WriteByte(ch)
			continue
		}
		i++
	}
	return report.Strftime(b.String(), now.Local())
}

// exportUnique reports whether an -O file name differs between the Test
// Connections of one run: #i and #d (the local port) do. OB-UDPST opens the
// same name once per connection and the rows of all of them mix in one
// truncated file; we refuse the name instead.
func exportUnique(pattern string) bool {
	return strings.Contains(pattern, "#i") || strings.Contains(pattern, "#d")
}

// exporter writes one Test Connection's export file.
type exporter struct {
	name string
	ring *dataphase.Export
	f    *os.File
	w    *bufio.Writer
	line []byte
	err  error // the first write error
	stop chan struct{}
	done chan struct{}
}

// openExport creates the file (truncating the regular file that exists,
// as fopen "w" does), writes the header and starts the writer. The error is OB-UDPST's
// line, "FOPEN ERROR: <name> reason".
func openExport(name string, all bool) (*exporter, error) {
	// A planted link or FIFO is refused here too (the check before the
	// test saw the name earlier): never followed, never waited on.
	f, err := atomicfile.Create(name, 0o644)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("FOPEN ERROR: <%s> %v", name, err)
	}
	x := &exporter{name: name, ring: dataphase.NewExport(all, exportRing), f: f, w: bufio.NewWriterSize(f, 1<<16),
		line: make([]byte, 0, 256), stop: make(chan struct{}), done: make(chan struct{})}
	x.write([]byte(exportHeader))
	go x.run()
	return x, nil
}

func (x *exporter) run() {
	defer close(x.done)
	t := time.NewTicker(exportDrain)
	defer t.Stop()
	for {
		select {
		case <-x.stop:
			x.drain()
			return
		case <-t.C:
			if x.drain() > 0 && x.err == nil {
				// Flushed each time, so that a reader following the file
				// sees the test as it goes.
				x.err = x.w.Flush()
			}
		}
	}
}

func (x *exporter) drain() int { return x.ring.Drain(x.row) }

func (x *exporter) write(b []byte) {
	if x.err == nil {
		_, x.err = x.w.Write(b)
	}
}

// row formats r as OB-UDPST's fprintf does:
// "%u,%u,%d,%ld.%06ld,%ld.%06ld,%d,%.2f,%.2f" and either
// ",%ld.%06ld,%ld.%06ld,%u,%u,%d" or ",,,,," (no RTT sample).
func (x *exporter) row(r *dataphase.ExportRow) {
	b := x.line[:0]
	b = strconv.AppendUint(b, uint64(r.SeqNo), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(r.Payload), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(r.ECN), 10)
	b = append(b, ',')
	b = appendTime(b, int64(r.SrcSec), int64(r.SrcNsec)/1000)
	b = append(b, ',')
	rxSec, rxUs := r.DstRx/1e9, r.DstRx%1e9/1000
	b = appendTime(b, rxSec, rxUs)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.OWD), 10)
	b = append(b, ',')
	b = strconv.AppendFloat(b, r.IntfMbps, 'f', 2, 64)
	b = append(b, ',')
	b = strconv.AppendFloat(b, r.IntfMbpsAlt, 'f', 2, 64)
	if r.HasRTT {
		b = append(b, ',')
		b = appendTime(b, int64(r.RTTSec), int64(r.RTTNsec)/1000)
		b = append(b, ',')
		b = appendTime(b, rxSec, rxUs)
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(r.RespDelay), 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(r.RTT), 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(r.StatusLoss), 10)
		b = append(b, '\n')
	} else {
		b = append(b, ",,,,,\n"...)
	}
	x.line = b
	x.write(b)
}

// appendTime appends "%ld.%06ld" of sec and us.
func appendTime(b []byte, sec, us int64) []byte {
	b = strconv.AppendInt(b, sec, 10)
	b = append(b, '.')
	for p := int64(100000); p > 1 && us < p; p /= 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, us, 10)
}

// close stops the writer after a last drain and closes the file; it
// reports a write error and rows the ring lost.
func (x *exporter) close() error {
	close(x.stop)
	<-x.done
	if x.err == nil {
		x.err = x.w.Flush()
	}
	if err := x.f.Close(); x.err == nil {
		x.err = err
	}
	if x.err != nil {
		return fmt.Errorf("writing %s: %w", x.name, x.err)
	}
	if n := x.ring.Dropped(); n > 0 {
		return fmt.Errorf("%s: %d rows lost: the writer fell behind the datagrams", x.name, n)
	}
	return nil
}
