package report

import (
	"bytes"
	"io"
)

// StreamEncoder writes a client run as it happens, one JSON object per
// line, {"event": name, "data": {...}}, in the manner of iperf3's
// --json-stream (docs/json-stream.md): start (the Input object), connected
// (per Test Connection), subinterval (an IncrementalResult entry, per
// connection and summed), warning, error and end (the whole result
// document). Each line is one Write, flushed when w can be, so a reader
// of a pipe sees each event when it happens. The data use OB-UDPST's key
// names and number forms wherever OB-UDPST has the figure.
type StreamEncoder struct {
	w   io.Writer
	err error
	tag StreamTag
}

// StreamTag says which test of a plan (--bidirectional, --repeat) the
// next events belong to; the zero StreamTag (a single test) adds nothing.
type StreamTag struct {
	Direction string // "upstream" or "downstream" for a half of --bidirectional
	Run       int    // from 1, for a test of --repeat
}

// Stream event names.
const (
	StreamStart       = "start"
	StreamConnected   = "connected"
	StreamSubInterval = "subinterval"
	StreamWarning     = "warning"
	StreamError       = "error"
	StreamEnd         = "end"
	StreamRunEnd      = "runend"
)

// NewStreamEncoder returns an encoder writing to w.
func NewStreamEncoder(w io.Writer) *StreamEncoder { return &StreamEncoder{w: w} }

// Err is the first error writing to w; later events are not written.
func (e *StreamEncoder) Err() error { return e.err }

// Tag sets the tag of the events that follow, "direction" and "run" next
// to "event" (docs/json-stream.md).
func (e *StreamEncoder) Tag(t StreamTag) { e.tag = t }

func (e *StreamEncoder) event(name string, data *jobj) {
	line := &jobj{}
	line.str("event", name)
	if e.tag.Direction != "" {
		line.str("direction", e.tag.Direction)
	}
	if e.tag.Run > 0 {
		line.int("run", int64(e.tag.Run))
	}
	line.add("data", data)
	e.line(append(render(line, false), '\n'))
}

func (e *StreamEncoder) line(b []byte) {
	if e.err != nil {
		return
	}
	if _, e.err = e.w.Write(b); e.err == nil {
		if f, ok := e.w.(interface{ Flush() error }); ok {
			e.err = f.Flush()
		}
	}
}

// Start writes the start event: the Input object of the result document.
func (e *StreamEncoder) Start(info *TestInfo) { e.event(StreamStart, inputObject(info)) }

// StreamConn is what the connected event tells of a Test Connection.
type StreamConn struct {
	Connection      int // from 1, as the verbose text's "[i]"
	Host            string
	HostIPAddress   string
	ControlPort     int
	TestPort        int // the server's test socket
	ClientIPAddress string
	ClientPort      int
	ProtocolVersion int // the server's, from its Setup Response
	TestInterval    int // s, as the server granted it
	SubInterval     int // ms
	StatusFeedback  int // ms, the Trial Interval
}

// Connected writes the connected event of a Test Connection.
func (e *StreamEncoder) Connected(c StreamConn) {
	o := &jobj{}
	o.int("Connection", int64(c.Connection))
	o.str("Host", c.Host)
	o.str("HostIPAddress", c.HostIPAddress)
	o.int("ControlPort", int64(c.ControlPort))
	o.int("TestPort", int64(c.TestPort))
	o.str("ClientIPAddress", c.ClientIPAddress)
	o.int("ClientPort", int64(c.ClientPort))
	o.int("ControlProtocolVersion", int64(c.ProtocolVersion))
	o.int("TestInterval", int64(c.TestInterval))
	o.int("TestSubInterval", int64(c.SubInterval))
	o.int("StatusFeedbackInterval", int64(c.StatusFeedback))
	e.event(StreamConnected, o)
}

// SubInterval writes a subinterval event: "Connection" (from 1; 0 for the
// aggregate, the sum the report prints), then exactly the keys of an
// IncrementalResult entry, then where this end measured them our delay
// variations to the µs under "udpstp" (fine.go).
func (e *StreamEncoder) SubInterval(iv *Interval) {
	o := &jobj{}
	o.int("Connection", int64(iv.Conn+1))
	entry := iv.res.object()
	o.keys = append(o.keys, entry.keys...)
	o.vals = append(o.vals, entry.vals...)
	if iv.Fine.Any() {
		addFine(o.obj(ExtensionKey), &iv.Fine)
	}
	e.event(StreamSubInterval, o)
}

// Message writes a warning or an error event (kind StreamWarning or
// StreamError): the Test Connection (from 1, 0 for the run as a whole),
// the ErrorStatus code (left out for OB-UDPST's ALERT lines, code < 0,
// which set none) and the line as the text report prints it.
func (e *StreamEncoder) Message(kind string, conn, code int, text string) {
	o := &jobj{}
	o.int("Connection", int64(conn+1))
	if code >= 0 {
		o.int("ErrorStatus", int64(code))
	}
	o.str("Message", text)
	e.event(kind, o)
}

// RunEnd writes the runend event of a test of --repeat: its ErrorStatus
// (the run number is the tag's).
func (e *StreamEncoder) RunEnd(status int) {
	o := &jobj{}
	o.int("ErrorStatus", int64(status))
	e.event(StreamRunEnd, o)
}

// End writes the end event (never tagged: it ends the whole run), whose data is doc, the result document as
// compact JSON (Collector.Document).
func (e *StreamEncoder) End(doc []byte) {
	var b bytes.Buffer
	b.WriteString(`{"event":"end","data":`)
	b.Write(bytes.TrimRight(doc, "\n"))
	b.WriteString("}\n")
	e.line(b.Bytes())
}
