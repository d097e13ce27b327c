package report

// The server performance statistics file of `udpst -G file`
// (OB-UDPST 9.0.0's): a header, one data record per 10 s, the counters
// since start. The layout is OB-UDPST's, line for line: top-level keys one
// per line without indentation, tabs inside the records, every average
// with two decimals, timestamps as sec.usec, so that what reads its files
// reads ours.

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

// Timing of the -G file (OB-UDPST's STATS_RECORD_INT, STATS_FILE_INT and
// the spread of the first file).
const (
	StatsRecordInterval = 10 * time.Second
	StatsFileInterval   = 300 * time.Second
	StatsFirstSpread    = 290 * time.Second // the first file comes 10..300 s after start
)

// ServerStatsFile is one -G file.
type ServerStatsFile struct {
	HostName       string // the bind host argument, "" if none
	HostIPAddress  string // its address, "" if none
	ControlPort    int
	ProcessID      int
	JumboDatagrams bool
	TraditionalMTU bool
	GSOEnabled     bool
	MaxConnections int
	MaxBandwidth   int // server -B, 0 = none
	Records        []ServerStatsRecord
	Counters       ServerStatsCounters
	ProcessUptime  int64 // seconds since the process started
}

// ServerStatsRecord is one data record: the maxima and averages of one
// record interval.
type ServerStatsRecord struct {
	Start, End time.Time
	Max        ServerStatsMaxima
	Avg        ServerStatsAverages
}

// ServerStatsMaxima are a record's "maximum" values.
type ServerStatsMaxima struct {
	// allocated
	ConnectionCount     int
	DownstreamBandwidth int // Mbps
	UpstreamBandwidth   int // Mbps
	// system: most datagrams refused / accepted by one send call, read by
	// one receive call, sockets ready in one wait, ticks merged into one
	// timer pass
	TxOverrunSize     int
	TxBurstSize       int
	RxBurstSize       int
	FdReadySize       int
	TimerCoalesceSize int
}

// ServerStatsAverages are a record's "average" values: rates per second
// over the record's duration, sizes as means per event.
type ServerStatsAverages struct {
	QueuedTxIPRateMbps, QueuedTxDatagramRate float64

	DeliveredTxIPRateMbps, DeliveredTxDatagramRate float64
	DeliveredTxLossRate, DeliveredTxOooDupRate     float64
	DeliveredRxIPRateMbps, DeliveredRxDatagramRate float64
	DeliveredRxLossRate, DeliveredRxOooDupRate     float64

	TxOverrunRate, TxOverrunSize         float64
	TxBurstRate, TxBurstSize             float64
	RxBurstRate, RxBurstSize             float64
	FdReadyRate, FdReadySize             float64
	TimerCoalesceRate, TimerCoalesceSize float64

	TxMessageRate, RxMessageRate           float64
	LocMessageLossRate, RemMessageLossRate float64
	LocTrafficStopRate, RemTrafficStopRate float64
}

// ServerStatsCounters are the file's "counters": totals since start.
type ServerStatsCounters struct {
	Setup      StatsSetupCounters
	Activation StatsActivationCounters
	Control    StatsControlCounters
	// Data are the Data Phases' counters; counters.data shows those of
	// statsDataCounters.
	Data dataphase.Counts
}

// StatsSetupCounters are counters.setup.
type StatsSetupCounters struct {
	RequestsReceived, AcceptsSent, RejectsSent uint64
	InvalidProtocolVer, InvalidSetupOption     uint64
	BandwidthExceeded, ConnectionCreateFail    uint64
	LegacyProtocolVer                          uint64
}

// StatsActivationCounters are counters.activation.
type StatsActivationCounters struct {
	TimeoutWaiting, RequestsReceived, AcceptsSent, RejectsSent, BadParameter uint64
}

// StatsControlCounters are counters.control.
type StatsControlCounters struct {
	InvalidSize, InvalidFormat, InvalidChecksum, AuthFailure, BadAuthTime uint64
}

