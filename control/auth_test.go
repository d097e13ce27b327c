package control

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/race"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

func digestOf(pdu []byte) []byte {
	n := len(pdu)
	return pdu[n-authDigestBack : n-authKeyIDBack]
}

// A worked example of OB-UDPST 9.0.0's authentication: key file entry
// 7,Sup3rSecretKey on both sides, an upstream test with -y 7 -t 5; all five
// PDUs carry authUnixTime 0x6b0ceaee.
const (
	exKey  = "Sup3rSecretKey"
	exTime = 0x6b0ceaee // 1796008686
	exCK   = "47f5ecfe9b68695f64f81525f258909ef6fcf91178a7b8645569db6ec80bfef6"
	exSK   = "d5048df3acbd31aadc43ed7340b8cc4c78d668ea9be1ea49e5c66a46915733fa"
)

// exPDUs are the PDUs of the example. The Setup Request is as captured; the
// others are rebuilt from the run's fields, with the digests it recorded.
// The TA Request/Response fields are OB-UDPST's defaults with -u -t 5 (RFC
// 9946, the Test Activation PDU), which is what makes those digests match.
var exPDUs = []struct {
	name   string
	hex    string
	server bool // signed with the server key
}{
	{"setup request", `
		ace10014 00019212 01000000 00000101 6b0ceaee
		c370ba21ec268207dcd0388c54c609c954f98a9db5825ccd09a2aefe4d1b8a83
		07000000`, false},
	{"setup response", `
		ace10014 00019212 02010000 a2600101 6b0ceaee
		60501cddd7704b3926599a31d09fad5b6bafb5802bdb4e52e1c4f50bfc5ae2b5
		07000000`, true},
	{"null request", `
		dead0014 01000001 6b0ceaee
		681793da5b0a678de061f60b0f00cbf85f90a2ca4012f3a5989501348938acdc
		07000000`, true},
	{"ta request", `
		ace20014 0100 001e 005a 0032 0005 00 00 ffff 00 0a 0003 000a 01 00 00 00
		00000000 00000000 00000000 00000000 00000000 00000000 00000000
		03e8 0000 0000 00 01 6b0ceaee
		23197a6b120d111f4a1b26c7b40ccce8844c32da126f3f111d6d081a70b98874
		07000000`, false},
	{"ta response", `
		ace20014 0101 001e 005a 0032 0005 00 00 ffff 00 0a 0003 000a 01 00 00 00
		00000000 00000000 00000000 0000c350 00000000 00000000 800004c6
		03e8 0000 0000 00 01 6b0ceaee
		66b3d64310253abeedf1213481e88fa4bbc58d28134c1b7d7469824f52da4b82
		07000000`, true},
}

func TestWorkedExampleKDF(t *testing.T) {
	// The two KDF input blocks, spelled out: counter, the label "UDPSTP"
	// (554450535450), 0x00, the Setup's time in decimal ASCII, 512.
	blocks := []string{
		"00000001 554450535450 00 31373936303038363836 00000200",
		"00000002 554450535450 00 31373936303038363836 00000200",
	}
	want := []string{exCK, exSK}
	for i, blk := range blocks {
		mac := hmac.New(sha256.New, []byte(exKey))
		mac.Write(unhex(t, blk))
		if got := hex.EncodeToString(mac.Sum(nil)); got != want[i] {
			t.Errorf("K(%d) from the literal block = %s, want %s", i+1, got, want[i])
		}
	}
	ks := DeriveKeys([]byte(exKey), exTime)
	if got := hex.EncodeToString(ks.Client[:]); got != exCK {
		t.Errorf("client key = %s, want %s", got, exCK)
	}
	if got := hex.EncodeToString(ks.Server[:]); got != exSK {
		t.Errorf("server key = %s, want %s", got, exSK)
	}
}

