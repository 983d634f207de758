package node

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMountsUnder mounts tmpfs at a root, above it, beside it and below
// it: only what lies at or below a root is listed and unmounted.
func TestMountsUnder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount tmpfs")
	}
	base := t.TempDir()
	p := func(rel string) string { return filepath.Join(base, rel) }
	mount := func(dir string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, ""); err != nil {
			t.Fatalf("mount %s: %v", dir, err)
		}
		t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	}
	mount(p("state"))                            // the user's disk at the state dir
	mount(p("state/node/kubelet"))               // a root itself (the kubelet binds it)
	mount(p("state/node/kubelet/pods/a/volume")) // a component's
	mount(p("state/node/kubelet-other"))         // beside a root, same prefix
	mount(p("state/node/containerd/state/netns/x"))
	roots := []string{p("state/node/kubelet"), p("state/node/containerd/state")}

	got, err := MountsUnder(roots...)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{p("state/node/containerd/state/netns/x"), p("state/node/kubelet"), p("state/node/kubelet/pods/a/volume")}
	if !slices.Equal(got, want) {
		t.Fatalf("MountsUnder = %v, want %v", got, want)
	}
	if err := UnmountUnder(roots...); err != nil {
		t.Fatal(err)
	}
	if left, _ := MountsUnder(roots...); len(left) > 0 {
		t.Errorf("after UnmountUnder: %v", left)
	}
	for _, kept := range []string{"state", "state/node/kubelet-other"} {
		var st, parent unix.Stat_t
		if err := unix.Stat(p(kept), &st); err != nil {
			t.Fatal(err)
		}
		if err := unix.Stat(filepath.Dir(p(kept)), &parent); err != nil {
			t.Fatal(err)
		}
		if st.Dev == parent.Dev {
			t.Errorf("%s was unmounted; only mounts at or below the roots may go", kept)
		}
	}
}
