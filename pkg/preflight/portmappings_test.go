package preflight

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/config"
)

// TestMappingProblems: a mapping whose host address is held (a TCP
// listener, a bound UDP socket, for a wildcard mapping any address) is
// named, unless the holder is the cluster's own process.
func TestMappingProblems(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	tcpPort, udpPort := ln.Addr().(*net.TCPAddr).Port, pc.LocalAddr().(*net.UDPAddr).Port
	cfg := config.Default()
	cfg.NodeSpecs = []config.NodeSpec{{}, {Ports: []config.PortMapping{
		{NodePort: 30080, HostPort: tcpPort},                                         // taken
		{NodePort: 30080, HostPort: tcpPort, Protocol: "UDP"},                        // free for UDP
		{NodePort: 53, HostPort: udpPort, Protocol: "UDP", ListenAddress: "0.0.0.0"}, // taken on 127.0.0.1
		{NodePort: 53, HostPort: udpPort, ListenAddress: "127.0.0.2"},                // free for TCP
	}}}
	errs := mappingProblems(cfg, nil)
	if len(errs) != 2 {
		t.Fatalf("mappingProblems = %v, want 2 problems", errs)
	}
	for i, want := range []string{
		"nodes[1].ports[0]: " + ln.Addr().String() + "/TCP is in use on this host: a listener on " + ln.Addr().String() + " (pid",
		"nodes[1].ports[2]: 0.0.0.0:" + strconv.Itoa(udpPort) + "/UDP is in use",
	} {
		if !strings.Contains(errs[i].Error(), want) || !strings.Contains(errs[i].Error(), "choose another host_port") {
			t.Errorf("problem %d = %v, want it to contain %q and the advice", i, errs[i], want)
		}
	}
	if errs := mappingProblems(cfg, map[int]bool{os.Getpid(): true}); len(errs) != 0 {
		t.Errorf("held by the cluster's own process: %v, want none", errs)
	}
}
