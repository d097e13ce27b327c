package report

import "time"

// A failover search that chose its server by round trip (client/rttselect.go,
// docs/fleet.md "Choosing by round trip") records what it measured under
// "udpstp"."ServerSelection", beside OB-UDPST's keys, which stay as they
// are (Input.Host and HostIPAddress name the server used, as without the
// selection):
//
//	"ServerSelection": {"Mode": "rtt", "Candidates": [
//	  {"Host": "a.example.net", "HostIPAddress": "192.0.2.10", "ControlPort": 24601,
//	   "Priority": 10, "SetupRTTMicroseconds": 412, "Chosen": 1}, ...]}
//
// in the order the search tried them: by priority, then by round trip,
// those that did not answer the measurement last ("SetupRTTMicroseconds"
// left out, "Error" saying why).

// Selection is what a failover search measured to choose its server.
type Selection struct {
	Mode       string // "rtt"
	Candidates []SelectionCandidate
}

// SelectionCandidate is one candidate's Setup round trip.
type SelectionCandidate struct {
	Host        string // the SRV target, NAME, or the list's host
	Addr        string
	ControlPort int
	Priority    int
	// RTT is the Setup Request to its accepting Setup Response; valid
	// when Answered.
	RTT      time.Duration
	Answered bool
	Error    string // why not Answered
	Chosen   bool   // the test ran against it
}

// Chosen is the candidate the test ran against, nil if none.
func (s *Selection) Chosen() *SelectionCandidate {
	for i := range s.Candidates {
		if s.Candidates[i].Chosen {
			return &s.Candidates[i]
		}
	}
	return nil
}

// Select records the search's figures for the JSON document's extension.
func (c *Collector) Select(s *Selection) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.res.selection = s
}

// selectionObject is "udpstp"."ServerSelection".
func selectionObject(s *Selection) *jobj {
	o := &jobj{}
	o.str("Mode", s.Mode)
	list := jarr{}
	for i := range s.Candidates {
		c := &s.Candidates[i]
		e := &jobj{}
		e.str("Host", c.Host)
		e.str("HostIPAddress", c.Addr)
		e.int("ControlPort", int64(c.ControlPort))
		e.int("Priority", int64(c.Priority))
		if c.Answered {
			e.int("SetupRTTMicroseconds", c.RTT.Microseconds())
		} else {
			e.str("Error", c.Error)
		}
		e.flag("Chosen", c.Chosen)
		list = append(list, e)
	}
	o.add("Candidates", list)
	return o
}
