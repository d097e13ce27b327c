package agent

import (
	"bytes"
	"sync"
)

// hub hands the client's event stream, line by line, to the subscribers
// (the page's live progress). It is the stream's io.Writer.
type hub struct {
	mu      sync.Mutex
	subs    map[chan []byte]struct{}
	partial []byte
}

// subBuffer is how many lines a subscriber may fall behind before it
// loses some.
const subBuffer = 256

func (h *hub) subscribe() (<-chan []byte, func()) {
	ch := make(chan []byte, subBuffer)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[chan []byte]struct{}{}
	}
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs, ch)
			h.mu.Unlock()
		})
	}
}

// Write splits p into lines and sends each complete one to every
// subscriber that has room.
func (h *hub) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		h.partial = h.partial[:0]
		return len(p), nil
	}
	h.partial = append(h.partial, p...)
	for {
		i := bytes.IndexByte(h.partial, '\n')
		if i < 0 {
			break
		}
		line := bytes.Clone(h.partial[:i])
		h.partial = h.partial[i+1:]
		for ch := range h.subs {
			select {
			case ch <- line:
			default:
			}
		}
	}
	h.partial = append([]byte(nil), h.partial...)
	return len(p), nil
}
