package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// semver is the regular expression semver.org gives for a valid version.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// The JSON names udpstp and its version, in a form that still reads as
// OB-UDPST 9.0.0 to a parser that takes the leading version or compares
// semantic versions.
func TestSoftwareVersionJSON(t *testing.T) {
	var out bytes.Buffer
	c := New(&out, Options{Format: FormatJSON})
	c.Finish()
	var doc struct {
		IPLayerCapSupported struct{ SoftwareVersion string }
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	v := doc.IPLayerCapSupported.SoftwareVersion
	if !strings.HasPrefix(v, "9.0.0+udpstp.") || !semver.MatchString(v) {
		t.Errorf("SoftwareVersion %q: want 9.0.0+udpstp.<version>, a valid semantic version", v)
	}
}

// The text banner has OB-UDPST's lines where its parsers look for them,
// with udpstp's identity in them; the Mode line matches OB-UDPST's, byte
// for byte, for every reference client run's -j, -T and -6.
func TestBannerLines(t *testing.T) {
	var out bytes.Buffer
	c := New(&out, Options{Format: FormatText})
	c.Banner("udpstp", "v1.2.3")
	lines := strings.Split(out.String(), "\n")
	if len(lines) != 3 || lines[0] != "UDP Speed Test" || lines[2] != "" {
		t.Fatalf("banner without Mode: %q, want the title and the Software Ver line", out.String())
	}
	soft := regexp.MustCompile(`^Software Ver: (\S+), Protocol Ver: 20, Built: udpstp v1\.2\.3 \(.*go1\.[0-9.]+.*\)$`)
	m := soft.FindStringSubmatch(lines[1])
	if m == nil || m[1] != "9.0.0+udpstp.v1.2.3" {
		t.Errorf("Software Ver line %q", lines[1])
	}
	// A parser reading OB-UDPST's leading version still reads 9.0.0.
	if lead := regexp.MustCompile(`Software Ver: ([0-9.]+)`).FindStringSubmatch(lines[1]); lead == nil || strings.TrimSuffix(lead[1], ".") != "9.0.0" {
		t.Errorf("leading version of %q is not 9.0.0", lines[1])
	}

	checked := 0
	for _, sc := range golden.Scenarios(t) {
		run, ok := sc.RunNamed("text")
		if !ok {
			continue
		}
		o, ok := golden.ParseUdpstArgs(run.ClientCmd)
		if !ok || !(o.Has('u') || o.Has('d')) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(sc.Path, "client.txt"))
		if err != nil {
			t.Fatal(err)
		}
		var want string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Mode: ") {
				want = l + "\n"
				break
			}
		}
		if want == "" {
			t.Fatalf("%s: no Mode line in client.txt", sc.Name)
		}
		mode := &Mode{Jumbo: !o.Has('j'), TraditionalMTU: o.Has('T'), IPv6Only: o.Has('6'),
			Optimizations: "SendMMsg()+GSO RecvMMsg()+Trunc"}
		out.Reset()
		c := New(&out, Options{Format: FormatText, Mode: mode})
		c.Banner("udpstp", "v1.2.3")
		got := strings.SplitAfter(out.String(), "\n")
		if len(got) != 4 || got[2] != want {
			t.Errorf("%s: banner %q, want its Mode line %q", sc.Name, out.String(), want)
		}
		checked++
	}
	if checked < 10 {
		t.Errorf("only %d reference client runs checked", checked)
	}
	// -6 takes 20 bytes off both sizes, as in OB-UDPST.
	if l := (&Mode{Jumbo: true, IPv6Only: true}).line(); !strings.HasPrefix(l, "Mode: Client, Payload Default[Max]: 1202[8952], ") ||
		!strings.HasSuffix(l, "Optimizations:\n") {
		t.Errorf("IPv6 Mode line %q", l)
	}
	// JSON output has no banner.
	out.Reset()
	New(&out, Options{Format: FormatJSON, Mode: &Mode{}}).Banner("udpstp", "v1")
	if out.Len() != 0 {
		t.Errorf("banner in JSON mode: %q", out.String())
	}
}

// A multi-server test lists every server's address, whichever activated
// first, as OB-UDPST's client does: the second server's activation fills in
// the address the first did not know, and the top-level HostIPAddress is
// the first server's even when another server's connection came first.
func TestHostAddressesOfEveryServer(t *testing.T) {
	var out bytes.Buffer
	c := New(&out, Options{Format: FormatJSON})
	info := testInfo(1)
	info.Hosts = []Host{{"one", "", 24601}, {"two", "198.18.0.2", 24601}}
	if !c.Activate(info) {
		t.Fatal("first Activate not first")
	}
	info.Hosts = []Host{{"one", "198.18.0.1", 24601}, {"two", "198.18.0.2", 24601}}
	if c.Activate(info) {
		t.Fatal("second Activate taken as first")
	}
	c.Finish()
	var doc struct {
		Input struct {
			HostIPAddress string
			HostList      []struct{ HostIPAddress string }
		}
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Input.HostIPAddress != "198.18.0.1" {
		t.Errorf("Input.HostIPAddress %q, want the first server's, 198.18.0.1", doc.Input.HostIPAddress)
	}
	if len(doc.Input.HostList) != 2 || doc.Input.HostList[0].HostIPAddress != "198.18.0.1" || doc.Input.HostList[1].HostIPAddress != "198.18.0.2" {
		t.Errorf("HostList %+v, want both servers' addresses", doc.Input.HostList)
	}
}
