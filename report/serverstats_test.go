package report

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// statsReference reads OB-UDPST's -G file from the reference data; it is
// in the repository, so a missing one fails the test.
func statsReference(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(golden.File(t, "server_perf_stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	return ourIdentity(t, b)
}

// TestGoldenServerStatsFile fills a ServerStatsFile with the
// values of OB-UDPST's own file and renders it: the bytes are the same, so
// the layout, the key order and every number format are OB-UDPST's.
func TestGoldenServerStatsFile(t *testing.T) {
	ref := statsReference(t)
	d := json.NewDecoder(bytes.NewReader(ref))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	g := getter{t: t}
	f := ServerStatsFile{
		HostName:       g.str(m, "host_name"),
		HostIPAddress:  g.str(m, "host_ip_address"),
		ControlPort:    int(g.int(m, "control_port")),
		ProcessID:      int(g.int(m, "process_id")),
		JumboDatagrams: m["jumbo_datagrams"].(bool),
		TraditionalMTU: m["traditional_mtu"].(bool),
		GSOEnabled:     m["gso_enabled"].(bool),
		MaxConnections: int(g.int(m, "max_connections")),
		MaxBandwidth:   int(g.int(m, "max_bandwidth")),
		ProcessUptime:  g.int(m, "process_uptime"),
	}
	for _, rv := range m["data_records"].([]any) {
		r := rv.(map[string]any)
		mx, av := g.obj(r, "maximum"), g.obj(r, "average")
		al, sy := g.obj(mx, "allocated"), g.obj(mx, "system")
		q, dl, as, st := g.obj(av, "queued"), g.obj(av, "delivered"), g.obj(av, "system"), g.obj(av, "status")
		f.Records = append(f.Records, ServerStatsRecord{
			Start: g.stamp(r, "start_timestamp"), End: g.stamp(r, "end_timestamp"),
			Max: ServerStatsMaxima{
				ConnectionCount: int(g.int(al, "connection_count")), DownstreamBandwidth: int(g.int(al, "downstream_bandwidth")),
				UpstreamBandwidth: int(g.int(al, "upstream_bandwidth")),
				TxOverrunSize:     int(g.int(sy, "tx_overrun_size")), TxBurstSize: int(g.int(sy, "tx_burst_size")),
				RxBurstSize: int(g.int(sy, "rx_burst_size")), FdReadySize: int(g.int(sy, "fd_ready_size")),
				TimerCoalesceSize: int(g.int(sy, "timer_coalesce_size")),
			},
			Avg: ServerStatsAverages{
				QueuedTxIPRateMbps: g.num(q, "tx_ip_rate_mbps"), QueuedTxDatagramRate: g.num(q, "tx_datagram_rate"),
				DeliveredTxIPRateMbps: g.num(dl, "tx_ip_rate_mbps"), DeliveredTxDatagramRate: g.num(dl, "tx_datagram_rate"),
				DeliveredTxLossRate: g.num(dl, "tx_loss_rate"), DeliveredTxOooDupRate: g.num(dl, "tx_ooo_dup_rate"),
				DeliveredRxIPRateMbps: g.num(dl, "rx_ip_rate_mbps"), DeliveredRxDatagramRate: g.num(dl, "rx_datagram_rate"),
				DeliveredRxLossRate: g.num(dl, "rx_loss_rate"), DeliveredRxOooDupRate: g.num(dl, "rx_ooo_dup_rate"),
				TxOverrunRate: g.num(as, "tx_overrun_rate"), TxOverrunSize: g.num(as, "tx_overrun_size"),
				TxBurstRate: g.num(as, "tx_burst_rate"), TxBurstSize: g.num(as, "tx_burst_size"),
				RxBurstRate: g.num(as, "rx_burst_rate"), RxBurstSize: g.num(as, "rx_burst_size"),
				FdReadyRate: g.num(as, "fd_ready_rate"), FdReadySize: g.num(as, "fd_ready_size"),
				TimerCoalesceRate: g.num(as, "timer_coalesce_rate"), TimerCoalesceSize: g.num(as, "timer_coalesce_size"),
				TxMessageRate: g.num(st, "tx_message_rate"), RxMessageRate: g.num(st, "rx_message_rate"),
				LocMessageLossRate: g.num(st, "loc_message_loss_rate"), RemMessageLossRate: g.num(st, "rem_message_loss_rate"),
				LocTrafficStopRate: g.num(st, "loc_traffic_stop_rate"), RemTrafficStopRate: g.num(st, "rem_traffic_stop_rate"),
			},
		})
	}
	c := g.obj(m, "counters")
	s, a, k, dt := g.obj(c, "setup"), g.obj(c, "activation"), g.obj(c, "control"), g.obj(c, "data")
	u := func(o map[string]any, key string) uint64 { return uint64(g.int(o, key)) }
	f.Counters = ServerStatsCounters{
		Setup: StatsSetupCounters{
			RequestsReceived: u(s, "requests_received"), AcceptsSent: u(s, "accepts_sent"), RejectsSent: u(s, "rejects_sent"),
			InvalidProtocolVer: u(s, "invalid_protocol_ver"), InvalidSetupOption: u(s, "invalid_setup_option"),
			BandwidthExceeded: u(s, "bandwidth_exceeded"), ConnectionCreateFail: u(s, "connection_create_fail"),
			LegacyProtocolVer: u(s, "legacy_protocol_ver"),
		},
		Activation: StatsActivationCounters{
			TimeoutWaiting: u(a, "timeout_waiting"), RequestsReceived: u(a, "requests_received"),
			AcceptsSent: u(a, "accepts_sent"), RejectsSent: u(a, "rejects_sent"), BadParameter: u(a, "bad_parameter"),
		},
		Control: StatsControlCounters{
			InvalidSize: u(k, "invalid_size"), InvalidFormat: u(k, "invalid_format"), InvalidChecksum: u(k, "invalid_checksum"),
			AuthFailure: u(k, "auth_failure"), BadAuthTime: u(k, "bad_auth_time"),
		},
		Data: dataphase.Counts{
			dataphase.CountLoadInvalidSize: u(dt, "load_invalid_size"), dataphase.CountLoadInvalidFormat: u(dt, "load_invalid_format"),
			dataphase.CountLoadInvalidChecksum: u(dt, "load_invalid_checksum"), dataphase.CountStatusInvalidSize: u(dt, "status_invalid_size"),
			dataphase.CountStatusInvalidFormat: u(dt, "status_invalid_format"), dataphase.CountStatusInvalidChecksum: u(dt, "status_invalid_checksum"),
		},
	}
	got := f.Render(time.UTC)
	if !bytes.Equal(got, ref) {
		gl, rl := strings.Split(string(got), "\n"), strings.Split(string(ref), "\n")
		for i := 0; i < len(gl) && i < len(rl); i++ {
			if gl[i] != rl[i] {
				t.Fatalf("line %d differs:\n got %q\nwant %q", i+1, gl[i], rl[i])
			}
		}
		t.Fatalf("%d lines, want %d", len(gl), len(rl))
	}
	if err := golden.SameJSONShape(got, ref); err != nil {
		t.Error(err)
	}
}

// TestGoldenServerStatsSchema renders a file built the way the
// server builds one (records from samples) and compares it with the
// reference key for key and type for type.
func TestGoldenServerStatsSchema(t *testing.T) {
	ref := statsReference(t)
	t0 := time.Unix(1796009724, 560891000)
	s0 := ServerStatsSample{At: t0}
	s1 := ServerStatsSample{At: t0.Add(10 * time.Second), QueuedTxDatagrams: 1000, QueuedTxIPBytes: 1250000,
		TxBursts: 100, TxBurstDatagrams: 1000, TxOverrunEvents: 2, TxOverrunDatagrams: 7,
		Data: dataphase.Counts{dataphase.CountTxDatagrams: 990, dataphase.CountTxIPBytes: 1237500, dataphase.CountTxLoss: 10,
			dataphase.CountStatusReceived: 200, dataphase.CountLocalStatusLoss: 3}}
	s2 := ServerStatsSample{At: t0.Add(20 * time.Second)}
	f := ServerStatsFile{HostName: "", ControlPort: 24601, ProcessID: 4242, JumboDatagrams: true, GSOEnabled: true, MaxConnections: 254,
		Records: []ServerStatsRecord{
			NewServerStatsRecord(s0, s1, ServerStatsMaxima{ConnectionCount: 1}),
			NewServerStatsRecord(s1, s2, ServerStatsMaxima{}),
		}, ProcessUptime: 20}
	got := f.Render(time.UTC)
	if err := golden.SameJSONShape(got, ref); err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	r := f.Records[0].Avg
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"queued tx Mbps", r.QueuedTxIPRateMbps, 1.0},
		{"queued tx datagrams/s", r.QueuedTxDatagramRate, 100},
		{"delivered tx Mbps", r.DeliveredTxIPRateMbps, 0.99},
		{"delivered tx loss/s", r.DeliveredTxLossRate, 1},
		{"tx bursts/s", r.TxBurstRate, 10},
		{"tx burst size", r.TxBurstSize, 10},
		{"tx overrun size", r.TxOverrunSize, 3.5},
		{"rx messages/s", r.RxMessageRate, 20},
		{"local message loss/s", r.LocMessageLossRate, 0.3},
	} {
		if diff := c.got - c.want; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if f.Records[1].Avg != (ServerStatsAverages{}) {
		t.Errorf("counters going back to 0 gave rates %+v", f.Records[1].Avg)
	}
}

func TestStatsFileName(t *testing.T) {
	at := time.Date(2026, 11, 30, 3, 20, 5, 0, time.UTC)
	for _, c := range []struct{ pattern, want string }{
		{"stats_%H%M%S.json", "stats_032000.json"},
		{"./udpst_perf_%Y%m%d-%H%M%S.json", "./udpst_perf_20261130-032000.json"},
		{"plain.json", "plain.json"},
		{"%%%j-%y-%b-%a-%F-%T-%Q", "%334-26-Nov-Mon-2026-11-30-03:20:00-%Q"},
	} {
		if got := StatsFileName(c.pattern, at, time.UTC); got != c.want {
			t.Errorf("StatsFileName(%q) = %q, want %q", c.pattern, got, c.want)
		}
	}
	if got := StatsDateTime(at.Add(1234*time.Microsecond), time.FixedZone("", 3600)); got != "2026-11-30T04:20:05.001234+01:00" {
		t.Errorf("StatsDateTime = %q", got)
	}
}

type getter struct{ t *testing.T }

func (g getter) obj(m map[string]any, k string) map[string]any {
	v, ok := m[k].(map[string]any)
	if !ok {
		g.t.Fatalf("no object %q", k)
	}
	return v
}

func (g getter) str(m map[string]any, k string) string {
	v, ok := m[k].(string)
	if !ok {
		g.t.Fatalf("no string %q", k)
	}
	return v
}

// number is the number under key k; what names its kind in the failure.
func (g getter) number(m map[string]any, k, what string) json.Number {
	n, ok := m[k].(json.Number)
	if !ok {
		g.t.Fatalf("no %s %q", what, k)
	}
	return n
}

func (g getter) int(m map[string]any, k string) int64 {
	v, err := g.number(m, k, "number").Int64()
	if err != nil {
		g.t.Fatalf("%q: %v", k, err)
	}
	return v
}

func (g getter) num(m map[string]any, k string) float64 {
	v, err := g.number(m, k, "number").Float64()
	if err != nil {
		g.t.Fatalf("%q: %v", k, err)
	}
	return v
}

// stamp reads a sec.usec timestamp exactly.
func (g getter) stamp(m map[string]any, k string) time.Time {
	n := g.number(m, k, "timestamp")
	sec, frac, _ := strings.Cut(n.String(), ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	us, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || len(frac) != 6 {
		g.t.Fatalf("%q: bad timestamp %s", k, n)
	}
	return time.UnixMicro(s*1e6 + us)
}
