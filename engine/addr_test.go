package engine

import (
	"net/netip"
	"testing"
)

func TestAddrForSocket(t *testing.T) {
	v4 := netip.MustParseAddrPort("192.0.2.1:24601")
	mapped := netip.MustParseAddrPort("[::ffff:192.0.2.1]:24601")
	v6 := netip.MustParseAddrPort("[2001:db8::1]:24601")
	cases := []struct {
		in      netip.AddrPort
		v6sock  bool
		want    netip.AddrPort
		wantErr bool
	}{
		{v4, true, mapped, false},
		{mapped, true, mapped, false},
		{v6, true, v6, false},
		{v4, false, v4, false},
		{mapped, false, v4, false},
		{v6, false, netip.AddrPort{}, true},
		{netip.AddrPort{}, true, netip.AddrPort{}, true},
	}
	for _, tc := range cases {
		got, err := addrForSocket(tc.in, tc.v6sock)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("addrForSocket(%v, v6=%v) = %v, %v; want %v, err %v", tc.in, tc.v6sock, got, err, tc.want, tc.wantErr)
		}
	}
	if got := unmapAddrPort(mapped); got != v4 {
		t.Errorf("unmap(%v) = %v", mapped, got)
	}
	if !IsIPv4Peer(v4) || !IsIPv4Peer(mapped) || IsIPv4Peer(v6) {
		t.Errorf("IsIPv4Peer wrong")
	}
}

func TestPlanBind(t *testing.T) {
	cases := []struct {
		laddr   string
		o       SocketOptions
		want    bindPlan
		wantErr bool
	}{
		{"", SocketOptions{}, bindPlan{v6: true, addr: netip.MustParseAddrPort("[::]:0")}, false},
		{"[::]:24601", SocketOptions{}, bindPlan{v6: true, addr: netip.MustParseAddrPort("[::]:24601")}, false},
		{"[::]:24601", SocketOptions{V6Only: true}, bindPlan{v6: true, v6only: true, addr: netip.MustParseAddrPort("[::]:24601")}, false},
		{"127.0.0.1:5", SocketOptions{}, bindPlan{addr: netip.MustParseAddrPort("127.0.0.1:5")}, false},
		{"", SocketOptions{Family: 4}, bindPlan{addr: netip.MustParseAddrPort("0.0.0.0:0")}, false},
		{"[::ffff:127.0.0.1]:5", SocketOptions{Family: 4}, bindPlan{addr: netip.MustParseAddrPort("127.0.0.1:5")}, false},
		{"[::1]:5", SocketOptions{Family: 4}, bindPlan{}, true},
		{"", SocketOptions{Family: 6}, bindPlan{v6: true, v6only: true, addr: netip.MustParseAddrPort("[::]:0")}, false},
		{"127.0.0.1:5", SocketOptions{Family: 6}, bindPlan{}, true},
		{"", SocketOptions{Family: 5}, bindPlan{}, true},
	}
	for _, tc := range cases {
		var la netip.AddrPort
		if tc.laddr != "" {
			la = netip.MustParseAddrPort(tc.laddr)
		}
		got, err := planBind(la, tc.o)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("planBind(%q, %+v) = %+v, %v; want %+v, err %v", tc.laddr, tc.o, got, err, tc.want, tc.wantErr)
		}
	}
}
