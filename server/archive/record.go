package archive

// A test's record as the archive writes it: JSON, one object per line.

import (
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/store"
)

// Record is one test the server served. Its JSON keys are this archive's
// own (docs/fleet.md); a key is never renamed, only added.
type Record struct {
	UUID   string `json:"uuid"`
	Server string `json:"server"` // the server's name (--archive-name, else the host name)
	// Client is the client's address, or its keyed pseudonym ("p:" and
	// 32 hex digits) with ClientAddresses "pseudonym"; ClientPort only
	// when plain.
	Client          string `json:"client"`
	ClientPort      int    `json:"client_port,omitempty"`
	ClientAddresses string `json:"client_addresses"`
	IPv6            bool   `json:"ipv6"`
	TestPort        int    `json:"test_port"`

	SetupTime time.Time `json:"setup_time"`
	StartTime time.Time `json:"start_time"`
	EndTime   time.Time `json:"end_time"`
	Direction string    `json:"direction"` // "up" or "down", as store.Result says it

	Protocol int `json:"protocol"`
	// Connection identifies the test's place in a client run of several
	// Test Connections (-C): its index, count and the run's random
	// identifier, the same on each of them.
	Connection Connection `json:"connection"`
	// Requested and Granted are the Test Activation before and after the
	// server's coercion.
	Requested Options `json:"requested"`
	Granted   Options `json:"granted"`

	SubIntervals []SubInterval `json:"sub_intervals"`
	// SubIntervalsMerged, when above 1, says the test had more
	// Sub-Intervals than a record keeps (control.MaxRecordSubIntervals):
	// each entry of SubIntervals then covers that many (the last up to
	// that many; Merged says how many), added up.
	SubIntervalsMerged int     `json:"sub_intervals_merged,omitempty"`
	Summary            Summary `json:"summary"`

	ErrorStatus int      `json:"error_status"`
	Status      string   `json:"status"` // ok, warning or error (store.Status)
	EndReason   string   `json:"end_reason"`
	EndText     string   `json:"end_reason_text"`
	Warnings    []string `json:"warnings,omitempty"`
}

// Connection is a Setup Request's multi-connection fields.
type Connection struct {
	Index int `json:"index"`
	Count int `json:"count"`
	Ident int `json:"ident"`
	// MaxBandwidthMbps is the bandwidth the Setup Request asked for (0:
	// none).
	MaxBandwidthMbps int `json:"max_bandwidth_mbps"`
}

// Options are a Test Activation's test parameters.
type Options struct {
	TestIntTimeS    int  `json:"test_int_time_s"`
	SubIntPeriodMs  int  `json:"sub_int_period_ms"`
	TrialIntMs      int  `json:"trial_int_ms"`
	LowThreshMs     int  `json:"low_thresh_ms"`
	UpperThreshMs   int  `json:"upper_thresh_ms"`
	SeqErrThresh    int  `json:"seq_err_thresh"`
	SlowAdjThresh   int  `json:"slow_adj_thresh"`
	HighSpeedDelta  int  `json:"high_speed_delta"`
	IgnoreOooDup    bool `json:"ignore_ooo_dup"`
	UseOneWayDelay  bool `json:"use_one_way_delay"`
	Algorithm       int  `json:"algorithm"`
	RateIndex       int  `json:"rate_index"` // fixed or starting row; dataphase.AutoRateIndex: automatic
	StartIndex      bool `json:"start_index"`
	RandomPayload   bool `json:"random_payload"`
	DSCPECN         int  `json:"dscp_ecn"`
	ECNCEThresh     int  `json:"ecn_ce_threshold"`
	SRAdjSuppCount  int  `json:"rate_adj_supp_count"`
	AuthMode        int  `json:"auth_mode"`
	SubIntPeriodSec int  `json:"sub_int_period_s,omitempty"` // protocols 11-19
}

// SubInterval is one Sub-Interval's figures as the Load Receiver counted
// them (OB-UDPST's IncrementalResult, by its own names here).
type SubInterval struct {
	N int `json:"n"` // the first it covers, when merged
	// Merged is how many Sub-Intervals this entry covers, when more than
	// one (Record.SubIntervalsMerged): its counts and times are their
	// sums, its rate their bytes over their time, its delay figures the
	// extremes and the mean over all their samples.
	Merged     int     `json:"merged,omitempty"`
	Mbps       float64 `json:"mbps_l3"` // IP layer: payload plus IP and UDP headers
	DurationUs uint32  `json:"duration_us"`
	AccumMs    uint32  `json:"accum_ms"`
	Datagrams  uint32  `json:"datagrams"`
	Bytes      uint64  `json:"bytes"`
	Loss       uint32  `json:"loss"`
	Ooo        uint32  `json:"ooo"`
	Dup        uint32  `json:"dup"`
	// Delay and RTT variations, ms; absent where no sample was taken.
	DelayVarMinMs *uint32  `json:"delay_var_min_ms,omitempty"`
	DelayVarAvgMs *float64 `json:"delay_var_avg_ms,omitempty"`
	DelayVarMaxMs *uint32  `json:"delay_var_max_ms,omitempty"`
	RTTVarMinMs   *uint32  `json:"rtt_var_min_ms,omitempty"`
	RTTVarMaxMs   *uint32  `json:"rtt_var_max_ms,omitempty"`
	RTTMinMs      *uint32  `json:"rtt_min_ms,omitempty"`
	CE            uint32   `json:"ce,omitempty"`
}

