package store

// The spool: a Store that keeps every result in a local store first (an
// agent's SQLite) and uploads it to a remote one (the fleet's PostgreSQL)
// in the background, oldest first and exactly once, retrying while the
// remote is down. Nothing is lost when the remote is unreachable: a Put
// returns once the local store holds the result.
//
// Which results still wait is kept in an outbox file beside the local
// store: one line "p ID" when a result is taken, one line "a ID" when the
// remote acknowledged it, each synced before the step it records goes on.
// The "p" line is written before the local Put, so a crash between the two
// leaves an ID with no local row, which the uploader drops (that Put never
// returned). The "a" line is written after the remote's Put returned, so
// a crash between the two uploads the result once more on the next start;
// the remote keeps one row per ID (Put is idempotent by UUID): in the
// remote every result is there once, none twice. A line cut short by a
// crash (no newline) is ignored.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/udpstp/udpstp/internal/atomicfile"
)

// Defaults of SpoolOptions.
const (
	DefaultSpoolMinBackoff = time.Second
	DefaultSpoolMaxBackoff = time.Minute
	DefaultSpoolTimeout    = 10 * time.Second
)

// SpoolCloseFlush is the FlushOnClose of the agent's and the server's
// spools: long enough for a few results to go up when the remote
// answers, short of systemd's stop timeout.
const SpoolCloseFlush = 10 * time.Second

// SpoolOptions configure NewSpool.
type SpoolOptions struct {
	// Outbox is the file that says which results wait for the remote
	// (required; beside the local store, e.g. its path + ".outbox").
	Outbox string
	// MinBackoff and MaxBackoff bound the wait between failed uploads,
	// doubled on each failure (with jitter), reset by a success.
	MinBackoff, MaxBackoff time.Duration
	// Timeout bounds each call to the remote.
	Timeout time.Duration
	// FlushOnClose is how long Close waits for what waits to be uploaded
	// (Flush) before it stops the uploader; 0: it does not wait.
	FlushOnClose time.Duration
	Log          *slog.Logger
}

// Spool is a Store over a local and a remote Store (NewSpool).
type Spool struct {
	local, remote Store
	opt           SpoolOptions
	log           *slog.Logger

	mu      sync.Mutex
	queue   []string // IDs waiting for the remote, oldest first
	taking  int      // Puts between their outbox line and the queue
	outbox  *os.File
	up      bool          // the last call to the remote succeeded
	changed chan struct{} // closed and replaced when queue or up change
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

// NewSpool returns a Store that puts results into local and uploads them
// to remote; it takes over both (Close closes them). The results an
// earlier run left waiting (the outbox) are uploaded first.
//
// Reads (Get, List, Series, Fleet) go to the remote. When the remote does
// not answer (down, or slower than Timeout), they are answered from the
// local store, which holds this spool's own results only: a fleet's page
// then shows this agent alone, and RemoteUp says so. Get also looks in
// the local store when the remote does not have the result yet. Prune
// prunes the remote only: the local store must keep what waits.
func NewSpool(local, remote Store, o SpoolOptions) (*Spool, error) {
	if o.Outbox == "" {
		return nil, errors.New("spool: no outbox file")
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultSpoolMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultSpoolMaxBackoff, o.MinBackoff)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultSpoolTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Spool{local: local, remote: remote, opt: o, log: o.Log, up: true,
		changed: make(chan struct{}), wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	q, err := readOutbox(o.Outbox)
	if err != nil {
		return nil, err
	}
	// The outbox is rewritten with what still waits, so it holds no more
	// than that.
	var b bytes.Buffer
	for _, id := range q {
		fmt.Fprintf(&b, "p %s\n", id)
	}
	if err := atomicfile.Write(o.Outbox, b.Bytes(), 0o600); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if s.outbox, err = atomicfile.Append(o.Outbox, 0o600); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	s.queue = q
	go s.upload()
	s.kick()
	return s, nil
}

// readOutbox returns the IDs taken and not acknowledged, in the order
// they were taken. A missing file is an empty outbox.
func readOutbox(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	var order []string
	waiting := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		op, id, ok := strings.Cut(sc.Text(), " ")
		if !ok || id == "" {
			continue
		}
		switch op {
		case "p":
			if !waiting[id] {
				waiting[id] = true
				order = append(order, id)
			}
		case "a":
			delete(waiting, id)
		}
	}
	if n := len(b); n > 0 && b[n-1] != '\n' {
		// The last line was cut short by a crash: the step it recorded
		// had not begun ("p") or is done again ("a"). Scanner returned it:
		// undo what it did.
		last := string(b[bytes.LastIndexByte(b, '\n')+1:])
		if op, id, ok := strings.Cut(last, " "); ok && op == "p" && id != "" {
			delete(waiting, id)
		} else if ok && op == "a" {
			waiting[id] = true
		}
	}
	q := order[:0]
	for _, id := range order {
		if waiting[id] {
			q = append(q, id)
		}
	}
	return q, nil
}

// note appends one line to the outbox and syncs it.
func (s *Spool) note(op, id string) error {
	if _, err := fmt.Fprintf(s.outbox, "%s %s\n", op, id); err != nil {
		return fmt.Errorf("spool outbox: %w", err)
	}
	if err := s.outbox.Sync(); err != nil {
		return fmt.Errorf("spool outbox: %w", err)
	}
	return nil
}

// Put writes r to the local store and queues it for the remote; it
// returns once the local store holds it (or says why not).
func (s *Spool) Put(ctx context.Context, r *Result) error {
	if r.ID == "" {
		return errors.New("spool: a result without an ID")
	}
	s.mu.Lock()
	err := s.note("p", r.ID)
	if err == nil {
		s.taking++ // the outbox is not truncated under this Put
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	err = s.local.Put(ctx, r)
	s.mu.Lock()
	s.taking--
	if err == nil {
		s.queue = append(s.queue, r.ID)
		s.signal()
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("spool: local store: %w", err)
	}
	s.kick()
	return nil
}

// Pending is the number of results waiting for the remote.
func (s *Spool) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// RemoteUp says whether the last call to the remote succeeded.
func (s *Spool) RemoteUp() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up
}

// Flush waits until nothing waits for the remote, or ctx ends.
func (s *Spool) Flush(ctx context.Context) error {
	for {
		s.mu.Lock()
		n, ch := len(s.queue), s.changed
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		s.kick()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("spool: %d results still wait for the remote: %w", n, ctx.Err())
		}
	}
}