// statsDataCounters are the Data Phase counters of counters.data, in
// OB-UDPST's order; their names are the file's keys. (Ours beyond these
// stay out of the file, whose keys are OB-UDPST's.)
var statsDataCounters = [...]dataphase.Counter{
	dataphase.CountLoadInvalidSize, dataphase.CountLoadInvalidFormat, dataphase.CountLoadInvalidChecksum,
	dataphase.CountStatusInvalidSize, dataphase.CountStatusInvalidFormat, dataphase.CountStatusInvalidChecksum,
}

// ServerStatsSample is a server's traffic counters, cumulative since it
// started, at one time. Two samples make a record's averages.
type ServerStatsSample struct {
	At time.Time

	// Load datagrams the server's sockets accepted for sending, and
	// their bytes at the IP layer (headers included).
	QueuedTxDatagrams, QueuedTxIPBytes uint64
	// Send calls cut short by backpressure and the datagrams they left;
	// send calls and the datagrams they took; receive calls and the
	// datagrams they read. (No sample has readiness waits or merged timer
	// ticks: the fd_ready_* and timer_coalesce_* averages stay 0.)
	TxOverrunEvents, TxOverrunDatagrams uint64
	TxBursts, TxBurstDatagrams          uint64
	RxBursts, RxBurstDatagrams          uint64
	// Data are the Data Phases' counters: the load as the receiving end
	// reported it in Status PDUs (the server's, tx, as its clients
	// received it; the clients', rx, as the server did), the Status PDUs
	// sent, received and lost, the traffic stops.
	Data dataphase.Counts
}

// NewServerStatsRecord makes the record of the interval from prev to cur
// with the maxima seen in it. Rates are per second over the interval's
// duration in whole milliseconds, as OB-UDPST computes them; counters that
// went backwards count 0.
func NewServerStatsRecord(prev, cur ServerStatsSample, m ServerStatsMaxima) ServerStatsRecord {
	r := ServerStatsRecord{Start: prev.At, End: cur.At, Max: m}
	ms := cur.At.Sub(prev.At).Milliseconds()
	if ms <= 0 {
		return r
	}
	rate := func(c, p uint64) float64 {
		if c < p {
			return 0
		}
		return float64(c-p) * 1000 / float64(ms)
	}
	mbps := func(c, p uint64) float64 { return rate(c, p) * 8 / 1e6 }
	size := func(nc, np, ec, ep uint64) float64 {
		if ec <= ep || nc < np {
			return 0
		}
		return float64(nc-np) / float64(ec-ep)
	}
	data := func(k dataphase.Counter) float64 { return rate(cur.Data[k], prev.Data[k]) }
	a := &r.Avg
	a.QueuedTxIPRateMbps = mbps(cur.QueuedTxIPBytes, prev.QueuedTxIPBytes)
	a.QueuedTxDatagramRate = rate(cur.QueuedTxDatagrams, prev.QueuedTxDatagrams)
	a.DeliveredTxIPRateMbps = mbps(cur.Data[dataphase.CountTxIPBytes], prev.Data[dataphase.CountTxIPBytes])
	a.DeliveredTxDatagramRate = data(dataphase.CountTxDatagrams)
	a.DeliveredTxLossRate = data(dataphase.CountTxLoss)
	a.DeliveredTxOooDupRate = data(dataphase.CountTxOooDup)
	a.DeliveredRxIPRateMbps = mbps(cur.Data[dataphase.CountRxIPBytes], prev.Data[dataphase.CountRxIPBytes])
	a.DeliveredRxDatagramRate = data(dataphase.CountRxDatagrams)
	a.DeliveredRxLossRate = data(dataphase.CountRxLoss)
	a.DeliveredRxOooDupRate = data(dataphase.CountRxOooDup)
	a.TxOverrunRate = rate(cur.TxOverrunEvents, prev.TxOverrunEvents)
	a.TxOverrunSize = size(cur.TxOverrunDatagrams, prev.TxOverrunDatagrams, cur.TxOverrunEvents, prev.TxOverrunEvents)
	a.TxBurstRate = rate(cur.TxBursts, prev.TxBursts)
	a.TxBurstSize = size(cur.TxBurstDatagrams, prev.TxBurstDatagrams, cur.TxBursts, prev.TxBursts)
	a.RxBurstRate = rate(cur.RxBursts, prev.RxBursts)
	a.RxBurstSize = size(cur.RxBurstDatagrams, prev.RxBurstDatagrams, cur.RxBursts, prev.RxBursts)
	a.TxMessageRate = data(dataphase.CountStatusSent)
	a.RxMessageRate = data(dataphase.CountStatusReceived)
	a.LocMessageLossRate = data(dataphase.CountLocalStatusLoss)
	a.RemMessageLossRate = data(dataphase.CountRemoteStatusLoss)
	a.LocTrafficStopRate = data(dataphase.CountLocalTrafficStop)
	a.RemTrafficStopRate = data(dataphase.CountRemoteTrafficStop)
	return r
}

