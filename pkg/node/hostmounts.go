package node

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// MountsUnder lists the mount points of this mount namespace at or below
// each of roots (nothing above or beside them), deepest first. roots are
// the directories kubernix makes for components that mount (the kubelet's
// root dir, which the kubelet also binds onto itself, containerd's root
// and state): what is mounted there is theirs, whatever is mounted above
// them (a disk at the state dir, say) is the user's.
func MountsUnder(roots ...string) ([]string, error) {
	var out []string
	for _, root := range roots {
		root = filepath.Clean(root)
		mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(root))
		if err != nil {
			return nil, fmt.Errorf("list mounts below %s: %w", root, err)
		}
		for _, m := range mounts {
			out = append(out, m.Mountpoint)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

// UnmountUnder detaches (MNT_DETACH) every mount MountsUnder(roots...)
// lists, deepest first, in up to three passes for stacked mounts. A mount
// that is already gone is no error; the others are joined.
func UnmountUnder(roots ...string) error {
	var errs []error
	for range 3 {
		mps, err := MountsUnder(roots...)
		if err != nil || len(mps) == 0 {
			return err
		}
		errs = errs[:0]
		for _, mp := range mps {
			if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
			}
		}
	}
	return errors.Join(errs...)
}