// signal tells Flush that something changed; s.mu is held.
func (s *Spool) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Spool) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Spool) setUp(up bool) {
	s.mu.Lock()
	if s.up != up {
		s.up = up
		s.signal()
	}
	s.mu.Unlock()
}

// upload is the background uploader: the oldest waiting result first, one
// at a time, so the remote receives them in the order they were taken.
func (s *Spool) upload() {
	defer close(s.done)
	backoff := time.Duration(0)
	for {
		s.mu.Lock()
		id := ""
		if len(s.queue) > 0 {
			id = s.queue[0]
		}
		s.mu.Unlock()
		if id == "" {
			select {
			case <-s.stop:
				return
			case <-s.wake:
				continue
			}
		}
		err := s.uploadOne(id)
		if err == nil {
			backoff = 0
			continue
		}
		backoff = min(max(2*backoff, s.opt.MinBackoff), s.opt.MaxBackoff)
		wait := backoff/2 + rand.N(backoff/2+1) // jitter: agents that lost the same remote do not come back at once
		s.log.Warn("spool: upload failed; retrying", "id", id, "pending", s.Pending(), "in", wait.Round(time.Millisecond), "err", err)
		t := time.NewTimer(wait)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// uploadOne uploads the result id and takes it off the queue once the
// remote acknowledged it.
func (s *Spool) uploadOne(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.opt.Timeout)
	defer cancel()
	r, err := s.local.Get(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		// Its Put crashed between the outbox and the local store: it
		// never returned, nothing to upload.
		s.log.Warn("spool: a waiting result is not in the local store; dropped", "id", id)
	case err != nil:
		return fmt.Errorf("local store: %w", err)
	default:
		if err := s.remote.Put(ctx, r); err != nil {
			s.setUp(false)
			return fmt.Errorf("remote store: %w", err)
		}
		s.setUp(true)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.note("a", id); err != nil {
		return err
	}
	s.queue = s.queue[1:]
	if len(s.queue) == 0 && s.taking == 0 {
		// Nothing waits: start the outbox afresh rather than let it grow.
		if err := s.outbox.Truncate(0); err == nil {
			s.outbox.Sync()
		}
	}
	s.signal()
	return nil
}

// remoteOr calls the remote, and the local store when the remote fails.
func remoteOr[T any](ctx context.Context, s *Spool, f func(context.Context, Store) (T, error)) (T, error) {
	rctx, cancel := context.WithTimeout(ctx, s.opt.Timeout)
	v, err := f(rctx, s.remote)
	cancel()
	if err == nil || errors.Is(err, ErrNotFound) || ctx.Err() != nil {
		if err == nil {
			s.setUp(true)
		}
		return v, err
	}
	s.setUp(false)
	return f(ctx, s.local)
}

// Get returns the result from the remote, else (not there yet, or the
// remote down) from the local store.
func (s *Spool) Get(ctx context.Context, id string) (*Result, error) {
	r, err := remoteOr(ctx, s, func(ctx context.Context, st Store) (*Result, error) { return st.Get(ctx, id) })
	if errors.Is(err, ErrNotFound) {
		return s.local.Get(ctx, id)
	}
	return r, err
}

// List reads the remote, else the local store.
func (s *Spool) List(ctx context.Context, f Filter) ([]Result, error) {
	return remoteOr(ctx, s, func(ctx context.Context, st Store) ([]Result, error) { return st.List(ctx, f) })
}

// Series reads the remote, else the local store.
func (s *Spool) Series(ctx context.Context, f Filter, figure string, points int) ([]Point, error) {
	return remoteOr(ctx, s, func(ctx context.Context, st Store) ([]Point, error) { return st.Series(ctx, f, figure, points) })
}

// Fleet reads the remote, else the local store.
func (s *Spool) Fleet(ctx context.Context, f Filter) (*Fleet, error) {
	return remoteOr(ctx, s, func(ctx context.Context, st Store) (*Fleet, error) { return st.Fleet(ctx, f) })
}

// Prune prunes the remote only (the local store keeps what waits).
func (s *Spool) Prune(ctx context.Context, r Retention) (int, error) {
	return s.remote.Prune(ctx, r)
}

// Close waits up to FlushOnClose for the uploads, stops the uploader
// (what still waits stays in the outbox for the next start) and closes
// both stores.
func (s *Spool) Close() error {
	select {
	case <-s.stop:
		return nil
	default:
	}
	if s.opt.FlushOnClose > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), s.opt.FlushOnClose)
		if err := s.Flush(ctx); err != nil {
			s.log.Warn("spool: results kept for the next start", "err", err)
		}
		cancel()
	}
	close(s.stop)
	<-s.done
	s.mu.Lock()
	err := s.outbox.Close()
	s.mu.Unlock()
	return errors.Join(err, s.local.Close(), s.remote.Close())
}