// Summary is the test's headline: the maximum Sub-Interval (as OB-UDPST's
// Maximum picks it: the highest rate) and the mean over them.
type Summary struct {
	SubIntervals int      `json:"sub_intervals"`
	MaxMbps      *float64 `json:"max_mbps_l3,omitempty"`
	MeanMbps     *float64 `json:"mean_mbps_l3,omitempty"`
	// At the maximum: its number, loss ratio and mean delay variation.
	MaxAt         int      `json:"max_at,omitempty"`
	LossRatio     *float64 `json:"loss_ratio,omitempty"`
	DelayVarMs    *float64 `json:"delay_var_ms,omitempty"`
	RTTMinMs      *float64 `json:"rtt_min_ms,omitempty"`
	RTTRangeMs    *float64 `json:"rtt_range_ms,omitempty"`
	Datagrams     uint64   `json:"datagrams"`
	Loss          uint64   `json:"loss"`
	TotalLossRate *float64 `json:"total_loss_ratio,omitempty"`
}

// newRecord builds the record of t; client is the client's address as
// the record keeps it (plain or pseudonym).
func newRecord(t *control.TestRecord, id, server, client string, plain bool) *Record {
	r := &Record{
		UUID: id, Server: server, Client: client, ClientAddresses: "pseudonym",
		IPv6: t.IPv6, TestPort: t.TestPort,
		SetupTime: t.Setup.UTC(), StartTime: t.Start.UTC(), EndTime: t.End.UTC(),
		Direction: "down",
		Protocol:  int(t.SetupReq.ProtocolVer),
		Connection: Connection{
			Index: int(t.SetupReq.MCIndex), Count: int(t.SetupReq.MCCount), Ident: int(t.SetupReq.MCIdent),
			MaxBandwidthMbps: int(t.SetupReq.MaxBandwidth &^ control.MaxBandwidthUpstream),
		},
		Requested:    options(&t.Requested),
		Granted:      options(&t.Granted),
		SubIntervals: make([]SubInterval, 0, len(t.SubIntervals)),
		ErrorStatus:  t.ErrorStatus,
		Status:       string(statusOf(t.ErrorStatus)),
		EndReason:    t.EndReason.Name(),
		EndText:      t.EndReason.String(),
		Warnings:     t.Warnings,
	}
	if plain {
		r.ClientAddresses, r.ClientPort = "plain", int(t.Peer.Port())
	}
	if t.Upstream {
		r.Direction = "up"
	}
	hdr := uint64(dataphase.L3Overhead(t.IPv6))
	for i := range t.SubIntervals {
		r.SubIntervals = append(r.SubIntervals, subInterval(&t.SubIntervals[i], hdr))
	}
	r.Summary = summarize(r.SubIntervals)
	if k := t.SubIntervalsMerged; k > 1 && len(r.SubIntervals) > 0 {
		// The entries are sums: the maximum and the mean are those of the
		// Sub-Intervals as they came (control.TestRecord.AddSubInterval).
		r.SubIntervalsMerged = k
		for i := range r.SubIntervals {
			r.SubIntervals[i].Merged = k
		}
		last := &r.SubIntervals[len(r.SubIntervals)-1]
		last.Merged = t.SubIntervalCount - k*(len(r.SubIntervals)-1)
		peak := subInterval(&t.Peak, hdr)
		s := &r.Summary
		s.SubIntervals = t.SubIntervalCount
		s.MaxMbps, s.MaxAt, s.DelayVarMs = &peak.Mbps, peak.N, peak.DelayVarAvgMs
		mean := t.RateSum / float64(t.SubIntervalCount)
		s.MeanMbps, s.LossRatio = &mean, nil
		if sent := float64(peak.Datagrams) + float64(peak.Loss); sent > 0 {
			ratio := float64(peak.Loss) / sent
			s.LossRatio = &ratio
		}
	}
	return r
}