// Render prints the file as OB-UDPST writes it, date-times in loc (nil:
// time.Local).
func (f *ServerStatsFile) Render(loc *time.Location) []byte {
	if loc == nil {
		loc = time.Local
	}
	w := &statsWriter{loc: loc}
	var start, end time.Time
	if n := len(f.Records); n > 0 {
		start, end = f.Records[0].Start, f.Records[n-1].End
	}
	w.b.WriteString("{\n")
	w.str(0, "host_name", f.HostName)
	w.str(0, "host_ip_address", f.HostIPAddress)
	w.int(0, "control_port", int64(f.ControlPort))
	w.int(0, "process_id", int64(f.ProcessID))
	w.str(0, "software_version", softwareVersion())
	w.int(0, "protocol_version", protocolVersion)
	w.raw(0, "schema_version", "1.0")
	w.bool(0, "jumbo_datagrams", f.JumboDatagrams)
	w.bool(0, "traditional_mtu", f.TraditionalMTU)
	w.bool(0, "gso_enabled", f.GSOEnabled)
	w.int(0, "max_connections", int64(f.MaxConnections))
	w.int(0, "max_bandwidth", int64(f.MaxBandwidth))
	w.stamp(0, "start", start)
	w.b.WriteString(`"data_records": [`)
	for i := range f.Records {
		if i > 0 {
			w.b.WriteString(", ")
		}
		w.record(&f.Records[i])
	}
	w.b.WriteString("],\n")
	w.int(0, "data_record_count", int64(len(f.Records)))
	w.counters(&f.Counters)
	w.int(0, "process_uptime", f.ProcessUptime)
	w.stamp(0, "end", end)
	w.b.Truncate(w.b.Len() - 2) // the last ",\n"
	w.b.WriteString("\n}\n")
	return w.b.Bytes()
}

// statsWriter prints key lines at a depth of tabs, each ending ",\n";
// close removes the comma of the last line of an object.
type statsWriter struct {
	b   bytes.Buffer
	loc *time.Location
}

func (w *statsWriter) key(depth int, k string) {
	for range depth {
		w.b.WriteByte('\t')
	}
	w.b.WriteString(strconv.Quote(k))
	w.b.WriteString(": ")
}

func (w *statsWriter) raw(depth int, k, v string) {
	w.key(depth, k)
	w.b.WriteString(v)
	w.b.WriteString(",\n")
}

func (w *statsWriter) str(depth int, k, v string) { w.raw(depth, k, strconv.Quote(v)) }
func (w *statsWriter) int(depth int, k string, v int64) {
	w.raw(depth, k, strconv.FormatInt(v, 10))
}
func (w *statsWriter) uint(depth int, k string, v uint64) {
	w.raw(depth, k, strconv.FormatUint(v, 10))
}
func (w *statsWriter) bool(depth int, k string, v bool) { w.raw(depth, k, strconv.FormatBool(v)) }
func (w *statsWriter) num(depth int, k string, v float64) {
	w.raw(depth, k, strconv.FormatFloat(v, 'f', 2, 64))
}

