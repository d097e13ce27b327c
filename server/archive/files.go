package archive

// The archive's files: gzipped NDJSON, one gzip member per record, in a
// *.part file until it is rotated to its final name (the package doc says
// why a crash leaves no half record).

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/udpstp/udpstp/internal/atomicfile"
)

// File names: FilePrefix, the UTC time the file was begun, FileSuffix; the
// file being written has PartSuffix after that.
const (
	FilePrefix = "archive-"
	FileSuffix = ".ndjson.gz"
	PartSuffix = ".part"
	fileMode   = 0o640
	stampForm  = "20060102T150405.000000Z"
)

// fileWriter appends records to the current file and rotates it.
type fileWriter struct {
	dir       string
	maxSize   int64
	maxAge    time.Duration
	retention time.Duration
	now       func() time.Time

	f      *os.File
	final  string // the current file's name once finished
	size   int64
	opened time.Time

	buf bytes.Buffer
	gz  *gzip.Writer
}

func newFileWriter(dir string, maxSize int64, maxAge, retention time.Duration) *fileWriter {
	w := &fileWriter{dir: dir, maxSize: maxSize, maxAge: maxAge, retention: retention, now: time.Now}
	w.gz = gzip.NewWriter(&w.buf)
	return w
}

// write appends line (ending in '\n') as one gzip member in one write and
// syncs it, then rotates the file if it reached its size.
func (w *fileWriter) write(line []byte) error {
	if w.f == nil {
		if err := w.open(); err != nil {
			return err
		}
	}
	w.buf.Reset()
	w.gz.Reset(&w.buf)
	w.gz.Write(line)
	w.gz.Close()
	n, err := w.f.Write(w.buf.Bytes())
	w.size += int64(n)
	if err == nil {
		err = w.f.Sync()
	}
	if err != nil {
		return fmt.Errorf("archive %s: %w", w.f.Name(), err)
	}
	if w.size >= w.maxSize {
		return w.rotate()
	}
	return nil
}

// open begins a new file, named by the time now (a name taken already
// gets a counter).
func (w *fileWriter) open() error {
	now := w.now()
	base := FilePrefix + now.UTC().Format(stampForm)
	for i := 0; ; i++ {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		final := filepath.Join(w.dir, name+FileSuffix)
		if _, err := os.Lstat(final); err == nil {
			continue
		}
		f, err := os.OpenFile(final+PartSuffix, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, fileMode)
		if errors.Is(err, os.ErrExist) && i < 1000 {
			continue
		}
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		w.f, w.final, w.size, w.opened = f, final, 0, now
		return nil
	}
}

// tick rotates a file older than the age limit and deletes the finished
// files older than the retention.
func (w *fileWriter) tick() error {
	var err error
	if w.f != nil && w.now().Sub(w.opened) >= w.maxAge {
		err = w.rotate()
	}
	return errors.Join(err, w.prune())
}

// rotate finishes the current file: closed, then renamed to its final
// name, the directory synced so the rename survives a crash.
func (w *fileWriter) rotate() error {
	if w.f == nil {
		return nil
	}
	part := w.f.Name()
	err := w.f.Close()
	w.f = nil
	if err == nil {
		err = os.Rename(part, w.final)
	}
	if err == nil {
		err = syncDir(w.dir)
	}
	if err != nil {
		return fmt.Errorf("archive: finishing %s: %w", part, err)
	}
	return nil
}

// prune deletes finished files last written before the retention.
func (w *fileWriter) prune() error {
	if w.retention <= 0 {
		return nil
	}
	names, err := filepath.Glob(filepath.Join(w.dir, FilePrefix+"*"+FileSuffix))
	if err != nil {
		return err
	}
	cut := w.now().Add(-w.retention)
	var errs []error
	for _, n := range names {
		fi, err := os.Lstat(n)
		if err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(cut) {
			errs = append(errs, os.Remove(n))
		}
	}
	return errors.Join(errs...)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Recover finishes the *.part files a crashed server left in dir: each
// becomes a finished file holding its complete records, in order; the
// first member that is cut short or corrupt is dropped with everything
// after it. It returns the records kept and the members dropped.
func Recover(dir string) (kept, dropped int, err error) {
	parts, err := filepath.Glob(filepath.Join(dir, FilePrefix+"*"+FileSuffix+PartSuffix))
	if err != nil {
		return 0, 0, err
	}
	for _, p := range parts {
		k, d, err := recoverPart(p)
		kept += k
		dropped += d
		if err != nil {
			return kept, dropped, err
		}
	}
	return kept, dropped, nil
}

func recoverPart(part string) (kept, dropped int, err error) {
	f, err := os.Open(part)
	if err != nil {
		return 0, 0, fmt.Errorf("archive: recovering %s: %w", part, err)
	}
	lines, bad := ReadMembers(f)
	f.Close()
	final := strings.TrimSuffix(part, PartSuffix)
	if len(lines) > 0 {
		var out bytes.Buffer
		gz := gzip.NewWriter(&out)
		for _, l := range lines {
			gz.Reset(&out)
			gz.Write(l)
			gz.Close()
		}
		if err := atomicfile.Write(final, out.Bytes(), fileMode); err != nil {
			return 0, 0, fmt.Errorf("archive: recovering %s: %w", part, err)
		}
	}
	if bad {
		dropped = 1
	}
	if err := os.Remove(part); err != nil {
		return len(lines), dropped, fmt.Errorf("archive: recovering %s: %w", part, err)
	}
	return len(lines), dropped, syncDir(filepath.Dir(part))
}

// ReadMembers reads a file of gzip members each holding one line, and
// returns the lines of the complete members up to the first that is not
// (cut short, corrupt, not one whole line); bad says whether one was
// found.
func ReadMembers(r io.Reader) (lines [][]byte, bad bool) {
	br := bufio.NewReader(r)
	if _, err := br.Peek(1); err != nil {
		return nil, false // empty
	}
	z, err := gzip.NewReader(br)
	if err != nil {
		return nil, true
	}
	for {
		z.Multistream(false)
		b, err := io.ReadAll(z)
		if err != nil || len(b) == 0 || b[len(b)-1] != '\n' || bytes.IndexByte(b, '\n') != len(b)-1 {
			return lines, true
		}
		lines = append(lines, b)
		if err := z.Reset(br); err != nil {
			return lines, err != io.EOF
		}
	}
}
