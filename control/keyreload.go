package control

// Reloading a server's key file while it runs (SIGHUP). OB-UDPST reads its
// key file once, at start, and has no reload; the reload is this server's
// own, so it may be stricter than the start-up read (which accepts every
// file OB-UDPST accepts) without refusing a file OB-UDPST would take: a
// file caught while it is being rewritten must not put a cut key in use.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
)

// ErrKeyFileIncomplete is the error, wrapped, for a key file that parses
// but looks half-written.
var ErrKeyFileIncomplete = errors.New("the key file looks incomplete")

// maxKeyFileSize bounds what a reload reads: 256 entries of a 64-byte key
// with comments fit in it many times over.
const maxKeyFileSize = 1 << 20

// ReloadKeyFile reads the key file at path again for a server whose key
// file in use is cur (nil: none). Beyond what ParseKeyFile refuses, it
// refuses as ErrKeyFileIncomplete a file that looks half-written: its last
// line has no line end (the writer has not finished it), or the key of an
// ID is the start of the key in use for that ID, and shorter (a key cut
// short). A file cut at a line end cannot be told from a complete one.
func ReloadKeyFile(path string, cur *KeyFile) (*KeyFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxKeyFileSize+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	case len(b) > maxKeyFileSize:
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxKeyFileSize)
	case len(b) > 0 && b[len(b)-1] != '\n':
		return nil, fmt.Errorf("%s: %w: its last line has no line end", path, ErrKeyFileIncomplete)
	}
	f, err := ParseKeyFile(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, id := range f.ids {
		k := f.keys[id]
		if old, ok := cur.Key(id); ok && len(k) < len(old) && bytes.HasPrefix(old, k) {
			return nil, fmt.Errorf("%s: %w: the key of ID %d is the first %d of the %d characters of the key in use",
				path, ErrKeyFileIncomplete, id, len(k), len(old))
		}
	}
	return f, nil
}

// KeyReloads reloads a server's keys (its -a key and -K file) on request
// and logs the outcome. A reload that fails keeps the keys in use. Failed
// reloads with no successful one between them are one episode: its first
// failure logs one line with the reason, the others are only counted, and
// the reload that succeeds says how many failed; a flood of SIGHUPs at a
// broken file writes one line.
type KeyReloads struct {
	Single string       // the -a key, "" for none
	Path   string       // the -K file
	Option string       // how log lines name the key file's option
	Log    *slog.Logger // where the outcome is logged
	failed int          // failed reloads in the episode so far
}

// Reload reads the keys again for a server whose keys in use are cur,
// hands new ones to use (Server.SetKeys) before it logs the reload, so
// that a Setup sent on seeing the line meets them, and returns them; nil
// when cur stays in use.
func (r *KeyReloads) Reload(cur *ServerKeys, use func(*ServerKeys)) *ServerKeys {
	var file *KeyFile
	if cur != nil {
		file = cur.File
	}
	f, err := ReloadKeyFile(r.Path, file)
	var keys *ServerKeys
	if err == nil {
		keys, err = NewServerKeys(r.Single, f)
	}
	if err != nil {
		r.failed++
		if r.failed == 1 {
			r.Log.Error("key file not reloaded; the keys in use stay (later failures are counted, not logged, until a reload succeeds)",
				"option", r.Option, "err", err)
		}
		return nil
	}
	use(keys)
	r.Log.Info("key file reloaded", "file", r.Path, "keys", f.Len(), "failed_reloads_before", r.failed)
	r.failed = 0
	return keys
}
