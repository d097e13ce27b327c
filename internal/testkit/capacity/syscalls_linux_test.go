package capacity

import "testing"

func TestParsePerfCount(t *testing.T) {
	const ev = "raw_syscalls:sys_enter"
	for _, c := range []struct {
		out  string
		want int64
	}{
		{"12345,,raw_syscalls:sys_enter,10003151712,100.00,,\n", 12345},
		{"\n12,,other:event,1,100.00,,\n7,,raw_syscalls:sys_enter,1,100.00,,\n", 7},
		{"<not counted>,,raw_syscalls:sys_enter,0,0.00,,\n", -1},
		{"<not supported>,,raw_syscalls:sys_enter,0,0.00,,\n", -1},
		{"event syntax error: 'raw_syscalls:sys_enter'\n", -1},
		{"", -1},
	} {
		if got := parsePerfCount(c.out, ev); got != c.want {
			t.Errorf("parsePerfCount(%q) = %d, want %d", c.out, got, c.want)
		}
	}
	if v := perPacket(-1, 100); v != -1 {
		t.Errorf("perPacket without a count = %v, want -1", v)
	}
	if v := perPacket(50, 100); v != 0.5 {
		t.Errorf("perPacket(50, 100) = %v", v)
	}
}