// lazy is a Store opened on first use, and again after an open failed:
// a spool's remote that is down when the agent or the server starts
// (store.Open pings and migrates, so it fails while PostgreSQL is down).
type lazy struct {
	spec string
	mu   sync.Mutex
	st   Store
}

// OpenLazy returns a Store that opens spec (as Open) when first called
// and again on each call until an open succeeds; until then every call
// returns the open's error. The spool's remote: its uploader retries.
func OpenLazy(spec string) Store { return &lazy{spec: spec} }

func (l *lazy) get(ctx context.Context) (Store, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st != nil {
		return l.st, nil
	}
	st, err := Open(ctx, l.spec)
	if err != nil {
		return nil, err
	}
	l.st = st
	return st, nil
}

func lazyCall[T any](ctx context.Context, l *lazy, f func(Store) (T, error)) (T, error) {
	st, err := l.get(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	return f(st)
}

func (l *lazy) Put(ctx context.Context, r *Result) error {
	_, err := lazyCall(ctx, l, func(st Store) (struct{}, error) { return struct{}{}, st.Put(ctx, r) })
	return err
}

func (l *lazy) Get(ctx context.Context, id string) (*Result, error) {
	return lazyCall(ctx, l, func(st Store) (*Result, error) { return st.Get(ctx, id) })
}

func (l *lazy) List(ctx context.Context, f Filter) ([]Result, error) {
	return lazyCall(ctx, l, func(st Store) ([]Result, error) { return st.List(ctx, f) })
}

func (l *lazy) Series(ctx context.Context, f Filter, figure string, points int) ([]Point, error) {
	return lazyCall(ctx, l, func(st Store) ([]Point, error) { return st.Series(ctx, f, figure, points) })
}

func (l *lazy) Fleet(ctx context.Context, f Filter) (*Fleet, error) {
	return lazyCall(ctx, l, func(st Store) (*Fleet, error) { return st.Fleet(ctx, f) })
}

func (l *lazy) Prune(ctx context.Context, r Retention) (int, error) {
	return lazyCall(ctx, l, func(st Store) (int, error) { return st.Prune(ctx, r) })
}

func (l *lazy) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st == nil {
		return nil
	}
	return l.st.Close()
}

// OpenSpool opens a spool of the store remote (as Open, lazily: it need
// not answer now) over a local SQLite store at localPath, its outbox at
// localPath + ".outbox".
func OpenSpool(ctx context.Context, remote, localPath string, o SpoolOptions) (*Spool, error) {
	local, err := Open(ctx, "sqlite:"+localPath)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if o.Outbox == "" {
		o.Outbox = localPath + ".outbox"
	}
	s, err := NewSpool(local, OpenLazy(remote), o)
	if err != nil {
		local.Close()
		return nil, err
	}
	return s, nil
}
