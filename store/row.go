package store

import (
	"encoding/json"
	"strconv"
	"time"
)

// Row is a result as `udpstp history` prints it (docs/history.md): its
// field names are the store's column names (snake_case), the same in
// CSV's header (RowColumns), JSON and NDJSON. A figure the test did not
// measure is null in JSON and empty in CSV; a time is UTC.
type Row struct {
	ID          string     `json:"id"`
	Origin      string     `json:"origin"`
	Test        string     `json:"test"`
	Agent       string     `json:"agent"`
	Server      string     `json:"server"`
	Client      string     `json:"client"`
	Start       *time.Time `json:"start"`
	End         *time.Time `json:"end"`
	Direction   string     `json:"direction"`
	Status      string     `json:"status"`
	ErrorStatus int        `json:"error_status"`
	Warning     string     `json:"warning"`
	MaxMbps     *float64   `json:"max_mbps"`
	SummaryMbps *float64   `json:"summary_mbps"`
	LossRatio   *float64   `json:"loss_ratio"`
	RTTMinMs    *float64   `json:"rtt_min_ms"`
	RTTRangeMs  *float64   `json:"rtt_range_ms"`
	DelayVarMs  *float64   `json:"delay_var_ms"`
	LoadedMs    *float64   `json:"loaded_ms"`
	RPM         *float64   `json:"rpm"`
	Grade       string     `json:"grade"`
	// CrossMbps and CrossBusy: the probe's line's other traffic
	// (docs/agent.md, "Cross-traffic"); null: not measured.
	CrossMbps *float64        `json:"cross_mbps"`
	CrossBusy bool            `json:"cross_busy"`
	Doc       json.RawMessage `json:"doc,omitempty"` // export only
}

// RowColumns are CSV's header, in Row's order (without Doc).
var RowColumns = []string{"id", "origin", "test", "agent", "server", "client", "start", "end", "direction",
	"status", "error_status", "warning", "max_mbps", "summary_mbps", "loss_ratio", "rtt_min_ms", "rtt_range_ms",
	"delay_var_ms", "loaded_ms", "rpm", "grade", "cross_mbps", "cross_busy"}

// Row is r as history prints it.
func (r *Result) Row() Row {
	t := func(v time.Time) *time.Time {
		if v.IsZero() {
			return nil
		}
		u := v.UTC()
		return &u
	}
	return Row{ID: r.ID, Origin: string(r.Origin), Test: r.Test, Agent: r.Agent, Server: r.Server, Client: r.Client,
		Start: t(r.Start), End: t(r.End), Direction: r.Direction, Status: string(r.Status), ErrorStatus: r.ErrorStatus,
		Warning: r.Warning, MaxMbps: r.MaxMbps, SummaryMbps: r.SummaryMbps, LossRatio: r.LossRatio, RTTMinMs: r.RTTMinMs,
		RTTRangeMs: r.RTTRangeMs, DelayVarMs: r.DelayVarMs, LoadedMs: r.LoadedMs, RPM: r.RPM, Grade: r.Grade,
		CrossMbps: r.CrossMbps, CrossBusy: r.CrossBusy}
}

// Record is h's CSV fields, in RowColumns' order.
func (h *Row) Record() []string {
	t := func(v *time.Time) string {
		if v == nil {
			return ""
		}
		return v.Format(time.RFC3339Nano)
	}
	f := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	return []string{h.ID, h.Origin, h.Test, h.Agent, h.Server, h.Client, t(h.Start), t(h.End), h.Direction,
		h.Status, strconv.Itoa(h.ErrorStatus), h.Warning, f(h.MaxMbps), f(h.SummaryMbps), f(h.LossRatio),
		f(h.RTTMinMs), f(h.RTTRangeMs), f(h.DelayVarMs), f(h.LoadedMs), f(h.RPM), h.Grade,
		f(h.CrossMbps), strconv.FormatBool(h.CrossBusy)}
}
