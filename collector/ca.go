//go:build !small

package collector

// The collector's CA: an ECDSA P-256 key and a self-signed certificate in
// a directory of the operator's, which signs the probes' client
// certificates. It is needed to enrol a probe, not to run a collector
// (which needs its certificate only): it can stay offline.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/udpstp/udpstp/internal/atomicfile"
)

// The files of a CA's directory and of a probe's credential directory.
const (
	CAKeyFile   = "ca.key"
	CACertFile  = "ca.crt"
	ProbeKey    = "probe.key"
	ProbeCert   = "probe.crt"
	ServerCA    = "ca.crt" // in a probe's directory: the collector's server CA
	maxPEMBytes = 64 << 10
)

// Validity of the CA's and the probes' certificates. Revocation, not
// expiry, is how a probe's credential ends; expiry bounds a forgotten one.
const (
	caValidity    = 20 * 365 * 24 * time.Hour
	probeValidity = 10 * 365 * 24 * time.Hour
)

// validName is a probe's name: it is the certificate's CN and the agent
// column of its results.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckName refuses a probe name that is not 1-64 letters, digits, '.',
// '_' or '-' (starting with a letter or digit).
func CheckName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("probe name %.80q: want 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// CA is a loaded CA: its certificate and key.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	PEM  []byte // the certificate, PEM
}

// InitCA makes a CA in dir (created 0700 if missing): ca.key (0600) and
// ca.crt. It refuses a dir that holds a CA already.
func InitCA(dir string, now time.Time) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("ca init: %w", err)
	}
	for _, f := range []string{CAKeyFile, CACertFile} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			return fmt.Errorf("ca init: %s exists already: a CA is there", filepath.Join(dir, f))
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("ca init: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return fmt.Errorf("ca init: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "udpstp collector CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("ca init: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("ca init: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, CAKeyFile), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return fmt.Errorf("ca init: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, CACertFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return fmt.Errorf("ca init: %w", err)
	}
	return nil
}

// LoadCA reads the CA of dir.
func LoadCA(dir string) (*CA, error) {
	certPEM, err := atomicfile.ReadFile(filepath.Join(dir, CACertFile), maxPEMBytes)
	if err != nil {
		return nil, fmt.Errorf("ca: %w", err)
	}
	keyPEM, err := atomicfile.ReadFile(filepath.Join(dir, CAKeyFile), maxPEMBytes)
	if err != nil {
		return nil, fmt.Errorf("ca: %w", err)
	}
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("ca: %s: %w", CACertFile, err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, fmt.Errorf("ca: %s: no PEM block", CAKeyFile)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("ca: %s: %w", CAKeyFile, err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("ca: ca.key is not the key of ca.crt")
	}
	return &CA{Cert: cert, Key: key, PEM: certPEM}, nil
}

// Issued is a probe's new credential.
type Issued struct {
	CertPEM, KeyPEM []byte
	Serial          string // the certificate's serial, lower-case hex (the store's key)
}

// Issue makes a key and a client certificate for the probe name (CN =
// name, a random 128-bit serial, ECDSA P-256).
func (ca *CA) Issue(name string, now time.Time) (*Issued, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("issue: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, fmt.Errorf("issue: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(probeValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("issue: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("issue: %w", err)
	}
	return &Issued{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
		Serial:  SerialHex(serial),
	}, nil
}

// WriteCredential writes a probe's directory: probe.crt, probe.key (0600)
// and, if serverCA is not nil, ca.crt (the collector's server CA).
func WriteCredential(dir string, is *Issued, serverCA []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("credential: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, ProbeKey), is.KeyPEM, 0o600); err != nil {
		return fmt.Errorf("credential: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, ProbeCert), is.CertPEM, 0o644); err != nil {
		return fmt.Errorf("credential: %w", err)
	}
	if serverCA != nil {
		if err := atomicfile.Write(filepath.Join(dir, ServerCA), serverCA, 0o644); err != nil {
			return fmt.Errorf("credential: %w", err)
		}
	}
	return nil
}

// SerialHex is a serial as the store keys it.
func SerialHex(n *big.Int) string { return n.Text(16) }

// randomSerial is a random positive 128-bit serial (RFC 5280 section
// 4.1.2.2 allows up to 20 octets).
func randomSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	return n.Add(n, big.NewInt(1)), nil
}

func parseCert(b []byte) (*x509.Certificate, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(blk.Bytes)
}

// ReadPEM reads a PEM file of the operator's (a certificate, a CA), no
// larger than a PEM file needs, not through a link or a FIFO.
func ReadPEM(path string) ([]byte, error) {
	return atomicfile.ReadFile(path, maxPEMBytes)
}