func TestWorkedExampleDigests(t *testing.T) {
	ks := DeriveKeys([]byte(exKey), exTime)
	for _, ex := range exPDUs {
		t.Run(ex.name, func(t *testing.T) {
			pdu := unhex(t, ex.hex)
			key, other := ks.Client[:], ks.Server[:]
			if ex.server {
				key, other = other, key
			}
			if AuthMode(pdu) != AuthControl || AuthTime(pdu) != exTime || AuthKeyID(pdu) != 7 {
				t.Fatalf("auth block: mode %d time %#x keyId %d", AuthMode(pdu), AuthTime(pdu), AuthKeyID(pdu))
			}
			if !VerifyDigest(pdu, key) {
				t.Errorf("digest does not verify with the %s key", map[bool]string{false: "client", true: "server"}[ex.server])
			}
			if VerifyDigest(pdu, other) {
				t.Error("digest verifies with the other direction's key")
			}
			if VerifyDigest(pdu, []byte(exKey)) {
				t.Error("digest verifies with the raw key")
			}
			resigned := bytes.Clone(pdu)
			clear(digestOf(resigned))
			Sign(resigned, key, exTime, 7)
			if !bytes.Equal(resigned, pdu) {
				t.Errorf("re-signed:\n got %x\nwant %x", resigned, pdu)
			}
		})
	}
	// The HMAC input of the Setup Request spelled out: the PDU with its
	// digest zeroed.
	m := unhex(t, `ace100140001921201000000000001016b0ceaee
		0000000000000000000000000000000000000000000000000000000000000000
		07000000`)
	mac := hmac.New(sha256.New, ks.Client[:])
	mac.Write(m)
	if got := mac.Sum(nil); !bytes.Equal(got, digestOf(unhex(t, exPDUs[0].hex))) {
		t.Errorf("HMAC over the printed M = %x", got)
	}
}

func TestSignLayout(t *testing.T) {
	key := []byte("k")
	for _, n := range []int{44, 48, 56, 60, 104} {
		pdu := make([]byte, n)
		for i := range pdu {
			pdu[i] = byte(i*7 + 1)
		}
		orig := bytes.Clone(pdu)
		Sign(pdu, key, 0x01020304, 9)
		if !bytes.Equal(pdu[:n-41], orig[:n-41]) {
			t.Errorf("len %d: Sign changed bytes before the auth block", n)
		}
		if pdu[n-41] != 1 || binary.BigEndian.Uint32(pdu[n-40:]) != 0x01020304 ||
			pdu[n-4] != 9 || pdu[n-3] != 0 || pdu[n-2] != 0 || pdu[n-1] != 0 {
			t.Errorf("len %d: auth block %x", n, pdu[n-44:])
		}
		// The digest equals HMAC over a copy with digest and checksum zeroed.
		m := bytes.Clone(pdu)
		clear(m[n-36 : n-4])
		mac := hmac.New(sha256.New, key)
		mac.Write(m)
		if !bytes.Equal(mac.Sum(nil), pdu[n-36:n-4]) {
			t.Errorf("len %d: wrong digest", n)
		}
		if !VerifyDigest(pdu, key) {
			t.Errorf("len %d: own signature does not verify", n)
		}
	}
}

func TestVerifyDigest(t *testing.T) {
	key := []byte("some key")
	pdu := unhex(t, exPDUs[3].hex) // a 104-byte TA Request
	Sign(pdu, key, 1000, 3)
	keep := bytes.Clone(pdu)
	if !VerifyDigest(pdu, key) {
		t.Fatal("does not verify")
	}
	if !bytes.Equal(pdu, keep) {
		t.Fatal("VerifyDigest modified its input")
	}
	// The checksum is outside the digest: a checksum added later is fine.
	binary.BigEndian.PutUint16(pdu[len(pdu)-2:], 0xbeef)
	if !VerifyDigest(pdu, key) {
		t.Error("checksum field affects the digest")
	}
	// Every other byte is covered.
	for i := 0; i < len(pdu)-2; i++ {
		c := bytes.Clone(pdu)
		c[i] ^= 0x10
		if VerifyDigest(c, key) {
			t.Errorf("flipping byte %d still verifies", i)
		}
	}
	if VerifyDigest(pdu[:43], key) {
		t.Error("43-byte PDU verifies")
	}
	if VerifyDigest(pdu, []byte("some kez")) {
		t.Error("verifies with another key")
	}
}

