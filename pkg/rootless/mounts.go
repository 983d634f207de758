package rootless

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// PrivatePaths are the paths the kubelet, containerd, runc and the CNI
// plugins hard-code. CopyUp turns each existing one into a link to the
// read-only host directory, so PrepareMounts gives each its own tmpfs in the
// namespace: nothing written there reaches the host, and it all vanishes
// with the namespace.
var PrivatePaths = []string{
	"/var/lib/kubelet", "/var/lib/cni",
	"/run/netns", "/run/containerd", "/run/runc", "/run/crun",
	"/var/log/containers", "/var/log/pods",
}

// PrepareMounts mounts a fresh tmpfs on each of PrivatePaths, replacing a
// copy-up link (or creating the directory) first. It must run inside the
// rootlesskit namespaces, as their root, before any component starts; it
// refuses to run in the initial user namespace, where it would shadow the
// host's own directories.
func PrepareMounts(inUserNS bool) error {
	if !inUserNS {
		return errors.New("rootless mounts: not in a user namespace (internal error: --rootless-child outside rootlesskit)")
	}
	var errs []error
	for _, p := range PrivatePaths {
		errs = append(errs, privateTmpfs(p))
	}
	return errors.Join(errs...)
}

func privateTmpfs(path string) error {
	if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeSymlink != 0 {
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("replace copy-up link %s: %w", path, err)
		}
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := unix.Mount("tmpfs", path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755"); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", path, err)
	}
	return nil
}

// shortHash is 12 hex digits of the SHA-256 of s.
func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:12]
}
