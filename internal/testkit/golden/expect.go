package golden

import (
	"net"
	"strconv"
	"strings"
)

// Expect is what a scenario's command lines imply for the PDUs on the wire:
// the values OB-UDPST's client puts in its requests, and the server settings
// its responses reflect. Defaults are OB-UDPST 9.0.0's.
type Expect struct {
	Client        bool // the client was udpst (not a crafted-PDU script)
	Upstream      bool
	ControlPort   int
	Jumbo         bool // client: no -j
	Traditional   bool // client: -T
	MaxBandwidth  int  // client -B (total)
	Connections   int  // client -C max
	Keyed         bool // client -a or -K
	Key           string
	KeyID         int
	LowThresh     int
	UpperThresh   int
	TrialInt      int
	TestIntTime   int
	SubIntPeriod  int
	SRIndexConf   int // 0xFFFF for <Auto>
	StartIndex    bool
	DSCPECN       int
	CEThresh      int
	OWD           bool
	IncludeOooDup bool
	AlgorithmC    bool
	RandomPayload bool
	SuppCount     int

	ServerRandom bool // server -X
	ServerKeyed  bool // server -a or -K
	ServerKey    string
	ServerBW     int // server -B
}

// Expect derives the expectations of one run ("text" or "json").
func (s Scenario) Expect(run string) (Expect, bool) {
	r, ok := s.RunNamed(run)
	if !ok {
		return Expect{}, false
	}
	e := Expect{
		ControlPort: 24601, Jumbo: true, Connections: 1, LowThresh: 30, UpperThresh: 90,
		TrialInt: 50, TestIntTime: 10, SubIntPeriod: 1000, SRIndexConf: 0xFFFF,
	}
	if len(r.ServerCmds) > 0 {
		if so, ok := ParseUdpstArgs(r.ServerCmds[0]); ok {
			e.ServerRandom = so.Has('X')
			e.ServerKeyed = so.Has('a') || so.Has('K')
			e.ServerKey = so.Opts['a']
			e.ServerBW = atoi(so.Opts['B'])
		}
	}
	o, ok := ParseUdpstArgs(r.ClientCmd)
	if !ok {
		// A crafted-PDU script: it names the control port as its last argument.
		if n := len(r.ClientCmd); n > 0 {
			if p := atoi(r.ClientCmd[n-1]); p > 0 {
				e.ControlPort = p
			}
		}
		return e, true
	}
	e.Client = true
	e.Upstream = o.Has('u')
	if v, ok := o.Opts['p']; ok {
		e.ControlPort = atoi(v)
	}
	if len(o.Args) > 0 {
		if _, port, err := net.SplitHostPort(o.Args[0]); err == nil {
			e.ControlPort = atoi(port)
		}
	}
	e.Jumbo = !o.Has('j')
	e.Traditional = o.Has('T')
	e.MaxBandwidth = atoi(o.Opts['B'])
	if v, ok := o.Opts['C']; ok {
		lo, hi, _ := strings.Cut(v, "-")
		e.Connections = atoi(lo)
		if hi != "" {
			e.Connections = atoi(hi)
		}
	} else if len(o.Args) > 1 {
		e.Connections = len(o.Args)
	}
	e.Keyed = o.Has('a') || o.Has('K')
	e.Key = o.Opts['a']
	e.KeyID = atoi(o.Opts['y'])
	setInt(o, 'L', &e.LowThresh)
	setInt(o, 'U', &e.UpperThresh)
	setInt(o, 'F', &e.TrialInt)
	setInt(o, 't', &e.TestIntTime)
	setInt(o, 'P', &e.SubIntPeriod)
	if v, ok := o.Opts['I']; ok {
		if strings.HasPrefix(v, "@") {
			e.StartIndex = true
			v = v[1:]
		}
		e.SRIndexConf = atoi(v)
	}
	if v, ok := o.Opts['m']; ok {
		n, _ := strconv.ParseInt(v, 0, 32) // C integer syntax, as udpst reads -m
		e.DSCPECN = int(n)
	}
	setInt(o, 'Z', &e.CEThresh)
	e.OWD = o.Has('o')
	e.IncludeOooDup = o.Has('R')
	e.AlgorithmC = strings.EqualFold(o.Opts['A'], "C")
	e.RandomPayload = o.Has('X')
	if v := o.Opts['i']; strings.HasPrefix(v, "-") {
		e.SuppCount = atoi(v[1:])
	}
	return e, true
}

func setInt(o Options, c byte, dst *int) {
	if v, ok := o.Opts[c]; ok {
		*dst = atoi(v)
	}
}

// atoi reads a leading decimal integer as C's atoi does: junk gives 0.
func atoi(s string) int {
	n := 0
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}
