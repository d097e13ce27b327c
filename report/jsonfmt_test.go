package report

import (
	"bytes"
	"os"
	"testing"
)

func TestFormatNumber(t *testing.T) {
	cases := []struct {
		v    float64
		p    int
		want string
	}{
		// anything exactly 0 with a precision is 0.0
		{0, precSeconds, "0.0"},
		{0, precPercent, "0.0"},
		{0, precRatio, "0.0"},
		{0, precDelay, "0.0"},
		// fixed decimals
		{1, precSeconds, "1.0"},
		{4.1, precSeconds, "4.1"},
		{100, precPercent, "100.00"},
		{99.70942, precPercent, "99.71"},
		{21496.78, precPercent, "21496.78"},
		{123456789.125, precPercent, "123456789.12"}, // round half to even on the exact binary value, as glibc
		{0.105, precPercent, "0.10"},                 // 0.105 is 0.10499999... in binary
		{0.00119, precRatio, "0.001190000"},
		{1.0 / 3, precRatio, "0.333333333"},
		{6799.0 / 776000, precRatio, "0.008761598"},
		// delays in seconds: %.9g, ".0" forced when there is no point
		{0.001, precDelay, "0.001"},
		{0.034, precDelay, "0.034"},
		{1, precDelay, "1.0"},
		{12, precDelay, "12.0"},
		{-0.002, precDelay, "-0.002"},
		{-1, precDelay, "-1.0"},
		{4294967.295, precDelay, "4294967.29"},
		{0.0005, precDelay, "0.0005"},
		{1e-05, precDelay, "0.0"}, // "%.9g" gives 1e-05 (no point): cJSON then prints "%.1f"
		{1.5e-05, precDelay, "1.5e-05"},
		{1e10, precDelay, "10000000000.0"},
	}
	for _, c := range cases {
		if got := formatNumber(c.v, c.p); got != c.want {
			t.Errorf("formatNumber(%v, %d) = %q, want %q", c.v, c.p, got, c.want)
		}
	}
	// integers (no precision): shortest form
	for n, want := range map[int64]string{24601: "24601", 1000000000: "1000000000", -1: "-1", 0: "0"} {
		if got := string(render(jint(n), false)); got != want {
			t.Errorf("integer %d printed %q, want %q", n, got, want)
		}
	}
}

func TestFormatTime(t *testing.T) {
	cases := map[int64]string{
		0:                   "1970-01-01T00:00:00.000000Z",
		1796009000123456789: "2026-11-30T03:23:20.123456Z", // microseconds truncated, not rounded
		1796009000999999999: "2026-11-30T03:23:20.999999Z",
	}
	for wall, want := range cases {
		if got := formatTime(wall); got != want {
			t.Errorf("formatTime(%d) = %q, want %q", wall, got, want)
		}
	}
}

func TestRenderLayout(t *testing.T) {
	doc := &jobj{}
	doc.int("A", 1)
	in := doc.obj("B")
	in.str("S", "q\"\\\n\t\x01é")
	arr := jarr{}
	for i := range 2 {
		o := &jobj{}
		o.num("X", float64(i), precPercent)
		arr = append(arr, o)
	}
	in.add("L", arr)
	in.add("E", jarr{})
	doc.add("O", &jobj{})
	compact := `{"A":1,"B":{"S":"q\"\\\n\t\u0001é","L":[{"X":0.0},{"X":1.00}],"E":[]},"O":{}}`
	if got := string(render(doc, false)); got != compact {
		t.Errorf("compact:\n got %s\nwant %s", got, compact)
	}
	formatted := "{\n\t\"A\":\t1,\n\t\"B\":\t{\n\t\t\"S\":\t\"q\\\"\\\\\\n\\t\\u0001é\",\n" +
		"\t\t\"L\":\t[{\n\t\t\t\t\"X\":\t0.0\n\t\t\t}, {\n\t\t\t\t\"X\":\t1.00\n\t\t\t}],\n" +
		"\t\t\"E\":\t[]\n\t},\n\t\"O\":\t{\n\t}\n}"
	if got := string(render(doc, true)); got != formatted {
		t.Errorf("formatted:\n got %q\nwant %q", got, formatted)
	}
}

// TestGoldenJSONLayout rebuilds every OB-UDPST client.json from its own
// values through the results model, the document builder and the printer,
// and requires the same bytes: keys, order, types, number forms and the
// jsonf layout.
func TestGoldenJSONLayout(t *testing.T) {
	for name, path := range goldenDocs(t) {
		t.Run(name, func(t *testing.T) {
			want, doc := readDoc(t, path)
			r := resultsFromDoc(t, doc)
			got := append(render(r.document(FormatJSONFormatted, false), true), '\n')
			if !bytes.Equal(got, want) {
				os.WriteFile(t.TempDir()+"/got.json", got, 0o644)
				t.Errorf("rebuilt document differs from %s:\n%s", path, firstDiff(got, want))
			}
		})
	}
}

// firstDiff shows where two byte slices start to differ.
func firstDiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-120)
	return "got:  ..." + string(got[lo:min(len(got), i+80)]) + "\nwant: ..." + string(want[lo:min(len(want), i+80)])
}
