package archive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/store"
)

// Defaults of the rotation: a file is finished at DefaultMaxSize bytes
// (compressed) or DefaultMaxAge after its first record, whichever comes
// first; finished files are kept for good unless Retention says otherwise.
// Readers read finished files only (docs/fleet.md), so DefaultMaxAge is
// also how long a finished test may wait before a reader sees it: a
// minute, at the cost of up to a file a minute while tests end.
const (
	DefaultMaxSize = 64 << 20
	DefaultMaxAge  = time.Minute
	// queueLen bounds the records waiting for the writer; Add waits when
	// they are this many (a disk or a store slower than the tests end).
	queueLen = 256
	// storeTimeout bounds one Put to the store.
	storeTimeout = 30 * time.Second
)

// Config says where the records go.
type Config struct {
	// Dir, if set, gets the gzipped NDJSON files.
	Dir       string
	MaxSize   int64         // bytes; 0: DefaultMaxSize
	MaxAge    time.Duration // 0: DefaultMaxAge
	Retention time.Duration // finished files older than this are deleted; 0: kept
	// Store, if set, gets each record as a store.Result; the archive
	// closes it.
	Store store.Store
	// Key is the pseudonym key (LoadKey); Plain keeps the addresses as
	// they are instead. Without either, Open makes a key that lives as
	// long as the process (pseudonyms then link tests within one run
	// only).
	Key   []byte
	Plain bool
	// Server names this server in the records (the host name if "").
	Server string
	Log    *slog.Logger

	// Tests only: the writer's clock (time.Now if nil) and what wakes it
	// for rotation and retention (a ticker of a minute if nil).
	now  func() time.Time
	tick <-chan time.Time
}

// Archive writes the records of tests that ended.
type Archive struct {
	cfg   Config
	files *fileWriter
	pseud pseudonymizer
	log   *slog.Logger

	mu     sync.RWMutex
	closed bool
	q      chan *control.TestRecord
	done   chan struct{}

	// Written counts the records written (to the files, or the store
	// without files); Failed those a file or the store refused; Dropped
	// those that came after Close.
	Written, Failed, Dropped atomic.Uint64

	fileFailures, putFailures episode // of the file writes and the store's Puts (run's)
}

// Open checks cfg, finishes the files a crash left (Recover), and starts
// the writer.
func Open(cfg Config) (*Archive, error) {
	if cfg.Dir == "" && cfg.Store == nil {
		return nil, errors.New("archive: neither a directory nor a store")
	}
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = DefaultMaxSize
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Server == "" {
		cfg.Server, _ = os.Hostname()
	}
	if !cfg.Plain && len(cfg.Key) == 0 {
		cfg.Key = make([]byte, KeyBytes)
		rand.Read(cfg.Key)
	}
	a := &Archive{cfg: cfg, pseud: pseudonymizer{cfg.Key}, log: cfg.Log,
		q: make(chan *control.TestRecord, queueLen), done: make(chan struct{})}
	if cfg.Dir != "" {
		if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
			return nil, fmt.Errorf("archive: %w", err)
		}
		a.recover()
		a.files = newFileWriter(cfg.Dir, cfg.MaxSize, cfg.MaxAge, cfg.Retention)
		if cfg.now != nil {
			a.files.now = cfg.now
		}
		if err := a.files.prune(); err != nil {
			a.log.Error("archive: retention", "err", err)
		}
	}
	go a.run()
	return a, nil
}

// Add queues the record of a test that ended (control's OnTestEnd); it
// waits while the queue is full. After Close it drops the record,
// counted.
func (a *Archive) Add(t *control.TestRecord) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		a.Dropped.Add(1)
		return
	}
	a.q <- t
}

// Close writes what is queued, finishes the current file and closes the
// store.
func (a *Archive) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	close(a.q)
	a.mu.Unlock()
	<-a.done
	var err error
	if a.files != nil {
		err = a.files.rotate()
	}
	if a.cfg.Store != nil {
		err = errors.Join(err, a.cfg.Store.Close())
	}
	return err
}

