package state_test

import (
	"net/netip"
	"testing"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/state"
)

func TestRootlessState(t *testing.T) {
	paths := config.Paths{State: t.TempDir()}
	if _, ok := state.ReadRootless(paths); ok {
		t.Fatal("rootless without a record")
	}
	if state.ClientKubeconfig(paths) != paths.Kubeconfig("admin") {
		t.Error("root cluster's client kubeconfig is not admin's")
	}
	want := state.RootlessState{UID: 1000, RootlesskitStateDir: "/x/rootlesskit"}
	want.HostAPIServer, _ = parseAddrPort("127.0.0.1:6443")
	if err := state.WriteRootless(paths, want); err != nil {
		t.Fatal(err)
	}
	got, ok := state.ReadRootless(paths)
	if !ok || got != want {
		t.Errorf("ReadRootless = %+v, %v; want %+v", got, ok, want)
	}
	if state.ClientKubeconfig(paths) != state.HostKubeconfig(paths) {
		t.Error("rootless cluster's client kubeconfig is not the host one")
	}
	if err := state.ClearRootless(paths); err != nil {
		t.Fatal(err)
	}
	if err := state.ClearRootless(paths); err != nil {
		t.Errorf("second ClearRootless: %v", err)
	}
}

func parseAddrPort(s string) (netip.AddrPort, error) { return netip.ParseAddrPort(s) }
