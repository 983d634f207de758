package doctor

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// HasFilesystem reports whether the kernel supports the file system type
// (as listed in /proc/filesystems, e.g. "overlay").
func HasFilesystem(fstype string) (bool, error) {
	b, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[len(f)-1] == fstype {
			return true, nil
		}
	}
	return false, nil
}

// CanUnshareNet reports whether this process may create a network namespace.
// It unshares on a locked OS thread that is then discarded.
func CanUnshareNet() error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is left locked: it exits with this goroutine, taking
		// the new namespace with it, and never runs other goroutines.
		errc <- unix.Unshare(unix.CLONE_NEWNET)
	}()
	return <-errc
}

// HasCapability reports whether capability c (e.g. unix.CAP_SYS_RESOURCE) is
// in this process's effective set.
func HasCapability(c int) (bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false, fmt.Errorf("capget: %w", err)
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0, nil
}
