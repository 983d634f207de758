package portproxy

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestParseForward(t *testing.T) {
	ok := Forward{Proto: v1.ProtocolUDP, Listen: netip.MustParseAddrPort("0.0.0.0:53"), Target: netip.MustParseAddrPort("10.10.0.3:30053")}
	tests := []struct {
		in      string
		want    Forward
		wantErr string
	}{
		{in: "udp:0.0.0.0:53=10.10.0.3:30053", want: ok},
		{in: "tcp:127.0.0.1:8080=10.10.0.2:30080", want: Forward{Proto: v1.ProtocolTCP,
			Listen: netip.MustParseAddrPort("127.0.0.1:8080"), Target: netip.MustParseAddrPort("10.10.0.2:30080")}},
		{in: "sctp:127.0.0.1:8080=10.10.0.2:30080", wantErr: `protocol "sctp"`},
		{in: "tcp:127.0.0.1:8080", wantErr: "want PROTO:"},
		{in: "tcp:[::1]:8080=10.10.0.2:1", wantErr: `"[::1]:8080" is not IPv4:port`},
		{in: "tcp:127.0.0.1:0=10.10.0.2:1", wantErr: "is not IPv4:port"},
		{in: "tcp:127.0.0.1:80=node:1", wantErr: `"node:1" is not IPv4:port or [IPv6]:port`},
		{in: "tcp:127.0.0.1:8080=[fd00:61::3]:30080", want: Forward{Proto: v1.ProtocolTCP,
			Listen: netip.MustParseAddrPort("127.0.0.1:8080"), Target: netip.MustParseAddrPort("[fd00:61::3]:30080")}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseForward(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseForward(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseForward(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			if got.String() != tt.in {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

// freeAddr returns a loopback address whose TCP and UDP port is free now.
func freeAddr(t *testing.T) netip.AddrPort {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		a := netip.MustParseAddrPort(ln.Addr().String())
		ln.Close()
		if pc, err := net.ListenPacket("udp", a.String()); err == nil {
			pc.Close()
			return a
		}
	}
	t.Fatal("no free port")
	return netip.AddrPort{}
}

// tcpEcho serves a line echo on loopback and returns its address.
func tcpEcho(t *testing.T) netip.AddrPort {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String())
}

// udpEcho answers each datagram with "echo:" and it.
func udpEcho(t *testing.T) netip.AddrPort {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(append([]byte("echo:"), buf[:n]...), from)
		}
	}()
	return netip.MustParseAddrPort(pc.LocalAddr().String())
}

// TestRun publishes a TCP and a UDP port, reaches each backend through
// it, checks /healthz, and that the ports are free again once Run ends.
func TestRun(t *testing.T) {
	tcpF := Forward{Proto: v1.ProtocolTCP, Listen: freeAddr(t), Target: tcpEcho(t)}
	udpF := Forward{Proto: v1.ProtocolUDP, Listen: freeAddr(t), Target: udpEcho(t)}
	healthz := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, slog.New(slog.DiscardHandler), Options{Forwards: []Forward{tcpF, udpF}, Healthz: healthz})
	}()
	var resp *http.Response
	var err error
	for range 100 { // until Run serves
		if resp, err = http.Get("http://" + healthz.String() + "/healthz"); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	c, err := net.Dial("tcp", tcpF.Listen.String())
	if err != nil {
		t.Fatalf("dial the published TCP port: %v", err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "hello\n" {
		t.Errorf("TCP echo through the proxy = %q, %v; want hello", line, err)
	}
	c.Close()

	u, err := net.Dial("udp", udpF.Listen.String())
	if err != nil {
		t.Fatal(err)
	}
	_ = u.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := u.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if n, err := u.Read(buf); err != nil || string(buf[:n]) != "echo:ping" {
		t.Errorf("UDP echo through the proxy = %q, %v; want echo:ping", buf[:n], err)
	}
	u.Close()

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Nothing is left bound.
	ln, err := net.Listen("tcp", tcpF.Listen.String())
	if err != nil {
		t.Errorf("TCP %s still taken after Run: %v", tcpF.Listen, err)
	} else {
		ln.Close()
	}
	pc, err := net.ListenPacket("udp", udpF.Listen.String())
	if err != nil {
		t.Errorf("UDP %s still taken after Run: %v", udpF.Listen, err)
	} else {
		pc.Close()
	}
}

// TestListenTaken: a taken host port is an error naming it, and the
// other forwards are released.
func TestListenTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy := netip.MustParseAddrPort(taken.Addr().String())
	free := freeAddr(t)
	fs := []Forward{
		{Proto: v1.ProtocolTCP, Listen: free, Target: netip.MustParseAddrPort("127.0.0.1:9")},
		{Proto: v1.ProtocolTCP, Listen: busy, Target: netip.MustParseAddrPort("127.0.0.1:9")},
	}
	_, err = Listen(fs, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), busy.String()+"/TCP") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Listen with %s taken: error = %v, want one naming it as in use", busy, err)
	}
	ln, err := net.Listen("tcp", free.String())
	if err != nil {
		t.Fatalf("%s still bound after the failed Listen: %v", free, err)
	}
	ln.Close()
}