func TestSignAllocs(t *testing.T) {
	key := make([]byte, 32)
	pdu := make([]byte, 104)
	base := race.AllocsPerRun(100, func() {
		mac := hmac.New(sha256.New, key)
		mac.Write(pdu)
		var sum [32]byte
		mac.Sum(sum[:0])
	})
	sign := race.AllocsPerRun(100, func() { Sign(pdu, key, 1, 1) })
	verify := race.AllocsPerRun(100, func() { VerifyDigest(pdu, key) })
	if sign > base || verify > base {
		t.Errorf("allocations: Sign %v, VerifyDigest %v, bare crypto/hmac %v", sign, verify, base)
	}
}

func TestCheckTime(t *testing.T) {
	const at = 1796008686
	for _, tc := range []struct {
		off  int64
		want bool
	}{{-6, false}, {-5, true}, {0, true}, {5, true}, {6, false}, {-3600, false}} {
		now := time.Unix(at-tc.off, 999_999_999) // fractions of a second do not count
		if got := CheckTime(at, now); got != tc.want {
			t.Errorf("authTime = now%+d: got %v, want %v", tc.off, got, tc.want)
		}
	}
	if CheckTime(0, time.Unix(3, 0)) != true || CheckTime(0xffffffff, time.Unix(3, 0)) {
		t.Error("window around the epoch")
	}
}

func TestClearAuth(t *testing.T) {
	pdu := unhex(t, exPDUs[1].hex)
	c := bytes.Clone(pdu)
	ClearDigest(c)
	if !bytes.Equal(c[:20], pdu[:20]) || !bytes.Equal(c[52:], pdu[52:]) || !bytes.Equal(c[20:52], make([]byte, 32)) {
		t.Errorf("ClearDigest: %x", c)
	}
	c = bytes.Clone(pdu)
	ClearAuth(c)
	if !bytes.Equal(c[:16], pdu[:16]) || !bytes.Equal(c[16:54], make([]byte, 38)) {
		t.Errorf("ClearAuth: %x", c)
	}
}

// signedSetup returns a Setup Request with authMode 1 signed the way a
// client of version pver with shared key key would sign it.
func signedSetup(t *testing.T, pver uint16, key string, at uint32, keyID uint8) []byte {
	t.Helper()
	pdu := unhex(t, exPDUs[0].hex)
	binary.BigEndian.PutUint16(pdu[2:], pver)
	k := []byte(key)
	if pver >= 20 {
		ks := DeriveKeys(k, at)
		k = ks.Client[:]
	}
	Sign(pdu, k, at, keyID)
	return pdu
}

