package rootless

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/sys/user"
	"golang.org/x/sys/unix"
)

// InUserNamespace reports whether this process runs in a user namespace
// other than the initial one: its uid_map (parsed by moby/sys/user) is not
// the identity over the whole 32-bit range, as it is in the initial
// namespace. An unreadable uid_map counts as the initial namespace.
func InUserNamespace() bool {
	maps, err := user.ParseIDMapFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	return !isIdentityMap(maps)
}

// isIdentityMap reports whether maps is the initial user namespace's
// uid_map: one line mapping 0..2^32-2 onto itself.
func isIdentityMap(maps []user.IDMap) bool {
	return len(maps) == 1 && maps[0] == user.IDMap{ID: 0, ParentID: 0, Count: 4294967295}
}

// ProbeUserNamespace checks, as the calling (unprivileged) user, that a
// user namespace with a mount namespace can be created, by running
// `unshare -Urm` (util-linux, at unsharePath) with a shell that mounts an
// overlay in a temporary directory. It returns a nil error when the user
// namespace works, and overlay whether the overlay mount worked in it (it
// does on kernels from 5.11 on, and earlier on Ubuntu); err carries the
// command's output when even the namespace fails.
func ProbeUserNamespace(ctx context.Context, unsharePath string) (overlay bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "kubernix-userns-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	for _, d := range []string{"l", "u", "w", "m"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return false, err
		}
	}
	// Exit 0: namespace and overlay work; 3: the namespace works, overlay
	// does not; anything else: no user namespace.
	script := `mount -t overlay overlay -o lowerdir="$1/l",upperdir="$1/u",workdir="$1/w" "$1/m" 2>/dev/null || exit 3; umount "$1/m"`
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, unsharePath, "-Urm", "sh", "-c", script, "probe", dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	if runErr == nil {
		return true, nil
	}
	if ee, ok := runErr.(*exec.ExitError); ok && ee.ExitCode() == 3 {
		return false, nil
	}
	return false, fmt.Errorf("unshare -Urm: %w: %s", runErr, strings.TrimSpace(out.String()))
}

// CanMountOverlay reports whether this process may mount an overlay file
// system, trying it in a temporary directory: inside a user namespace that
// owns its mount namespace this works on kernels from 5.11 on. The error
// says why not.
func CanMountOverlay() error {
	dir, err := os.MkdirTemp("", "kubernix-overlay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, d := range []string{"l", "u", "w", "m"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	opts := fmt.Sprintf("lowerdir=%s/l,upperdir=%s/u,workdir=%s/w", dir, dir, dir)
	if err := unix.Mount("overlay", filepath.Join(dir, "m"), "overlay", 0, opts); err != nil {
		return fmt.Errorf("mount overlay: %w", err)
	}
	return unix.Unmount(filepath.Join(dir, "m"), unix.MNT_DETACH)
}

// HasFileCapsOrSetuid reports whether the executable at path is setuid root
// or carries file capabilities (security.capability), as newuidmap and
// newgidmap must to write another user's ID maps.
func HasFileCapsOrSetuid(path string) bool {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return false
	}
	if st.Mode&unix.S_ISUID != 0 && st.Uid == 0 {
		return true
	}
	sz, err := unix.Getxattr(path, "security.capability", nil)
	return err == nil && sz > 0
}

// CanOpenTun reports whether this process may open /dev/net/tun, which
// slirp4netns needs to give the namespace its network.
func CanOpenTun() error {
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}
