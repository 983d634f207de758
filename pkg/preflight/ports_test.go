package preflight

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
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

// TestChoosePortsAsUser: rootless, a registry port taken on the host's
// 127.0.0.1 (where rootlesskit publishes it) is refused, naming
// --registry-port and wrapping config.ErrInvalid, and the port stays as
// given; without the registry nothing is checked.
func TestChoosePortsAsUser(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	cfg := config.Default()
	cfg.StateDir = t.TempDir()
	cfg.CIDR = "10.61.0.0/16"
	cfg.RegistryPort = port
	cfg.Resolve()
	got, notices, errs := choosePorts(cfg, plantest.Facts(), "/IMAGES", AsUser)
	err = errors.Join(errs...)
	if len(errs) != 1 || !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "port "+strconv.Itoa(port)+" is in use") ||
		!strings.Contains(err.Error(), "registry (rootlesskit's port forward) cannot listen on 127.0.0.1") || !strings.Contains(err.Error(), "--registry-port") {
		t.Errorf("choosePorts(registry on taken %d) = %v, want one ErrInvalid naming the port, the forward and --registry-port", port, err)
	}
	// (A notice may move the default apiserver port, where a cluster runs.)
	if got.RegistryPort != port || slices.ContainsFunc(notices, func(n string) bool { return strings.Contains(n, "registry") }) {
		t.Errorf("choosePorts moved the registry port the user chose: %d, notices %q", got.RegistryPort, notices)
	}
	cfg.Addons = []string{"coredns"}
	if got, _, errs := choosePorts(cfg, plantest.Facts(), "/IMAGES", AsUser); len(errs) != 0 || got.RegistryPort != port {
		t.Errorf("without the registry: port %d, errors %v; want it unchecked", got.RegistryPort, errs)
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
			cfg.CIDR = "10.61.0.0/16"
			cfg.RegistryPort = tt.registry
			var got []string
			for _, err := range clashProblems(plantest.HostPorts(t, plantest.Of(t, cfg))) {
				got = append(got, err.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("clashProblems = %q, want %q", got, tt.want)
			}
		})
	}
}
