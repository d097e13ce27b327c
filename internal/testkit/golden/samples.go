package golden

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// The fuzz targets' seeds: fuzzSeeds captured PDUs added with f.Add, and up
// to corpusSize more in the committed corpus, which a TestWriteFuzzCorpus
// writes when CorpusEnv is 1.
const (
	fuzzSeeds  = 4
	corpusSize = 12
	CorpusEnv  = "UDPSTP_WRITE_CORPUS"
)

// AddSeeds adds up to fuzzSeeds captured datagrams with pdu_id id to f's
// seeds, picked and converted as Samples does; none when the reference data
// is absent.
func AddSeeds(f *testing.F, id string, conv func([]byte) []byte, class func([]byte) string) {
	f.Helper()
	for _, s := range Samples(f, id, fuzzSeeds, conv, class) {
		f.Add(s)
	}
}

// RequireCorpusWrite skips a corpus-writing test unless CorpusEnv is 1, and
// fails it when the reference data it writes from is absent.
func RequireCorpusWrite(t *testing.T) {
	t.Helper()
	if os.Getenv(CorpusEnv) != "1" {
		t.Skipf("set %s=1 to write testdata/fuzz from the OB-UDPST captures", CorpusEnv)
	}
	if d, ok := Dir(); !ok {
		t.Fatalf("OB-UDPST reference data not found at %q", d)
	}
}

// Samples returns, for seeding fuzz targets, up to n distinct captured datagrams with pdu_id id,
// spread over as many scenarios as possible: the candidates are taken one per
// scenario in turn (each scenario's capture spread out), and the first pass
// keeps only one datagram per class (class may be nil), rarest classes first,
// so that refusals, stops or checksummed PDUs are not crowded out; a second
// pass fills up in turn order. conv, if not nil, converts each datagram (nil:
// skip it). It returns nil when the reference data is absent, so fuzz targets
// can seed from it silently.
func Samples(tb testing.TB, id string, n int, conv func([]byte) []byte, class func([]byte) string) [][]byte {
	tb.Helper()
	if _, ok := Dir(); !ok {
		return nil
	}
	files := make([]string, 0, len(CaptureFiles))
	for f := range CaptureFiles {
		files = append(files, f)
	}
	sort.Strings(files)
	var per [][][]byte
	for _, sc := range Scenarios(tb) {
		var all [][]byte
		for _, f := range files {
			for _, p := range sc.PDUs(tb, f) {
				if p.ID == id {
					all = append(all, p.Bytes)
				}
			}
		}
		if len(all) > 0 {
			per = append(per, Spread(all))
		}
	}
	per = Spread(per) // interleave downstream, upstream and refusal scenarios
	seen := map[string]bool{}
	var ordered [][]byte
	for round, more := 0, true; more; round++ {
		more = false
		for i, list := range per {
			if round >= len(list) {
				continue
			}
			more = true
			b := list[(round+i)%len(list)]
			if conv != nil {
				if b = conv(b); b == nil {
					continue
				}
			}
			if !seen[string(b)] {
				seen[string(b)] = true
				ordered = append(ordered, b)
			}
		}
	}
	if class == nil {
		class = func([]byte) string { return "" }
	}
	// First pass: one per class, rarest classes first.
	count := map[string]int{}
	for _, b := range ordered {
		count[class(b)]++
	}
	idx := make([]int, len(ordered))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return count[class(ordered[idx[i]])] < count[class(ordered[idx[j]])] })
	var out [][]byte
	taken := make([]bool, len(ordered))
	classes := map[string]bool{}
	for _, i := range idx {
		if c := class(ordered[i]); len(out) < n && !classes[c] {
			classes[c] = true
			taken[i] = true
			out = append(out, ordered[i])
		}
	}
	for i, b := range ordered {
		if len(out) < n && !taken[i] {
			out = append(out, b)
		}
	}
	return out
}

// Spread reorders a list so that its first entries are far apart: the
// middle one first, then steps of about 0.618 of its length.
func Spread[T any](all []T) []T {
	n := len(all)
	step := int(float64(n)*0.618) | 1
	for {
		a, b := step, n
		for b != 0 {
			a, b = b, a%b
		}
		if a == 1 {
			break
		}
		step++
	}
	out := make([]T, n)
	for k := range out {
		out[k] = all[(n/2+k*step)%n]
	}
	return out
}

// WriteCorpus writes up to corpusSize captured datagrams with pdu_id id,
// picked and converted as Samples does, into testdata/fuzz/<name> exactly as
// `go test -fuzz` writes its findings: the v1 encoding, named by the first
// 16 hex digits of the SHA-256 of the file's content.
func WriteCorpus(t *testing.T, name, id string, conv func([]byte) []byte, class func([]byte) string) {
	t.Helper()
	WriteCorpusInputs(t, name, Samples(t, id, corpusSize, conv, class))
}

// WriteCorpusInputs writes inputs as the seed corpus files of the fuzz
// target name, in testdata/fuzz/name of the package under test.
func WriteCorpusInputs(t *testing.T, name string, inputs [][]byte) {
	t.Helper()
	if len(inputs) == 0 {
		t.Fatalf("%s: no inputs", name)
	}
	dir := filepath.Join("testdata", "fuzz", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		data := fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", in)
		path := filepath.Join(dir, fmt.Sprintf("%x", sha256.Sum256(data))[:16])
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s: %d files in %s", name, len(inputs), dir)
}
