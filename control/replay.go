package control

import (
	"sync"
	"time"
)

// replayCache remembers the digests of the authenticated Setup Requests
// the server accepted while their time could still verify, so that a
// captured request sent again, from anywhere, is dropped: within the
// +/-AuthWindow the signature alone would let it in once more (a replay
// from 20 sources filled every slot of a keyed server). Only requests whose
// signature verified are remembered, so forged junk cannot fill it; a key
// holder who signs more fresh requests than it holds is refused until
// entries expire (the cache fails closed).
type replayCache struct {
	mu      sync.Mutex
	max     int
	entries map[[authDigestLen]byte]time.Time // digest -> when it can no longer verify
	swept   time.Time
}

// replayCacheMax bounds the cache: a second's worth of Setup Requests of a
// server far busier than 254 Test Connections for each time window.
const replayCacheMax = 1 << 16

func newReplayCache(max int) *replayCache {
	return &replayCache{max: max, entries: make(map[[authDigestLen]byte]time.Time)}
}

// seen records digest, whose request carries authTime (Unix seconds), at
// now, and reports whether it was already there (a replay) or the cache is
// full.
func (c *replayCache) seen(digest [authDigestLen]byte, authTime uint32, now time.Time) (replay, full bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if exp, ok := c.entries[digest]; ok && now.Before(exp) {
		return true, false
	}
	if len(c.entries) >= c.max && now.Sub(c.swept) >= time.Second/10 {
		c.sweep(now)
	}
	if len(c.entries) >= c.max {
		return false, true
	}
	// A request verifies while now is within AuthWindow of its time; a
	// little more covers the second's truncation of the Unix time.
	c.entries[digest] = time.Unix(int64(authTime)+AuthWindow+1, 0)
	return false, false
}

func (c *replayCache) sweep(now time.Time) {
	c.swept = now
	for d, exp := range c.entries {
		if !now.Before(exp) {
			delete(c.entries, d)
		}
	}
}
