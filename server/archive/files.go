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
	"io/fs"
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
	// MaxRecordBytes bounds one record's line: the writer refuses a
	// longer one, and recovery takes a member that inflates past it for
	// damage (a planted decompression bomb costs this much memory, no
	// more). A record holds at most control.MaxRecordSubIntervals
	// Sub-Intervals (under 400 bytes of JSON each), its warnings and a
	// few hundred bytes more: far below.
	MaxRecordBytes = 1 << 20
	// maxResync bounds the places recovery tries as the start of the
	// next record after damage, in one file: power loss leaves one or
	// two; a planted file of gzip headers costs this many bounded tries.
	maxResync = 1024
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
	size   int64  // the end of its last complete record
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
//
// A write the disk cut short (ENOSPC) or a failed sync leaves part of a
// member at the end of the file: gzip readers stop there, so every record
// written after it would be lost to them. The file is cut back to the end
// of its last complete record before anything else is written; if even
// that fails, the file is left as a .part for the next start's recovery
// and the next record begins a new file.
func (w *fileWriter) write(line []byte) error {
	if len(line) > MaxRecordBytes {
		return fmt.Errorf("archive: a record of %d bytes, more than %d", len(line), MaxRecordBytes)
	}
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
	if err == nil {
		err = w.f.Sync()
	}
	if err != nil {
		name := w.f.Name()
		if terr := w.f.Truncate(w.size); terr != nil {
			w.f.Close()
			w.f = nil
			return fmt.Errorf("archive %s: %w; cutting it back: %w (left for recovery)", name, err, terr)
		}
		return fmt.Errorf("archive %s: %w", name, err)
	}
	w.size += int64(n)
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
		// O_EXCL: a name planted since (a link, a FIFO) is never opened.
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

// due is when the current file is to be finished by its age; ok is false
// without one.
func (w *fileWriter) due() (at time.Time, ok bool) {
	if w.f == nil {
		return time.Time{}, false
	}
	return w.opened.Add(w.maxAge), true
}

// tick rotates a file older than the age limit and deletes the finished
// files older than the retention.
func (w *fileWriter) tick() error {
	var err error
	if at, ok := w.due(); ok && !w.now().Before(at) {
		err = w.rotate()
	}
	return errors.Join(err, w.prune())
}

// rotate finishes the current file: closed, then renamed to its final
// name, the directory synced so the rename survives a crash. A file that
// holds no record (its only write failed) is removed instead: an empty
// file is not a gzip stream.
func (w *fileWriter) rotate() error {
	if w.f == nil {
		return nil
	}
	part := w.f.Name()
	err := w.f.Close()
	w.f = nil
	if err == nil && w.size == 0 {
		return os.Remove(part)
	}
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

// Recovered is what Recover did with one .part file a crash left.
type Recovered struct {
	Part  string // the .part file
	Final string // the finished file it became; "" if none
	Kept  int    // complete records kept
	// Dropped are the damaged stretches left out (a record cut short,
	// bytes that are no record), in the .part file's bytes.
	Dropped []Damage
	// Refused, if set, says why the file was not read (not a regular
	// file, ...): it is left where it is.
	Refused error
}

// Damage is a stretch of a .part file that held no complete record; Why
// says what was found at its start.
type Damage struct {
	Offset, Bytes int64
	Why           string
}

// DroppedBytes is the bytes of all the damage.
func (r *Recovered) DroppedBytes() (n int64) {
	for _, d := range r.Dropped {
		n += d.Bytes
	}
	return n
}

// Recover finishes the *.part files a crashed server left in dir: each
// becomes a finished file holding every complete record, in order; a
// stretch that is no complete record (cut short by a crash or a full
// disk, corrupt) is dropped, and the records after it are kept. Memory
// stays bounded whatever the file holds: records are read one at a time,
// each inflated to MaxRecordBytes at most. What is not a regular file is
// refused and left (Recovered.Refused). err is set only when a file could
// not be finished (its .part is then left for the next start).
func Recover(dir string) ([]Recovered, error) {
	parts, err := filepath.Glob(filepath.Join(dir, FilePrefix+"*"+FileSuffix+PartSuffix))
	if err != nil {
		return nil, err
	}
	var out []Recovered
	var errs []error
	for _, p := range parts {
		r, err := recoverPart(p)
		out = append(out, r)
		if err != nil {
			errs = append(errs, fmt.Errorf("archive: recovering %s: %w", p, err))
		}
	}
	return out, errors.Join(errs...)
}

func recoverPart(part string) (r Recovered, err error) {
	r.Part = part
	f, err := atomicfile.Open(part, os.O_RDWR)
	if err != nil {
		r.Refused = err
		return r, nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return r, err
	}
	size := fi.Size()
	runs, damage, kept := scanMembers(f, size)
	r.Kept, r.Dropped = kept, damage
	dir := filepath.Dir(part)
	if kept == 0 {
		return r, errors.Join(os.Remove(part), syncDir(dir))
	}
	final := freeName(strings.TrimSuffix(part, PartSuffix))
	switch {
	case len(runs) == 1 && runs[0].Offset == 0:
		// Whole, or damaged at its end only (the usual crash): cut there.
		if end := runs[0].Bytes; end < size {
			if err := f.Truncate(end); err != nil {
				return r, err
			}
			if err := f.Sync(); err != nil {
				return r, err
			}
		}
		if err := os.Rename(part, final); err != nil {
			return r, err
		}
	default:
		// Damage before a record: the records are copied, as they are,
		// to a new file that replaces the .part.
		if err := copyRuns(f, runs, dir, final); err != nil {
			return r, err
		}
		if err := os.Remove(part); err != nil {
			return r, err
		}
	}
	r.Final = final
	return r, syncDir(dir)
}

// freeName is name, or name with "-recovered-N" before FileSuffix when
// something is there already: recovery never replaces a finished file.
func freeName(name string) string {
	base := strings.TrimSuffix(name, FileSuffix)
	for i := 0; ; i++ {
		n := name
		if i > 0 {
			n = fmt.Sprintf("%s-recovered-%d%s", base, i, FileSuffix)
		}
		if _, err := os.Lstat(n); errors.Is(err, fs.ErrNotExist) || i >= 1000 {
			return n
		}
	}
}

// copyRuns writes the stretches runs of f to a new file named final:
// exclusively created under a temporary name, synced, renamed.
func copyRuns(f *os.File, runs []Damage, dir, final string) (err error) {
	tmp, err := os.CreateTemp(dir, ".recover*"+PartSuffix)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	for _, run := range runs {
		if _, err = io.Copy(tmp, io.NewSectionReader(f, run.Offset, run.Bytes)); err != nil {
			return err
		}
	}
	if err = tmp.Chmod(fileMode); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), final)
}

