package cluster

import (
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/config"
)

// TestNextFreePort: a taken default moves to the next free port; a taken
// port the user chose is refused with check's error.
func TestNextFreePort(t *testing.T) {
	errTaken := errors.New("taken")
	tests := []struct {
		name    string
		port    int
		taken   []int
		want    int
		wantErr bool
	}{
		{"default free", 5001, nil, 5001, false},
		{"default taken", 5001, []int{5001, 5002}, 5003, false},
		{"chosen free", 6000, []int{5001}, 6000, false},
		{"chosen taken", 6000, []int{6000}, 6000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nextFreePort(tt.port, config.DefaultRegistryPort, func(p int) error {
				for _, q := range tt.taken {
					if p == q {
						return errTaken
					}
				}
				return nil
			})
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("nextFreePort(%d) = %d, %v; want %d, error %v", tt.port, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestChooseRegistryPortOn: a port taken on the address is refused, naming
// --registry-port and wrapping config.ErrInvalid; 0 (no registry) is kept.
func TestChooseRegistryPortOn(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	lo := netip.MustParseAddr("127.0.0.1")
	_, err = ChooseRegistryPortOn(lo, port)
	if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "port "+strconv.Itoa(port)+" is in use") ||
		!strings.Contains(err.Error(), "choose another --registry-port") {
		t.Errorf("ChooseRegistryPortOn(taken %d) = %v, want an ErrInvalid naming the port and --registry-port", port, err)
	}
	if got, err := ChooseRegistryPortOn(lo, 0); got != 0 || err != nil {
		t.Errorf("ChooseRegistryPortOn(0) = %d, %v; want 0, nil", got, err)
	}
}

// TestClashProblems: a port moved by a flag onto another component's port
// on the same address is refused, naming the flag.
func TestClashProblems(t *testing.T) {
	tests := []struct {
		name     string
		registry int
		want     []string
	}{
		{"default", 5001, nil},
		{"on etcd's client port", 2379, []string{"--registry-port 2379: etcd (client) listens there too; choose another"}},
		{"on the scheduler's port", 10259, []string{"--registry-port 10259: kube-scheduler listens there too; choose another"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.StateDir = t.TempDir()
			cfg.CIDR = "10.61.0.0/16"
			cfg.RegistryPort = tt.registry
			cfg.Resolve()
			var got []string
			for _, err := range clashProblems(HostPorts(cfg)) {
				got = append(got, err.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("clashProblems = %q, want %q", got, tt.want)
			}
		})
	}
}
