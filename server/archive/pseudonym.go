package archive

// Client addresses as keyed pseudonyms: HMAC-SHA256 of the address under a
// secret key. The same address gets the same pseudonym as long as the key
// stays the same (one client's tests can be followed), and without the key
// nobody can test a guessed address against it (an unkeyed hash of an IPv4
// address is reversed by trying all 2^32).

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"strings"

	"github.com/udpstp/udpstp/internal/atomicfile"
)

// KeyBytes is the size of a generated key; a key file must hold at least
// MinKeyBytes.
const (
	KeyBytes    = 32
	MinKeyBytes = 16
)

// pseudonymizer maps an address to its pseudonym.
type pseudonymizer struct{ key []byte }

// pseudonym is "p:" and the first 16 bytes of HMAC-SHA256(key, address)
// in hex: 128 bits, no collision among any number of clients a server
// sees. An IPv4-mapped IPv6 address counts as its IPv4 address.
func (p pseudonymizer) pseudonym(a netip.Addr) string {
	m := hmac.New(sha256.New, p.key)
	m.Write([]byte(a.Unmap().String()))
	return "p:" + hex.EncodeToString(m.Sum(nil)[:16])
}

// maxKeyFile bounds a key file: a key is 16 to 64 bytes, as hex digits
// at most 128 and a line end; anything past this is no key file.
const maxKeyFile = 4096

// LoadKey reads the pseudonym key from path: hex digits (what a generated
// file holds), else the file's bytes as they are, at least MinKeyBytes. A
// missing file is created with a new random key, mode 0600; created says
// so. A file others may read is refused: the key is what keeps the
// pseudonyms from being reversed. So is a name that is not a regular file
// (a symbolic link is not followed, a FIFO not waited for: a link to
// /dev/zero would be read without end) and a file over 4 kB; the file is
// read to its size, no further.
func LoadKey(path string) (key []byte, created bool, err error) {
	f, err := atomicfile.Open(path, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		key = make([]byte, KeyBytes)
		rand.Read(key)
		if err := atomicfile.Write(path, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
			return nil, false, fmt.Errorf("archive key: %w", err)
		}
		return key, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("archive key refused: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("archive key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, false, fmt.Errorf("archive key %s: mode %04o lets others read it (chmod 600)", path, fi.Mode().Perm())
	}
	if fi.Size() > maxKeyFile {
		return nil, false, fmt.Errorf("archive key %s refused: %d bytes, a key file holds at most %d", path, fi.Size(), maxKeyFile)
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, false, fmt.Errorf("archive key %s: %w", path, err)
	}
	s := strings.TrimSpace(string(b))
	if h, err := hex.DecodeString(s); err == nil {
		key = h
	} else {
		key = b
	}
	if len(key) < MinKeyBytes {
		return nil, false, fmt.Errorf("archive key %s: %d bytes, want at least %d", path, len(key), MinKeyBytes)
	}
	return key, false, nil
}