// scanMembers walks the gzip members of f (size bytes): runs are the
// stretches of complete records, one after another, damage the stretches
// between and after them that are none; kept counts the records. After
// damage the next record is looked for at each gzip header (1f 8b 08)
// that follows, at most maxResync of them.
func scanMembers(f *os.File, size int64) (runs, damage []Damage, kept int) {
	m := newMemberReader(f, size)
	var pos, runStart int64
	tries := 0
	for pos < size {
		end, why := m.member(pos)
		if why == "" {
			kept++
			pos = end
			continue
		}
		if pos > runStart {
			runs = append(runs, Damage{runStart, pos - runStart, ""})
		}
		next := int64(-1)
		for c := m.findMagic(pos + 1); c >= 0 && tries < maxResync; c = m.findMagic(c + 1) {
			tries++
			if end, bad := m.member(c); bad == "" {
				next, kept = c, kept+1
				damage = append(damage, Damage{pos, c - pos, why})
				runStart, pos = c, end
				break
			}
		}
		if next < 0 {
			damage = append(damage, Damage{pos, size - pos, why})
			return runs, damage, kept
		}
	}
	if pos > runStart {
		runs = append(runs, Damage{runStart, pos - runStart, ""})
	}
	return runs, damage, kept
}

// findMagic is the offset of the next gzip header (1f 8b, deflate) in the
// file at or after from, -1 if none.
func (m *memberReader) findMagic(from int64) int64 {
	magic := []byte{0x1f, 0x8b, 0x08}
	if m.scan == nil {
		m.scan = make([]byte, 64<<10)
	}
	buf := m.scan
	for from < m.size {
		n, _ := m.f.ReadAt(buf, from)
		if n < len(magic) {
			return -1
		}
		if i := bytes.Index(buf[:n], magic); i >= 0 {
			return from + int64(i)
		}
		from += int64(n - len(magic) + 1)
	}
	return -1
}

// memberReader reads one gzip member at a time, at any offset, inflating
// at most MaxRecordBytes of it.
type memberReader struct {
	f    *os.File
	size int64
	br   *bufio.Reader
	pos  int64 // the offset br reads next
	z    gzip.Reader
	out  bytes.Buffer
	scan []byte // findMagic's
}

func newMemberReader(f *os.File, size int64) *memberReader {
	return &memberReader{f: f, size: size, br: bufio.NewReaderSize(nil, 64<<10), pos: -1}
}

func (m *memberReader) Read(p []byte) (int, error) {
	n, err := m.br.Read(p)
	m.pos += int64(n)
	return n, err
}

// ReadByte lets flate read no further than the member's end.
func (m *memberReader) ReadByte() (byte, error) {
	b, err := m.br.ReadByte()
	if err == nil {
		m.pos++
	}
	return b, err
}

// member reads the member at off: a record if it is complete (its CRC
// and length hold) and holds one line of at most MaxRecordBytes; end is
// where it ends. Else why says what it is.
func (m *memberReader) member(off int64) (end int64, why string) {
	if off != m.pos {
		m.br.Reset(io.NewSectionReader(m.f, off, m.size-off))
		m.pos = off
	}
	why = m.read()
	if why != "" {
		m.pos = -1 // where the reader stopped is no member's end
		return 0, why
	}
	return m.pos, ""
}

func (m *memberReader) read() (why string) {
	if err := m.z.Reset(m); err != nil {
		return "no gzip member"
	}
	m.z.Multistream(false)
	m.out.Reset()
	_, err := m.out.ReadFrom(io.LimitReader(&m.z, MaxRecordBytes+1))
	b := m.out.Bytes()
	switch {
	case len(b) > MaxRecordBytes:
		return fmt.Sprintf("a member inflating past %d bytes", MaxRecordBytes)
	case err != nil:
		return "a member cut short or corrupt"
	case len(b) == 0 || bytes.IndexByte(b, '\n') != len(b)-1:
		return "a member that is not one line"
	}
	return ""
}

// ReadMembers reads a file of gzip members each holding one line, and
// returns the lines of the complete members up to the first that is not
// (cut short, corrupt, not one whole line, longer than MaxRecordBytes);
// bad says whether one was found.
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
		b, err := io.ReadAll(io.LimitReader(z, MaxRecordBytes+1))
		if err != nil || len(b) == 0 || len(b) > MaxRecordBytes || bytes.IndexByte(b, '\n') != len(b)-1 {
			return lines, true
		}
		lines = append(lines, b)
		if err := z.Reset(br); err != nil {
			return lines, err != io.EOF
		}
	}
}
