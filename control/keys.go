package control

// Key configuration: the single -a key, the -K key file and the choice of
// key on each side. The file format and the rules about IDs
// follow OB-UDPST 9.0.0, so a key file written for it works here unchanged.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxKeyFileEntries is the most entries a key file may hold: one per key ID.
const MaxKeyFileEntries = 256

// KeyFile is a parsed -K key file: up to 256 keys, indexed by key ID.
type KeyFile struct {
	keys [MaxKeyFileEntries][]byte // nil where the ID is absent
	ids  []uint8                   // IDs in file order
}

// Len returns the number of entries.
func (f *KeyFile) Len() int {
	if f == nil {
		return 0
	}
	return len(f.ids)
}

// Key returns the key for id and whether the file has one.
func (f *KeyFile) Key(id uint8) ([]byte, bool) {
	if f == nil || f.keys[id] == nil {
		return nil, false
	}
	return f.keys[id], true
}

// IDs returns the key IDs in the order the file lists them.
func (f *KeyFile) IDs() []uint8 {
	if f == nil {
		return nil
	}
	return append([]uint8(nil), f.ids...)
}

// ValidateKey checks a shared key given directly (-a): 1 to MaxKeyLen bytes.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return errors.New("authentication key is empty")
	case len(key) > MaxKeyLen:
		return fmt.Errorf("authentication key exceeds %d characters", MaxKeyLen)
	}
	return nil
}

// ParseKeyFile reads a key file in OB-UDPST's -K format:
//
//	# comment
//	<id>,<key>   # comment
//
// Commas, spaces and tabs all separate tokens (runs of them count as one);
// '#' starts a comment; line ends (LF or CRLF) are stripped; blank and
// comment-only lines are skipped. The ID is a C integer literal (decimal,
// 0x hex or leading-0 octal) in 0..255, unique in the file; the key is
// 1..MaxKeyLen bytes. Tokens after the key are ignored: OB-UDPST reads two
// tokens per line and never complains about more, and we accept the same
// files it does.
//
// Errors name the line and the reason on one line; a CLI reports them as
// a configuration error (ErrorStatus 51).
func ParseKeyFile(r io.Reader) (*KeyFile, error) {
	f := new(KeyFile)
	br := bufio.NewReader(r)
	for lineNo := 1; ; lineNo++ {
		line, rerr := br.ReadString('\n')
		if rerr != nil && rerr != io.EOF {
			return nil, fmt.Errorf("key file line %d: %w", lineNo, rerr)
		}
		if line == "" && rerr == io.EOF {
			break
		}
		if err := f.addLine(line); err != nil {
			return nil, fmt.Errorf("key file line %d: %w", lineNo, err)
		}
		if rerr == io.EOF {
			break
		}
	}
	if f.Len() == 0 {
		return nil, errors.New("key file holds no key entries")
	}
	return f, nil
}

// addLine parses one line of a key file and adds its entry, if any.
func (f *KeyFile) addLine(line string) error {
	line = strings.TrimRight(line, "\r\n")
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	tok := strings.FieldsFunc(line, func(c rune) bool {
		return c == ',' || c == ' ' || c == '\t'
	})
	switch len(tok) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("only one token %q, want <id>,<key>", tok[0])
	}
	if len(f.ids) >= MaxKeyFileEntries {
		return fmt.Errorf("more than %d key entries", MaxKeyFileEntries)
	}
	id, ok := parseCInt(tok[0])
	if !ok {
		return fmt.Errorf("invalid key ID %q", tok[0])
	}
	if id < 0 || id > 255 {
		return fmt.Errorf("key ID %s out of range 0..255", tok[0])
	}
	if f.keys[id] != nil {
		return fmt.Errorf("duplicate key ID %d", id)
	}
	if len(tok[1]) > MaxKeyLen {
		return fmt.Errorf("key for ID %d longer than %d characters", id, MaxKeyLen)
	}
	f.keys[id] = []byte(tok[1])
	f.ids = append(f.ids, uint8(id))
	return nil
}

// parseCInt parses s as C's strtol with base 0 would, requiring the whole
// string to be used: optional sign, then 0x/0X hex, leading-0 octal or
// decimal digits. Values beyond a few digits are clamped, which is enough
// for a range check against 0..255.
func parseCInt(s string) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	base := int64(10)
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		var d int64
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			d = int64(c - '0')
		case c >= 'a' && c <= 'f':
			d = int64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = int64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		if v < 1<<32 {
			v = v*base + d
		}
	}
	if neg {
		v = -v
	}
	return v, true
}

// LoadKeyFile reads and parses the key file at path.
func LoadKeyFile(path string) (*KeyFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	defer fh.Close()
	f, err := ParseKeyFile(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// ClientKey picks the key a client signs with and the key ID it sends,
// from -a (single), -K (file) and -y (keyID, keyIDGiven): -a and -K
// exclude each other; with -a the ID is -y or 0; with -K it is the entry
// whose ID is -y (default 0), except that a file with exactly one entry and
// no -y uses that entry and its ID. With neither, key is nil: no
// authentication.
func ClientKey(single string, file *KeyFile, keyID int, keyIDGiven bool) (key []byte, id uint8, err error) {
	if single != "" && file != nil {
		return nil, 0, errors.New("authentication key (-a) and key file (-K) are mutually exclusive")
	}
	if !keyIDGiven {
		keyID = 0
	}
	if keyID < 0 || keyID > 255 {
		return nil, 0, fmt.Errorf("authentication key ID (%d) out of range 0..255", keyID)
	}
	switch {
	case single != "":
		if err := ValidateKey(single); err != nil {
			return nil, 0, err
		}
		return []byte(single), uint8(keyID), nil
	case file != nil:
		if !keyIDGiven && file.Len() == 1 {
			id := file.ids[0]
			return file.keys[id], id, nil
		}
		k, ok := file.Key(uint8(keyID))
		if !ok {
			//lint:ignore ST1005 OB-UDPST's own message (udpst.c), which scripts match: interop wins
			return nil, 0, fmt.Errorf("Authentication key ID (%d) not found in key file", keyID)
		}
		return k, uint8(keyID), nil
	}
	return nil, 0, nil
}

// ServerKeys is a server's key configuration: an optional key file and an
// optional single key. A request's keyId picks the file entry, which is
// tried first; the single key is the fallback for any keyId, as in
// OB-UDPST 9.0.0.
type ServerKeys struct {
	File   *KeyFile // -K, nil when not given
	Single []byte   // -a, nil when not given
}

// NewServerKeys checks and combines a server's -a key and -K file; both
// may be given, either may be absent.
func NewServerKeys(single string, file *KeyFile) (*ServerKeys, error) {
	k := &ServerKeys{File: file}
	if single != "" {
		if err := ValidateKey(single); err != nil {
			return nil, err
		}
		k.Single = []byte(single)
	}
	return k, nil
}

// Configured reports whether the server has any key, which makes
// authentication mandatory for its clients.
func (k *ServerKeys) Configured() bool {
	return k != nil && (k.File.Len() > 0 || len(k.Single) > 0)
}