func options(a *control.ActivationPDU) Options {
	return Options{
		TestIntTimeS: int(a.TestIntTime), SubIntPeriodMs: int(a.SubIntPeriod), TrialIntMs: int(a.TrialInt),
		LowThreshMs: int(a.LowThresh), UpperThreshMs: int(a.UpperThresh),
		SeqErrThresh: int(a.SeqErrThresh), SlowAdjThresh: int(a.SlowAdjThresh), HighSpeedDelta: int(a.HighSpeedDelta),
		IgnoreOooDup: a.IgnoreOooDup == 1, UseOneWayDelay: a.UseOwDelVar == 1, Algorithm: int(a.RateAdjAlgo),
		RateIndex: int(a.SRIndexConf), StartIndex: a.StartIndex(),
		RandomPayload: a.ModifierBitmap&control.ActivationRandomPayload != 0,
		DSCPECN:       int(a.DSCPECN), ECNCEThresh: int(a.ECNCEThresh), SRAdjSuppCount: int(a.SRAdjSuppCount),
		AuthMode: int(a.AuthMode), SubIntPeriodSec: int(a.SubIntPeriodSec),
	}
}

// subInterval computes one Sub-Interval's figures the way OB-UDPST's
// client computes its IncrementalResult (the rate at the IP layer: each
// datagram's payload plus hdr bytes of headers, over the measured time).
func subInterval(r *dataphase.SubIntervalResult, hdr uint64) SubInterval {
	st := &r.Stats
	s := SubInterval{
		N: int(r.Seq), DurationUs: st.DeltaTime, AccumMs: st.AccumTime,
		Datagrams: st.RxDatagrams, Bytes: st.RxBytes,
		Loss: st.SeqErrLoss, Ooo: st.SeqErrOoo, Dup: st.SeqErrDup, CE: r.CECount,
	}
	s.Mbps = r.L3Mbps(hdr)
	ms := func(v uint32) *uint32 {
		if v == dataphase.NoDelay {
			return nil
		}
		return &v
	}
	if st.DelayVarCnt > 0 {
		s.DelayVarMinMs, s.DelayVarMaxMs = ms(st.DelayVarMin), ms(st.DelayVarMax)
		avg := float64(st.DelayVarSum) / float64(st.DelayVarCnt)
		s.DelayVarAvgMs = &avg
	}
	s.RTTVarMinMs, s.RTTVarMaxMs, s.RTTMinMs = ms(st.RTTVarMin), ms(st.RTTVarMax), ms(r.RTTMinimum)
	return s
}

func summarize(subs []SubInterval) Summary {
	s := Summary{SubIntervals: len(subs)}
	if len(subs) == 0 {
		return s
	}
	var sum float64
	best := 0
	rttMin, rttMax := uint32(dataphase.NoDelay), uint32(0)
	for i := range subs {
		x := &subs[i]
		sum += x.Mbps
		if x.Mbps > subs[best].Mbps {
			best = i
		}
		s.Datagrams += uint64(x.Datagrams)
		s.Loss += uint64(x.Loss)
		if x.RTTVarMinMs != nil {
			rttMin = min(rttMin, *x.RTTVarMinMs)
		}
		if x.RTTVarMaxMs != nil {
			rttMax = max(rttMax, *x.RTTVarMaxMs)
		}
	}
	f := func(v float64) *float64 { return &v }
	b := &subs[best]
	s.MaxMbps, s.MeanMbps, s.MaxAt = f(b.Mbps), f(sum/float64(len(subs))), b.N
	if sent := float64(b.Datagrams) + float64(b.Loss); sent > 0 {
		s.LossRatio = f(float64(b.Loss) / sent)
	}
	if sent := float64(s.Datagrams) + float64(s.Loss); sent > 0 {
		s.TotalLossRate = f(float64(s.Loss) / sent)
	}
	s.DelayVarMs = b.DelayVarAvgMs
	if last := subs[len(subs)-1].RTTMinMs; last != nil {
		s.RTTMinMs = f(float64(*last))
	}
	if rttMin != dataphase.NoDelay && rttMax >= rttMin {
		s.RTTRangeMs = f(float64(rttMax - rttMin))
	}
	return s
}

// statusOf words an ErrorStatus as store.Result does.
func statusOf(errorStatus int) store.Status {
	switch {
	case errorStatus == 0:
		return store.StatusOK
	case errorStatus <= dataphase.WarnMax:
		return store.StatusWarning
	}
	return store.StatusError
}

// result is the record as a store.Result (Origin server), its JSON as the
// Doc.
func (r *Record) result(doc []byte) *store.Result {
	s := &r.Summary
	res := &store.Result{
		ID: r.UUID, Origin: store.OriginServer, Agent: r.Server, Server: r.Server, Client: r.Client,
		Start: r.StartTime, End: r.EndTime, Direction: r.Direction,
		Status: store.Status(r.Status), ErrorStatus: r.ErrorStatus,
		MaxMbps: s.MaxMbps, SummaryMbps: s.MeanMbps, LossRatio: s.LossRatio,
		RTTMinMs: s.RTTMinMs, RTTRangeMs: s.RTTRangeMs, DelayVarMs: s.DelayVarMs,
		Doc: doc,
	}
	if len(r.Warnings) > 0 {
		res.Warning = r.Warnings[len(r.Warnings)-1]
	} else if r.ErrorStatus != 0 {
		res.Warning = r.EndText
	}
	return res
}