// stamp prints <prefix>_timestamp (sec.usec) and <prefix>_datetime.
func (w *statsWriter) stamp(depth int, prefix string, t time.Time) {
	us := t.UnixMicro()
	w.raw(depth, prefix+"_timestamp", fmt.Sprintf("%d.%06d", us/1e6, us%1e6))
	w.str(depth, prefix+"_datetime", StatsDateTime(t, w.loc))
}

// open starts an object value; close ends it.
func (w *statsWriter) open(depth int, k string) {
	w.key(depth, k)
	w.b.WriteString("{\n")
}

func (w *statsWriter) close(depth int) {
	w.b.Truncate(w.b.Len() - 2)
	w.b.WriteByte('\n')
	for range depth {
		w.b.WriteByte('\t')
	}
	w.b.WriteString("},\n")
}

func (w *statsWriter) record(r *ServerStatsRecord) {
	w.b.WriteString("{\n")
	w.stamp(1, "start", r.Start)
	w.open(1, "maximum")
	w.open(2, "allocated")
	w.int(3, "connection_count", int64(r.Max.ConnectionCount))
	w.int(3, "downstream_bandwidth", int64(r.Max.DownstreamBandwidth))
	w.int(3, "upstream_bandwidth", int64(r.Max.UpstreamBandwidth))
	w.close(2)
	w.open(2, "system")
	w.int(3, "tx_overrun_size", int64(r.Max.TxOverrunSize))
	w.int(3, "tx_burst_size", int64(r.Max.TxBurstSize))
	w.int(3, "rx_burst_size", int64(r.Max.RxBurstSize))
	w.int(3, "fd_ready_size", int64(r.Max.FdReadySize))
	w.int(3, "timer_coalesce_size", int64(r.Max.TimerCoalesceSize))
	w.close(2)
	w.close(1)
	a := &r.Avg
	w.open(1, "average")
	w.open(2, "queued")
	w.num(3, "tx_ip_rate_mbps", a.QueuedTxIPRateMbps)
	w.num(3, "tx_datagram_rate", a.QueuedTxDatagramRate)
	w.close(2)
	w.open(2, "delivered")
	w.num(3, "tx_ip_rate_mbps", a.DeliveredTxIPRateMbps)
	w.num(3, "tx_datagram_rate", a.DeliveredTxDatagramRate)
	w.num(3, "tx_loss_rate", a.DeliveredTxLossRate)
	w.num(3, "tx_ooo_dup_rate", a.DeliveredTxOooDupRate)
	w.num(3, "rx_ip_rate_mbps", a.DeliveredRxIPRateMbps)
	w.num(3, "rx_datagram_rate", a.DeliveredRxDatagramRate)
	w.num(3, "rx_loss_rate", a.DeliveredRxLossRate)
	w.num(3, "rx_ooo_dup_rate", a.DeliveredRxOooDupRate)
	w.close(2)
	w.open(2, "system")
	w.num(3, "tx_overrun_rate", a.TxOverrunRate)
	w.num(3, "tx_overrun_size", a.TxOverrunSize)
	w.num(3, "tx_burst_rate", a.TxBurstRate)
	w.num(3, "tx_burst_size", a.TxBurstSize)
	w.num(3, "rx_burst_rate", a.RxBurstRate)
	w.num(3, "rx_burst_size", a.RxBurstSize)
	w.num(3, "fd_ready_rate", a.FdReadyRate)
	w.num(3, "fd_ready_size", a.FdReadySize)
	w.num(3, "timer_coalesce_rate", a.TimerCoalesceRate)
	w.num(3, "timer_coalesce_size", a.TimerCoalesceSize)
	w.close(2)
	w.open(2, "status")
	w.num(3, "tx_message_rate", a.TxMessageRate)
	w.num(3, "rx_message_rate", a.RxMessageRate)
	w.num(3, "loc_message_loss_rate", a.LocMessageLossRate)
	w.num(3, "rem_message_loss_rate", a.RemMessageLossRate)
	w.num(3, "loc_traffic_stop_rate", a.LocTrafficStopRate)
	w.num(3, "rem_traffic_stop_rate", a.RemTrafficStopRate)
	w.close(2)
	w.close(1)
	w.stamp(1, "end", r.End)
	w.b.Truncate(w.b.Len() - 2)
	w.b.WriteString("\n}")
}

