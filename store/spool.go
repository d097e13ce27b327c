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
// crash (no newline) is ignored, and so is a line longer than any the
// spool writes (an ID is at most MaxSpoolID bytes), with an error in the
// log: never the lines after it.
//
// A remote that refuses results (down, hung past Timeout, a full disk, a
// dropped table) is retried with a backoff and never logged per result:
// the spool logs when the remote starts failing and when it takes results
// again, counts the failed attempts, and Health turns to an error once the
// failures last longer than UnhealthyAfter or more than HighWater results
// wait (docs/fleet.md, "The server's store").

import (
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

// Defaults of the spool's bounds (SpoolOptions): results wait on disk,
// so the bound is generous; the health bounds say when to look.
const (
	DefaultSpoolMaxPending     = 100000
	DefaultSpoolHighWater      = 1000
	DefaultSpoolUnhealthyAfter = time.Minute
)

// MaxSpoolID bounds a result's ID in a spool: its outbox line is "p ID".
// Results carry UUIDs (36 bytes); a longer ID is refused by Put.
const MaxSpoolID = 256

// ErrSpoolFull is Put's answer when MaxPending results wait already.
var ErrSpoolFull = errors.New("spool: full")

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
	// MaxPending bounds the results waiting: a Put beyond it is refused
	// (ErrSpoolFull); 0: DefaultSpoolMaxPending.
	MaxPending int
	// Health reports trouble when more than HighWater results wait
	// (0: DefaultSpoolHighWater), or when uploads have failed for
	// UnhealthyAfter (0: DefaultSpoolUnhealthyAfter) with none succeeding.
	HighWater      int
	UnhealthyAfter time.Duration
	// DropUploaded deletes a result from the local store once the remote
	// took it (a local store with a Delete method: SQLite's), so the spool
	// holds what waits and no more: the server's, whose reads never come
	// to it. The agent's keeps them, to answer reads while the remote is
	// down.
	DropUploaded bool
	// LocalReads answers every read from the local store: a remote that
	// takes results and answers no reads (a collector, store_remote.go).
	LocalReads bool
	Log        *slog.Logger
	// now is the clock of Health (tests); nil: time.Now.
	now func() time.Time
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
	// ctx is the uploader's: Close cancels it, so that an upload hung on
	// the remote does not hold the stop.
	ctx    context.Context
	cancel context.CancelFunc

	// The uploads' trouble, for Health and the log's state changes:
	// failingSince is the first failure since the last success (zero:
	// none), lastErr the last failure's error, failures the failed
	// uploads in all; putErr is the last Put's own failure (the local
	// store or the outbox), nil once a Put succeeds; refused counts the
	// Puts refused.
	failingSince time.Time
	lastErr      error
	failures     uint64
	putErr       error
	refused      uint64
	dropFailures uint64 // DropUploaded's deletes that failed
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
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultSpoolMaxPending
	}
	if o.HighWater <= 0 {
		o.HighWater = DefaultSpoolHighWater
	}
	if o.UnhealthyAfter <= 0 {
		o.UnhealthyAfter = DefaultSpoolUnhealthyAfter
	}
	if o.now == nil {
		o.now = time.Now
	}
	s := &Spool{local: local, remote: remote, opt: o, log: o.Log, up: true,
		changed: make(chan struct{}), wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	q, bad, err := readOutbox(o.Outbox)
	if err != nil {
		return nil, err
	}
	for _, b := range bad {
		s.log.Error("spool: outbox line skipped: longer than any the spool writes; the lines after it are read", "outbox", o.Outbox,
			"line", b.line, "bytes", b.bytes, "max_id_bytes", MaxSpoolID)
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

// badLine is an outbox line readOutbox skipped: its number and length.
type badLine struct{ line, bytes int }

// maxOutboxSize bounds the outbox read at start: two lines of at most
// MaxSpoolID bytes for each of MaxPending waiting results, and room to
// spare. The file is truncated whenever nothing waits.
const maxOutboxSize = 64 << 20

// readOutbox returns the IDs taken and not acknowledged, in the order
// they were taken, and the lines it skipped as too long. A missing file is
// an empty outbox. The lines are split by hand, not by bufio.Scanner,
// whose 64 kB limit would end the reading at a long line and lose every
// ID after it.
func readOutbox(path string) ([]string, []badLine, error) {
	// Not followed if a link, refused if not a regular file (a FIFO
	// planted there would hang the start), and bounded.
	b, err := atomicfile.ReadFile(path, maxOutboxSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("spool: %w", err)
	}
	var order []string
	var bad []badLine
	waiting := map[string]bool{}
	lines := bytes.Split(b, []byte("\n"))
	// The last piece follows the last newline: empty, or a line cut short
	// by a crash, whose step had not begun ("p": that Put never returned)
	// or is done again ("a": uploaded once more). Either way it is left out.
	lines = lines[:len(lines)-1]
	for i, l := range lines {
		if len(l) > MaxSpoolID+2 {
			bad = append(bad, badLine{i + 1, len(l)})
			continue
		}
		op, id, ok := strings.Cut(string(l), " ")
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
	q := order[:0]
	for _, id := range order {
		if waiting[id] {
			q = append(q, id)
		}
	}
	return q, bad, nil
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
	if err := checkSpoolID(r.ID); err != nil {
		return err
	}
	s.mu.Lock()
	var err error
	if n := len(s.queue) + s.taking; n >= s.opt.MaxPending {
		err = fmt.Errorf("%w: %d results wait for the remote store", ErrSpoolFull, n)
	} else if err = s.note("p", r.ID); err == nil {
		s.taking++ // the outbox is not truncated under this Put
	}
	s.mu.Unlock()
	if err == nil {
		if err = s.local.Put(ctx, r); err != nil {
			err = fmt.Errorf("spool: local store: %w", err)
		}
		s.mu.Lock()
		s.taking--
		if err == nil {
			s.queue = append(s.queue, r.ID)
			s.signal()
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	if (err == nil) != (s.putErr == nil) {
		// A state change: the spool itself refuses results, or takes
		// them again (the caller has the error of each).
		if err != nil {
			s.log.Error("spool: results refused (counted; this is logged once until one is taken)", "err", err)
		} else {
			s.log.Info("spool: results taken again")
		}
	}
	s.putErr = err
	if err != nil {
		s.refused++
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.kick()
	return nil
}

// checkSpoolID refuses an ID the outbox could not hold as one short line.
func checkSpoolID(id string) error {
	switch {
	case id == "":
		return errors.New("spool: a result without an ID")
	case len(id) > MaxSpoolID:
		return fmt.Errorf("spool: a result ID of %d bytes (at most %d)", len(id), MaxSpoolID)
	case strings.ContainsAny(id, " \n\r\x00"):
		return fmt.Errorf("spool: a result ID with a space, newline or NUL: %.40q", id)
	}
	return nil
}

// Pending is the number of results waiting for the remote.
func (s *Spool) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// SpoolState is what Health reports on: the spool's figures now.
type SpoolState struct {
	Pending      int       // results waiting for the remote
	FailingSince time.Time // the first failed upload since the last success; zero: none
	LastErr      error     // that run of failures' last error
	Failures     uint64    // failed uploads since the spool started
	Refused      uint64    // Puts refused (full, or the local store failed)
	PutErr       error     // the last Put's failure; nil once one succeeds
	DropFailures uint64    // uploaded results DropUploaded failed to delete locally
}

// State returns the spool's figures now.
func (s *Spool) State() SpoolState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SpoolState{Pending: len(s.queue), FailingSince: s.failingSince, LastErr: s.lastErr,
		Failures: s.failures, Refused: s.refused, PutErr: s.putErr, DropFailures: s.dropFailures}
}

// Health is nil while results are being stored, else why they are not:
// the local store or the outbox refuses them (the last Put failed), the
// remote has refused every upload for UnhealthyAfter, or more than
// HighWater results wait. A /healthz answers 503 with it (the server's,
// docs/fleet.md); it turns nil again once results go through.
func (s *Spool) Health() error {
	st := s.State()
	var errs []error
	if st.PutErr != nil {
		errs = append(errs, fmt.Errorf("results refused: %w", st.PutErr))
	}
	if !st.FailingSince.IsZero() {
		if d := s.opt.now().Sub(st.FailingSince); d >= s.opt.UnhealthyAfter {
			errs = append(errs, fmt.Errorf("the remote store has failed for %s: %w", d.Round(time.Second), st.LastErr))
		}
	}
	if st.Pending > s.opt.HighWater {
		errs = append(errs, fmt.Errorf("%d results wait for the remote store (more than %d)", st.Pending, s.opt.HighWater))
	}
	return errors.Join(errs...)
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
			s.dropLocal(id)
			continue
		}
		s.failed(err)
		backoff = min(max(2*backoff, s.opt.MinBackoff), s.opt.MaxBackoff)
		wait := backoff/2 + rand.N(backoff/2+1) // jitter: agents that lost the same remote do not come back at once
		t := time.NewTimer(wait)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// failed records a failed upload for Health, and logs the change of
// state only: the first failure after a success.
func (s *Spool) failed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return // Close cancelled it: no failure of the remote's
	}
	s.failures++
	s.lastErr = err
	if s.failingSince.IsZero() {
		s.failingSince = s.opt.now()
		s.log.Warn("spool: uploads fail; results wait in the spool, retried with a backoff", "pending", len(s.queue), "err", err)
	}
}

// succeededLocked records an upload that went through, logging the first
// after failures with how many failed in between; s.mu is held.
func (s *Spool) succeededLocked() {
	if errors.Is(s.putErr, ErrSpoolFull) && len(s.queue) < s.opt.MaxPending {
		s.putErr = nil // room again, though no Put came since
	}
	if !s.failingSince.IsZero() {
		s.log.Info("spool: uploads go through again", "failed_for", s.opt.now().Sub(s.failingSince).Round(time.Millisecond),
			"failures", s.failures, "pending", len(s.queue))
		s.failingSince, s.lastErr = time.Time{}, nil
	}
}

// dropLocal deletes an uploaded result from the local store when
// DropUploaded asks for it. A failure leaves the row (the outbox no
// longer lists it), counted in State's DropFailures.
func (s *Spool) dropLocal(id string) {
	d, ok := s.local.(interface {
		Delete(context.Context, string) error
	})
	if !s.opt.DropUploaded || !ok {
		return
	}
	// Not s.ctx: Close cancels it while the uploader finishes its step,
	// and a local delete of a result already uploaded is quick and
	// should not be left behind.
	ctx, cancel := context.WithTimeout(context.Background(), s.opt.Timeout)
	defer cancel()
	if err := d.Delete(ctx, id); err != nil {
		s.mu.Lock()
		s.dropFailures++
		s.mu.Unlock()
	}
}

// uploadOne uploads the result id and takes it off the queue once the
// remote acknowledged it.
func (s *Spool) uploadOne(id string) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.opt.Timeout)
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
	s.succeededLocked()
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
	if s.opt.LocalReads {
		return f(ctx, s.local)
	}
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

// Close waits up to FlushOnClose for the uploads, stops the uploader,
// cancelling an upload under way (what still waits stays in the outbox
// for the next start) and closes both stores.
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
	s.cancel()
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
	return OpenSpoolTo(ctx, OpenLazy(remote), localPath, o)
}
