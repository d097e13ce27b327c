package client

import (
	"io"

	"github.com/udpstp/udpstp/report"
)

// Stream is an observer (Options.Observe) that writes the run's events as
// they happen, one JSON object per line (report.StreamEncoder; the format
// is docs/json-stream.md): --json-stream. The run's own report should then
// go nowhere (Options.Out io.Discard): the end event carries it.
type Stream struct {
	enc  *report.StreamEncoder
	plan Plan
}

// NewStream returns a Stream writing to w the events of a run with plan:
// with a Plan that is not zero, each event says which direction and which
// test of it (report.StreamTag).
func NewStream(w io.Writer, plan Plan) *Stream {
	return &Stream{enc: report.NewStreamEncoder(w), plan: plan}
}

// Err is the first error writing the stream.
func (s *Stream) Err() error { return s.enc.Err() }

// Observe writes the event ev stands for, if any.
func (s *Stream) Observe(ev Event) {
	var tag report.StreamTag
	if ev.Kind != EventEnd {
		tag.Run = ev.Run
		if s.plan.Bidirectional && ev.Kind != EventRunEnd {
			tag.Direction = "downstream"
			if ev.Upstream {
				tag.Direction = "upstream"
			}
		}
	}
	s.enc.Tag(tag)
	switch ev.Kind {
	case EventStart:
		s.enc.Start(ev.Info)
	case EventConnected:
		cc := ev.Activated
		g := &cc.Granted
		s.enc.Connected(report.StreamConn{
			Connection: ev.Conn + 1, Host: ev.Server.Host, HostIPAddress: cc.Server.Addr().Unmap().String(),
			ControlPort: int(cc.Server.Port()), TestPort: int(cc.TestPeer.Port()),
			ClientIPAddress: cc.Local.Addr().Unmap().String(), ClientPort: int(cc.Local.Port()),
			ProtocolVersion: int(cc.Setup.ProtocolVer),
			TestInterval:    int(g.TestIntTime), SubInterval: int(cc.Params.SubIntPeriod.Milliseconds()),
			StatusFeedback: int(g.TrialInt),
		})
	case EventSubInterval, EventAggregate:
		if ev.Interval != nil {
			s.enc.SubInterval(ev.Interval)
		}
	case EventWarning:
		s.enc.Message(report.StreamWarning, ev.Conn, ev.Code, ev.Text)
	case EventError:
		s.enc.Message(report.StreamError, ev.Conn, ev.Code, ev.Text)
	case EventRunEnd:
		s.enc.RunEnd(ev.Status)
	case EventEnd:
		s.enc.End(ev.Document)
	}
}
