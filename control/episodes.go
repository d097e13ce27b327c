package control

import (
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/udpstp/udpstp/internal/sourcekey"
)

// episodes turns floods of refusals and drops into a few log lines: the
// first event of a kind logs at once (the caller writes that line, with its
// details), the rest are only counted, and when the kind has been quiet for
// episodeQuiet, or every episodeReport while it goes on, one line gives the
// count and the number of sources. A forged flood of 94,000 Setup Requests
// used to write as many lines; it now writes two. Counting costs no
// allocation: the summary's words live in the kind's table.
type episodes struct {
	mu   sync.Mutex
	log  *slog.Logger
	open [numEpisodeKinds]episode
}

// episodeKind is what a refusal or drop was.
type episodeKind int

const (
	epSetupRefused      episodeKind = iota // answered with a refusal code
	epSetupRateLimited                     // --setup-rate: dropped unanswered
	epRefusalUnanswered                    // a refusal not answered: its source is over its answer budget
	epSetupReplayed                        // an authenticated Setup Request seen before
	epPendingEvicted                       // a Test Connection awaiting activation made room for a newer one
	epActivationForeign                    // a Test Activation from an address the Setup did not come from
	epActivationAuth                       // a Test Activation that failed authentication
	epActivationTimeout                    // a Test Connection released: no activation within the setup timeout
	epSourceRunningCap                     // a Setup refused: its source holds its running cap
	epSourcePendingCap                     // a Setup refused: its source holds all the pending it may
	numEpisodeKinds
)

// episodeText is each kind's summary line.
var episodeText = [numEpisodeKinds]string{
	epSetupRefused:      "setup requests refused",
	epSetupRateLimited:  "setup requests dropped: sources over their rate limit",
	epRefusalUnanswered: "setup refusals not answered: sources over their answer budget",
	epSetupReplayed:     "authenticated setup requests dropped as replays",
	epPendingEvicted:    "test connections awaiting activation evicted for newer setups",
	epActivationForeign: "test activations dropped: not from the setup's address",
	epActivationAuth:    "test activations dropped: authentication failed",
	epActivationTimeout: "test connections released: no activation within the setup timeout",
	epSourceRunningCap:  "setup requests refused: sources at their share of test connections",
	epSourcePendingCap:  "setup requests refused: sources at their share of test connections awaiting activation",
}

const (
	// episodeQuiet ends an episode: no event of its kind for this long.
	episodeQuiet = 10 * time.Second
	// episodeReport is how often a lasting episode reports its count.
	episodeReport = time.Minute
	// episodeSources bounds the distinct sources an episode remembers
	// for its count; past it the count says "at least".
	episodeSources = 1024
)

type episode struct {
	start, last, reported time.Time
	count, reportedCount  uint64
	sources               map[netip.Addr]struct{}
}

func newEpisodes(log *slog.Logger) *episodes { return &episodes{log: log} }

// note counts an event of kind from src at now and reports whether it is
// the first of an episode, which the caller then logs in full.
func (e *episodes) note(kind episodeKind, src netip.Addr, now time.Time) (first bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep := &e.open[kind]
	if ep.count == 0 {
		// The first event is the caller's full log line: the summary
		// counts the ones after it.
		*ep = episode{start: now, reported: now, reportedCount: 1, sources: ep.sources}
		if ep.sources == nil {
			ep.sources = make(map[netip.Addr]struct{})
		}
		first = true
	}
	ep.count++
	ep.last = now
	if len(ep.sources) < episodeSources {
		ep.sources[sourcekey.Of(src)] = struct{}{}
	}
	return first
}

// flush writes the summary of every episode that ended or is due a report,
// and forgets the ended ones. Serve calls it every few seconds.
func (e *episodes) flush(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := range e.open {
		ep := &e.open[k]
		if ep.count == 0 {
			continue
		}
		ended := now.Sub(ep.last) >= episodeQuiet
		due := now.Sub(ep.reported) >= episodeReport
		if !ended && !due {
			continue
		}
		if n := ep.count - ep.reportedCount; n > 0 {
			e.log.Warn(episodeText[k], "more", n, "sources", sourcesText(ep),
				"since", ep.reported.Format(time.RFC3339), "ongoing", !ended)
		}
		ep.reported, ep.reportedCount = now, ep.count
		if ended {
			clear(ep.sources)
			*ep = episode{sources: ep.sources}
		}
	}
}

// sourcesText is the number of distinct sources (an IPv6 source counted
// by its /64) of an episode.
func sourcesText(ep *episode) string {
	if len(ep.sources) >= episodeSources {
		return "at least " + strconv.Itoa(episodeSources)
	}
	return strconv.Itoa(len(ep.sources))
}