// recover finishes the files a crash left (Recover) and says in the log
// what it did: each file finished with what it kept and dropped, each
// refused. A file it cannot finish is left for the next start.
func (a *Archive) recover() {
	recs, err := Recover(a.cfg.Dir)
	for _, r := range recs {
		switch {
		case r.Refused != nil:
			a.log.Error("archive: refused a file in the archive directory, left as it is", "err", r.Refused)
		case r.Kept > 0 || len(r.Dropped) > 0:
			var at []string
			for i, d := range r.Dropped {
				if i == 8 {
					at = append(at, "...")
					break
				}
				at = append(at, fmt.Sprintf("%d+%d (%s)", d.Offset, d.Bytes, d.Why))
			}
			a.log.Warn("archive: finished the file a crash left", "file", r.Part, "as", r.Final,
				"records_kept", r.Kept, "cut_records_dropped", len(r.Dropped), "bytes_dropped", r.DroppedBytes(),
				"dropped_at", strings.Join(at, ","))
		}
	}
	if err != nil {
		a.log.Error("archive: a file a crash left is kept for the next start", "err", err)
	}
}

// run writes the queued records, and finishes the current file when it
// reaches its age (a timer set to that moment, so a record is in a
// finished file MaxAge after its file was begun at the latest).
func (a *Archive) run() {
	defer close(a.done)
	tick := a.cfg.tick
	if tick == nil {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		tick = t.C
	}
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	armed := false
	arm := func() {
		if a.files == nil || armed {
			return
		}
		if at, ok := a.files.due(); ok {
			due.Reset(max(at.Sub(a.files.now()), 0))
			armed = true
		}
	}
	for {
		select {
		case t, ok := <-a.q:
			if !ok {
				return
			}
			a.write(t)
			arm()
		case <-due.C:
			armed = false
			a.tick()
			arm()
		case <-tick:
			a.tick()
			arm()
		}
	}
}

func (a *Archive) tick() {
	if a.files != nil {
		if err := a.files.tick(); err != nil {
			a.log.Error("archive: rotation", "err", err)
		}
	}
}

// write writes one record to the files and the store.
func (a *Archive) write(t *control.TestRecord) {
	client := t.Peer.Addr().Unmap().String()
	if !a.cfg.Plain {
		client = a.pseud.pseudonym(t.Peer.Addr())
	}
	r := newRecord(t, newUUID(t.End), a.cfg.Server, client, a.cfg.Plain)
	line, err := json.Marshal(r)
	if err != nil { // a Record always marshals
		a.Failed.Add(1)
		a.log.Error("archive: record", "err", err)
		return
	}
	ok := true
	if a.files != nil {
		// A full disk fails every record until space returns: one line
		// for the episode, then the count when a write succeeds again.
		err := a.files.write(append(line, '\n'))
		ok = a.fileFailures.note(a.log, "write", "writing", r.UUID, err)
	}
	if a.cfg.Store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		err := a.cfg.Store.Put(ctx, r.result(line))
		cancel()
		// As for the files: a store that refuses (a spool's disk full,
		// a remote down without one) refuses every record until it
		// recovers.
		ok = a.putFailures.note(a.log, "store", "storing", r.UUID, err) && ok
	}
	if ok {
		a.Written.Add(1)
	} else {
		a.Failed.Add(1)
	}
}

// newUUID is a version 7 UUID (RFC 9562): the time in ms, then random
// bits, so records sort by time in a store's index.
func newUUID(t time.Time) string {
	var b [16]byte
	rand.Read(b[:])
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Waiting is how many records wait in the store's spool for a remote
// store (store.Spool), and whether there is a spool at all.
func (a *Archive) Waiting() (int, bool) {
	sp, ok := a.cfg.Store.(interface{ Pending() int })
	if !ok {
		return 0, false
	}
	return sp.Pending(), true
}

// episode counts the failures of one kind of write since the last that
// succeeded: one that lasts (a full disk fails every record until space
// returns) logs one line for the episode, then the count when a write
// succeeds again.
type episode struct{ failing uint64 }

// note records the outcome err of a write of record uuid ("write" or
// "store"; "writing" or "storing" once it works again) and reports
// whether it succeeded.
func (e *episode) note(log *slog.Logger, what, doing, uuid string, err error) bool {
	if err != nil {
		if e.failing == 0 {
			log.Error("archive: "+what+" failed; failures are counted until one succeeds", "uuid", uuid, "err", err)
		}
		e.failing++
		return false
	}
	if e.failing > 0 {
		log.Info("archive: "+doing+" again", "failed_before", e.failing)
		e.failing = 0
	}
	return true
}