func (w *statsWriter) counters(c *ServerStatsCounters) {
	w.open(0, "counters")
	w.open(1, "setup")
	s := &c.Setup
	w.uint(2, "requests_received", s.RequestsReceived)
	w.uint(2, "accepts_sent", s.AcceptsSent)
	w.uint(2, "rejects_sent", s.RejectsSent)
	w.uint(2, "invalid_protocol_ver", s.InvalidProtocolVer)
	w.uint(2, "invalid_setup_option", s.InvalidSetupOption)
	w.uint(2, "bandwidth_exceeded", s.BandwidthExceeded)
	w.uint(2, "connection_create_fail", s.ConnectionCreateFail)
	w.uint(2, "legacy_protocol_ver", s.LegacyProtocolVer)
	w.close(1)
	w.open(1, "activation")
	a := &c.Activation
	w.uint(2, "timeout_waiting", a.TimeoutWaiting)
	w.uint(2, "requests_received", a.RequestsReceived)
	w.uint(2, "accepts_sent", a.AcceptsSent)
	w.uint(2, "rejects_sent", a.RejectsSent)
	w.uint(2, "bad_parameter", a.BadParameter)
	w.close(1)
	w.open(1, "control")
	k := &c.Control
	w.uint(2, "invalid_size", k.InvalidSize)
	w.uint(2, "invalid_format", k.InvalidFormat)
	w.uint(2, "invalid_checksum", k.InvalidChecksum)
	w.uint(2, "auth_failure", k.AuthFailure)
	w.uint(2, "bad_auth_time", k.BadAuthTime)
	w.close(1)
	w.open(1, "data")
	for _, k := range statsDataCounters {
		w.uint(2, k.String(), c.Data[k])
	}
	w.close(1)
	w.close(0)
}

// StatsDateTime formats t as the file's *_datetime values: local time in
// loc with microseconds and the UTC offset ("Z" in UTC).
func StatsDateTime(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("2006-01-02T15:04:05.000000Z07:00")
}

// StatsFileName is the name of the -G file written at now: pattern
// through strftime with the local time (in loc) truncated to a multiple
// of StatsFileInterval, as OB-UDPST names it (stats_%H%M%S.json at
// 03:20:05 is stats_032000.json).
func StatsFileName(pattern string, now time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.Local
	}
	step := int64(StatsFileInterval / time.Second)
	t := time.Unix(now.Unix()/step*step, 0).In(loc)
	return Strftime(pattern, t)
}

// Strftime expands C's strftime conversions in pattern with t (the C
// locale's names). A conversion it does not know is kept as it is.
func Strftime(pattern string, t time.Time) string {
	if !strings.Contains(pattern, "%") {
		return pattern
	}
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c != '%' || i+1 == len(pattern) {
			b.WriteByte(c)
			continue
		}
		i++
		switch pattern[i] {
		case '%':
			b.WriteByte('%')
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'C':
			fmt.Fprintf(&b, "%02d", t.Year()/100)
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'k':
			fmt.Fprintf(&b, "%2d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'l':
			fmt.Fprintf(&b, "%2d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'b', 'h':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'u':
			fmt.Fprintf(&b, "%d", (int(t.Weekday())+6)%7+1)
		case 'w':
			fmt.Fprintf(&b, "%d", int(t.Weekday()))
		case 's':
			fmt.Fprintf(&b, "%d", t.Unix())
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'D':
			b.WriteString(t.Format("01/02/06"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case 'R':
			b.WriteString(t.Format("15:04"))
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		default:
			b.WriteByte('%')
			b.WriteByte(pattern[i])
		}
	}
	return b.String()
}