func mustKeyFile(t *testing.T, text string) *KeyFile {
	t.Helper()
	f, err := ParseKeyFile(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestVerifySetup(t *testing.T) {
	const at = 1796008686
	now := time.Unix(at, 0)
	file := mustKeyFile(t, "7,file-seven\n0,file-zero\n")
	both := &ServerKeys{File: file, Single: []byte("single")}
	fileOnly := &ServerKeys{File: file}
	singleOnly := &ServerKeys{Single: []byte("single")}
	derive := func(k string) SessionKeys { return DeriveKeys([]byte(k), at) }

	for _, tc := range []struct {
		name     string
		srv      *ServerKeys
		pdu      []byte
		pver     uint16
		now      time.Time
		wantKeys SessionKeys
		wantCode uint8
	}{
		{"file entry", both, signedSetup(t, 20, "file-seven", at, 7), 20, now, derive("file-seven"), 0},
		{"keyId absent from file, -a key", both, signedSetup(t, 20, "single", at, 9), 20, now, derive("single"), 0},
		{"keyId in file, signed with -a key", both, signedSetup(t, 20, "single", at, 7), 20, now, derive("single"), 0},
		{"keyId in file, -a only", singleOnly, signedSetup(t, 20, "single", at, 7), 20, now, derive("single"), 0},
		{"other file entry's key", fileOnly, signedSetup(t, 20, "file-zero", at, 7), 20, now, derive("file-seven"), SetupAuthFail},
		{"wrong key, both tried: last is -a", both, signedSetup(t, 20, "wrong", at, 7), 20, now, derive("single"), SetupAuthFail},
		{"wrong key, file only", fileOnly, signedSetup(t, 20, "wrong", at, 7), 20, now, derive("file-seven"), SetupAuthFail},
		{"keyId absent, file only: nothing tried", fileOnly, signedSetup(t, 20, "file-seven", at, 9), 20, now, SessionKeys{}, SetupAuthFail},
		{"5 s late", both, signedSetup(t, 20, "file-seven", at, 7), 20, now.Add(5 * time.Second), derive("file-seven"), 0},
		{"6 s late", both, signedSetup(t, 20, "file-seven", at, 7), 20, now.Add(6 * time.Second), derive("file-seven"), SetupAuthTime},
		{"6 s early", both, signedSetup(t, 20, "single", at, 7), 20, now.Add(-6 * time.Second), derive("single"), SetupAuthTime},
		{"wrong key and stale: 7 wins", singleOnly, signedSetup(t, 20, "wrong", at, 0), 20, now.Add(time.Hour), derive("single"), SetupAuthFail},
		{"pver 21 derives like 20", singleOnly, signedSetup(t, 21, "single", at, 0), 21, now, derive("single"), 0},
		{"legacy raw key", singleOnly, signedSetup(t, 11, "single", at, 0), 11, now, SessionKeys{}, 0},
		{"legacy raw key from file", both, signedSetup(t, 19, "file-zero", at, 0), 19, now, SessionKeys{}, 0},
		{"legacy request signed with derived key", singleOnly, signedSetup(t, 20, "single", at, 0), 11, now, SessionKeys{}, SetupAuthFail},
		{"v20 request signed with raw key", singleOnly, signedSetup(t, 11, "single", at, 0), 20, now, derive("single"), SetupAuthFail},
		{"legacy stale", singleOnly, signedSetup(t, 11, "single", at, 0), 11, now.Add(-10 * time.Second), SessionKeys{}, SetupAuthTime},
		{"unkeyed server checks nothing", &ServerKeys{}, signedSetup(t, 20, "single", at, 0), 20, now, SessionKeys{}, 0},
		{"nil server keys", nil, signedSetup(t, 20, "single", at, 0), 20, now, SessionKeys{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, code := tc.srv.VerifySetup(tc.pdu, tc.pver, tc.now)
			if code != tc.wantCode {
				t.Errorf("code %d, want %d", code, tc.wantCode)
			}
			if keys != tc.wantKeys {
				t.Errorf("keys %x..., want %x...", keys.Client[:4], tc.wantKeys.Client[:4])
			}
		})
	}

	// authMode 0 and 2 are not VerifySetup's business.
	for _, mode := range []uint8{0, 2} {
		pdu := signedSetup(t, 20, "single", at, 0)
		pdu[15] = mode
		if keys, code := both.VerifySetup(pdu, 20, now); code != 0 || keys != (SessionKeys{}) {
			t.Errorf("authMode %d: code %d", mode, code)
		}
	}
}

func TestCheckMode(t *testing.T) {
	keyed := &ServerKeys{Single: []byte("k")}
	fileKeyed := &ServerKeys{File: mustKeyFile(t, "3,k")}
	for _, tc := range []struct {
		srv  *ServerKeys
		mode uint8
		want uint8
	}{
		{nil, 0, 0}, {&ServerKeys{}, 0, 0}, {&ServerKeys{}, 1, SetupAuthNotConf},
		{&ServerKeys{}, 2, SetupAuthNotConf}, {nil, 9, SetupAuthNotConf},
		{keyed, 0, SetupAuthRequired}, {keyed, 1, 0}, {keyed, 2, SetupAuthMode},
		{keyed, 255, SetupAuthMode}, {fileKeyed, 0, SetupAuthRequired}, {fileKeyed, 1, 0},
	} {
		if got := tc.srv.CheckMode(tc.mode); got != tc.want {
			t.Errorf("%+v authMode %d: %d, want %d", tc.srv, tc.mode, got, tc.want)
		}
	}
}

func TestVerifyResponseAndRequest(t *testing.T) {
	ks := DeriveKeys([]byte(exKey), exTime)
	wrong := DeriveKeys([]byte(exKey), exTime+1)
	now := time.Unix(exTime, 0)
	resp := unhex(t, exPDUs[4].hex)
	req := unhex(t, exPDUs[3].hex)
	check := func(name string, got, want uint8) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
	}
	check("response", VerifyResponse(resp, ks, now), 0)
	check("response +5 s", VerifyResponse(resp, ks, now.Add(5*time.Second)), 0)
	check("response +6 s", VerifyResponse(resp, ks, now.Add(6*time.Second)), SetupAuthTime)
	check("response -6 s", VerifyResponse(resp, ks, now.Add(-6*time.Second)), SetupAuthTime)
	check("response wrong keys", VerifyResponse(resp, wrong, now), SetupAuthFail)
	check("response wrong keys and stale", VerifyResponse(resp, wrong, now.Add(time.Hour)), SetupAuthFail)
	check("request as response", VerifyResponse(req, ks, now), SetupAuthFail)
	check("request", VerifyRequest(req, ks, now), 0)
	check("request +6 s", VerifyRequest(req, ks, now.Add(6*time.Second)), SetupAuthTime)
	check("response as request", VerifyRequest(resp, ks, now), SetupAuthFail)
	check("short", VerifyResponse(resp[:40], ks, now), SetupAuthFail)

	// A valid digest does not help when authMode is not 1.
	for _, mode := range []uint8{0, 2} {
		c := bytes.Clone(resp)
		c[len(c)-41] = mode
		clear(digestOf(c))
		mac := hmac.New(sha256.New, ks.Server[:])
		mac.Write(c)
		copy(digestOf(c), mac.Sum(nil))
		if !VerifyDigest(c, ks.Server[:]) {
			t.Fatal("test setup: digest")
		}
		check(fmt.Sprintf("authMode %d", mode), VerifyResponse(c, ks, now), SetupAuthFail)
	}
}

func TestAuthError(t *testing.T) {
	for _, tc := range []struct {
		err  AuthError
		want string
	}{
		{AuthError{SetupAuthFail, "setup response"}, "authentication failure of setup response"},
		{AuthError{SetupAuthTime, "test activation response"}, "authentication time invalid in test activation response"},
		{AuthError{4, "setup response"}, "authentication error 4 in setup response"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

// Golden captures.

// authConn follows one Test Connection of a capture.
type authConn struct {
	keys  SessionKeys
	keyID uint8
	setup bool
}

// TestGoldenAuthenticated checks every authenticated control PDU of the
// successful authenticated scenarios: digest with the right key only,
// time window around the PDU's own time, byte-exact re-signing, and the
// server's acceptance of the Setup Request.
func TestGoldenAuthenticated(t *testing.T) {
	for _, scenario := range []string{"us_auth_a", "ds_auth_a_keyid5", "ds_keyfile_srv_client_a_y1"} {
		for _, file := range []string{"pdus.jsonl", "pdus_jsonrun.jsonl"} {
			t.Run(scenario+"/"+file, func(t *testing.T) {
				pdus := readCaptures(t, scenario, file)
				srvOpt, cliOpt := readCmdAuth(t, scenario)
				var kf *KeyFile
				if srvOpt.KeyFile != "" {
					var err error
					if kf, err = LoadKeyFile(goldenPath(t, scenario, srvOpt.KeyFile)); err != nil {
						t.Fatal(err)
					}
				}
				srv, err := NewServerKeys(srvOpt.Key, kf)
				if err != nil {
					t.Fatal(err)
				}
				if !srv.Configured() {
					t.Fatal("server has no key in cmd.txt")
				}
				cliKey, cliID, err := ClientKey(cliOpt.Key, nil, cliOpt.KeyID, cliOpt.IDGiven)
				if err != nil || cliKey == nil {
					t.Fatalf("client key: %v", err)
				}
				checkGoldenConn(t, pdus, srv, cliKey, cliID)
			})
		}
	}
}

func checkGoldenConn(t *testing.T, pdus []capturedPDU, srv *ServerKeys, cliKey []byte, cliID uint8) {
	t.Helper()
	conns := map[int]*authConn{}
	seen := map[string]int{}
	for i, p := range pdus {
		if p.ID != "ace1" && p.ID != "dead" && p.ID != "ace2" {
			continue
		}
		b := p.Bytes
		what := p.ID + "/" + p.Dir
		seen[what]++
		at := AuthTime(b)
		now := time.Unix(int64(at), 0)
		if AuthMode(b) != AuthControl {
			t.Errorf("#%d %s: authMode %d", i, what, AuthMode(b))
			continue
		}
		if AuthKeyID(b) != cliID {
			t.Errorf("#%d %s: keyId %d, want %d", i, what, AuthKeyID(b), cliID)
		}
		if b[len(b)-3] != 0 || b[len(b)-2] != 0 || b[len(b)-1] != 0 {
			t.Errorf("#%d %s: reservedAuth1/checkSum not zero", i, what)
		}

		if what == "ace1/c2s" {
			ks := DeriveKeys(cliKey, at)
			conns[clientPortOf(&p)] = &authConn{keys: ks, keyID: cliID, setup: true}
			for _, off := range []int64{-1, 0, 1} {
				got, code := srv.VerifySetup(b, ProtocolVersion, now.Add(time.Duration(off)*time.Second))
				if code != 0 || got != ks {
					t.Errorf("#%d server VerifySetup at %+d s: code %d, keys match %v", i, off, code, got == ks)
				}
			}
			for _, off := range []int64{-6, 6, 60} {
				if _, code := srv.VerifySetup(b, ProtocolVersion, now.Add(time.Duration(off)*time.Second)); code != SetupAuthTime {
					t.Errorf("#%d server VerifySetup at %+d s: code %d, want %d", i, off, code, SetupAuthTime)
				}
			}
			if _, code := srv.VerifySetup(b, 11, now); code != SetupAuthFail {
				t.Errorf("#%d: v20 request accepted as legacy: code %d", i, code)
			}
		}
		c := conns[clientPortOf(&p)]
		if c == nil {
			t.Fatalf("#%d %s before any Setup Request of port %d", i, what, clientPortOf(&p))
		}
		key, other := c.keys.Client[:], c.keys.Server[:]
		if p.Dir == "s2c" {
			key, other = other, key
		}
		if !VerifyDigest(b, key) {
			t.Errorf("#%d %s: digest does not verify", i, what)
		}
		if VerifyDigest(b, other) {
			t.Errorf("#%d %s: digest verifies with the other direction's key", i, what)
		}
		if VerifyDigest(b, cliKey) {
			t.Errorf("#%d %s: digest verifies with the raw key", i, what)
		}
		wrong := DeriveKeys(append(bytes.Clone(cliKey), 'x'), at)
		if VerifyDigest(b, wrong.Client[:]) || VerifyDigest(b, wrong.Server[:]) {
			t.Errorf("#%d %s: digest verifies with keys from another shared key", i, what)
		}
		for _, off := range []int64{-1, 0, 1} {
			if !CheckTime(at, now.Add(time.Duration(off)*time.Second)) {
				t.Errorf("#%d %s: time check fails at %+d s", i, what, off)
			}
		}
		for _, off := range []int64{-6, 6} {
			if CheckTime(at, now.Add(time.Duration(off)*time.Second)) {
				t.Errorf("#%d %s: time check passes at %+d s", i, what, off)
			}
		}

		// Each side's own check of what it receives.
		switch what {
		case "ace1/s2c", "ace2/s2c":
			if code := VerifyResponse(b, c.keys, now); code != 0 {
				t.Errorf("#%d %s: VerifyResponse %d", i, what, code)
			}
			if code := VerifyResponse(b, c.keys, now.Add(6*time.Second)); code != SetupAuthTime {
				t.Errorf("#%d %s: VerifyResponse 6 s later %d", i, what, code)
			}
			if code := VerifyResponse(b, wrong, now); code != SetupAuthFail {
				t.Errorf("#%d %s: VerifyResponse with wrong keys %d", i, what, code)
			}
		case "ace2/c2s":
			if code := VerifyRequest(b, c.keys, now); code != 0 {
				t.Errorf("#%d %s: VerifyRequest %d", i, what, code)
			}
			if code := VerifyRequest(b, c.keys, now.Add(-6*time.Second)); code != SetupAuthTime {
				t.Errorf("#%d %s: VerifyRequest 6 s earlier %d", i, what, code)
			}
		}

		resigned := bytes.Clone(b)
		clear(digestOf(resigned))
		Sign(resigned, key, at, AuthKeyID(b))
		if !bytes.Equal(resigned, b) {
			t.Errorf("#%d %s: re-signed PDU differs:\n got %x\nwant %x", i, what, resigned, b)
		}
	}
	for _, what := range []string{"ace1/c2s", "ace1/s2c", "dead/s2c", "ace2/c2s", "ace2/s2c"} {
		if seen[what] != 1 {
			t.Errorf("%d %s PDUs in the capture, want 1", seen[what], what)
		}
	}
}

// findSetup returns the Setup Request and Setup Response of a capture that
// has exactly one of each and no other control PDU.
func findSetup(t *testing.T, pdus []capturedPDU) (req, resp []byte) {
	t.Helper()
	for _, p := range pdus {
		switch {
		case p.ID == "ace1" && p.Dir == "c2s" && req == nil:
			req = p.Bytes
		case p.ID == "ace1" && p.Dir == "s2c" && resp == nil:
			resp = p.Bytes
		case p.ID == "ace1" || p.ID == "dead" || p.ID == "ace2":
			t.Errorf("unexpected %s %s PDU after a rejection", p.ID, p.Dir)
		}
	}
	if req == nil || resp == nil {
		t.Fatal("capture lacks the Setup Request or Response")
	}
	return req, resp
}

// TestGoldenAuthMismatch: server -a keyA, client -a keyB. The server
// rejects with 7 and signs with the keyA-derived server key; the client's
// own check fails first (ErrorStatus 107).
func TestGoldenAuthMismatch(t *testing.T) {
	const scenario = "auth_mismatch"
	for _, file := range []string{"pdus.jsonl", "pdus_jsonrun.jsonl"} {
		t.Run(file, func(t *testing.T) {
			srvOpt, cliOpt := readCmdAuth(t, scenario)
			if srvOpt.Key == "" || cliOpt.Key == "" || srvOpt.Key == cliOpt.Key {
				t.Fatalf("cmd.txt: want two different -a keys, got %q and %q", srvOpt.Key, cliOpt.Key)
			}
			req, resp := findSetup(t, readCaptures(t, scenario, file))
			at := AuthTime(req)
			keysA := DeriveKeys([]byte(srvOpt.Key), at)
			keysB := DeriveKeys([]byte(cliOpt.Key), at)

			if !VerifyDigest(req, keysB.Client[:]) || VerifyDigest(req, keysA.Client[:]) {
				t.Error("request is not signed with the keyB client key alone")
			}
			srv, err := NewServerKeys(srvOpt.Key, nil)
			if err != nil {
				t.Fatal(err)
			}
			keys, code := srv.VerifySetup(req, ProtocolVersion, time.Unix(int64(at), 0))
			if code != SetupAuthFail || keys != keysA {
				t.Errorf("VerifySetup: code %d (want 7), keyA-derived keys %v", code, keys == keysA)
			}

			if resp[9] != SetupAuthFail {
				t.Errorf("response cmdResponse %d, want 7", resp[9])
			}
			if !VerifyDigest(resp, keysA.Server[:]) {
				t.Error("response does not verify with the keyA server key")
			}
			if VerifyDigest(resp, keysB.Server[:]) {
				t.Error("response verifies with the keyB server key")
			}
			rnow := time.Unix(int64(AuthTime(resp)), 0)
			if code := VerifyResponse(resp, keysB, rnow); code != SetupAuthFail {
				t.Errorf("client check with keyB: %d, want 7 (ErrorStatus 107)", code)
			}
			if code := VerifyResponse(resp, keysA, rnow); code != 0 {
				t.Errorf("check with keyA: %d", code)
			}
			resigned := bytes.Clone(resp)
			clear(digestOf(resigned))
			Sign(resigned, keys.Server[:], AuthTime(resp), AuthKeyID(req))
			if !bytes.Equal(resigned, resp) {
				t.Errorf("re-signed rejection differs:\n got %x\nwant %x", resigned, resp)
			}
		})
	}
}

// TestGoldenAuthUnexpected: a server without a key answers an authenticated
// request with code 4, authMode 1 and a digest made with 32 zero bytes.
func TestGoldenAuthUnexpected(t *testing.T) {
	const scenario = "auth_unexpected"
	for _, file := range []string{"pdus.jsonl", "pdus_jsonrun.jsonl"} {
		t.Run(file, func(t *testing.T) {
			srvOpt, cliOpt := readCmdAuth(t, scenario)
			if srvOpt != (cmdAuth{}) || cliOpt.Key == "" {
				t.Fatalf("cmd.txt: want an unkeyed server and a keyed client, got %+v, %+v", srvOpt, cliOpt)
			}
			req, resp := findSetup(t, readCaptures(t, scenario, file))
			at := AuthTime(req)
			cli := DeriveKeys([]byte(cliOpt.Key), at)
			if !VerifyDigest(req, cli.Client[:]) {
				t.Error("request does not verify with the client key")
			}

			srv, _ := NewServerKeys("", nil)
			keys, code := srv.VerifySetup(req, ProtocolVersion, time.Unix(int64(at), 0))
			if code != 0 || keys != (SessionKeys{}) {
				t.Errorf("unkeyed VerifySetup: code %d, zero keys %v", code, keys == SessionKeys{})
			}
			if code := srv.CheckMode(AuthMode(req)); code != SetupAuthNotConf {
				t.Errorf("CheckMode: %d, want 4", code)
			}

			if resp[9] != SetupAuthNotConf || AuthMode(resp) != AuthControl || AuthKeyID(resp) != AuthKeyID(req) {
				t.Errorf("response: cmdResponse %d authMode %d keyId %d", resp[9], AuthMode(resp), AuthKeyID(resp))
			}
			if !VerifyDigest(resp, keys.Server[:]) {
				t.Error("response does not verify with the zero key")
			}
			rnow := time.Unix(int64(AuthTime(resp)), 0)
			if code := VerifyResponse(resp, cli, rnow); code != SetupAuthFail {
				t.Errorf("client check: %d, want 7 (ErrorStatus 107)", code)
			}
			resigned := bytes.Clone(resp)
			clear(digestOf(resigned))
			Sign(resigned, make([]byte, 32), AuthTime(resp), AuthKeyID(req))
			if !bytes.Equal(resigned, resp) {
				t.Errorf("re-signed rejection differs:\n got %x\nwant %x", resigned, resp)
			}
		})
	}
}

// TestAnswerAuth: a response's auth block by the request's version and
// mode. Protocol 20 with authMode 1 is signed with the server's key (the
// client verifies it); without it the block is cleared; a legacy one is
// echoed, its digest zeroed only when it was checked. The request's
// checksum never survives.
func TestAnswerAuth(t *testing.T) {
	keys := DeriveKeys([]byte("answer-auth-key"), 1700000000)
	now := time.Unix(1700000001, 0)
	request := func(pver uint16) []byte {
		b := (&SetupPDU{ProtocolVer: pver, MCCount: 1, CmdRequest: SetupCmdRequest}).Encode(make([]byte, SetupLen))
		Sign(b, keys.Client[:], uint32(now.Unix()), 3)
		b[len(b)-2], b[len(b)-1] = 0x12, 0x34 // a checksum
		return b
	}
	resp := request(AuthECNProtocolVer)
	answerAuth(resp, AuthECNProtocolVer, AuthControl, 3, keys, true, now)
	if code := VerifyResponse(resp, keys, now); code != 0 || AuthKeyID(resp) != 3 {
		t.Errorf("v20 authMode 1: verify code %d, key ID %d", code, AuthKeyID(resp))
	}
	resp = request(AuthECNProtocolVer)
	answerAuth(resp, AuthECNProtocolVer, 0, 3, keys, false, now)
	if AuthTime(resp) != 0 || AuthDigest(resp) != ([authDigestLen]byte{}) || AuthKeyID(resp) != 0 {
		t.Error("v20 without authMode 1: auth block not cleared")
	}
	for _, checked := range []bool{false, true} {
		req := request(11)
		resp = request(11)
		answerAuth(resp, 11, AuthControl, 3, keys, checked, now)
		if AuthTime(resp) != AuthTime(req) || AuthKeyID(resp) != 3 {
			t.Errorf("legacy, checked %v: the block is not echoed", checked)
		}
		if zero := AuthDigest(resp) == ([authDigestLen]byte{}); zero != checked {
			t.Errorf("legacy, checked %v: digest zeroed %v", checked, zero)
		}
	}
	if resp[len(resp)-2] != 0 || resp[len(resp)-1] != 0 {
		t.Errorf("legacy: checksum %x survived", resp[len(resp)-2:])
	}
}
