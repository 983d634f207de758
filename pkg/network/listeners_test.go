package network

import (
	"net"
	"net/netip"
	"os"
	"slices"
	"testing"
)

func TestConflicting(t *testing.T) {
	l := func(addr string) Listener { return Listener{Addr: netip.MustParseAddr(addr), Port: 2379} }
	all := []Listener{l("10.61.0.1"), l("10.62.0.1"), l("0.0.0.0"), l("::"), l("127.0.0.1"), l("fd00::1")}
	tests := []struct {
		ip   string
		want []string
	}{
		{"10.61.0.1", []string{"10.61.0.1:2379", "0.0.0.0:2379", "[::]:2379"}},
		{"10.63.0.1", []string{"0.0.0.0:2379", "[::]:2379"}},
		{"127.0.0.1", []string{"0.0.0.0:2379", "[::]:2379", "127.0.0.1:2379"}},
		// A wildcard listener cannot bind while any address holds the port.
		{"0.0.0.0", []string{"10.61.0.1:2379", "10.62.0.1:2379", "0.0.0.0:2379", "[::]:2379", "127.0.0.1:2379", "[fd00::1]:2379"}},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			var got []string
			for _, c := range conflicting(all, netip.MustParseAddr(tt.ip)) {
				got = append(got, c.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("conflicting(%s) = %q, want %q", tt.ip, got, tt.want)
			}
		})
	}
}

// TestTCPListeners finds a listener of this process, by address, port and
// owner.
func TestTCPListeners(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	ls, err := PortConflicts(netip.MustParseAddr("127.0.0.1"), port)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].String() != ln.Addr().String() {
		t.Fatalf("PortConflicts(127.0.0.1, %d) = %v, want our %s", port, ls, ln.Addr())
	}
	if other, err := PortConflicts(netip.MustParseAddr("127.0.0.2"), port); err != nil || len(other) != 0 {
		t.Errorf("PortConflicts(127.0.0.2, %d) = %v, %v; want none", port, other, err)
	}
	pid, comm, ok := SocketOwner(ls[0].Inode)
	if !ok || pid != os.Getpid() || comm == "" {
		t.Errorf("SocketOwner = %d %q %v, want this process (%d)", pid, comm, ok, os.Getpid())
	}
}

// TestUDPSockets finds a bound UDP socket of this process, and no TCP
// listener on its port.
func TestUDPSockets(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	port := pc.LocalAddr().(*net.UDPAddr).Port
	ls, err := Conflicts("UDP", netip.MustParseAddr("0.0.0.0"), port)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].String() != pc.LocalAddr().String() {
		t.Fatalf("Conflicts(UDP, 0.0.0.0, %d) = %v, want our %s", port, ls, pc.LocalAddr())
	}
	if tcp, err := Conflicts("TCP", netip.MustParseAddr("127.0.0.1"), port); err != nil || len(tcp) != 0 {
		t.Errorf("Conflicts(TCP, 127.0.0.1, %d) = %v, %v; want none", port, tcp, err)
	}
}
