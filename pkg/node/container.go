package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/process"
	"github.com/kubernix/kubernix/pkg/sysctl"
)

// Container is the executor whose node is a sandbox: its own network, mount
// and UTS namespaces, held by a long-lived holder process (`kubernix
// sandbox-init`, started through util-linux unshare). Commands enter it
// with nsenter, which execs them, so the PIDs kubernix tracks are the
// components' own.
//
// Why namespaces held by a process rather than an OCI bundle run by
// runc/crun: the node's processes must see the host's binaries, the state
// dir and /sys/fs/cgroup exactly as on the host (the kubelet manages cgroups
// and mounts volumes, containerd runs runc), so a bundle would be a
// read-only host root with many exceptions for little gain; and runc itself
// then runs nested in it. A holder process is one process per node, costs
// ~10 MB, is entered with a standard tool, and its namespaces vanish with it,
// mounts included, so teardown after a crash is killing one PID.
//
// Inside the sandbox: the hostname is the node name; /run is a private
// tmpfs (containerd's shim sockets and fifos, /run/netns, runc state are the
// node's own); the kubelet root dir is an rshared bind mount (volume mount
// propagation). The host root stays visible (propagation slave), so
// binaries, the state dir and the cgroup hierarchies are the host's.
type Container struct {
	// RunDir is the holder's run dir (config.Paths.Run of SandboxName in
	// the node's scope), where its PID is recorded and ReadyFile lies.
	RunDir string
	// Unshare and Nsenter are the util-linux binaries.
	Unshare, Nsenter string
	// Self is the kubernix executable that runs sandbox-init.
	Self string
	// Hostname of the sandbox: the node name.
	Hostname string
	// SharedDirs are bind-mounted onto themselves and made rshared inside.
	SharedDirs []string
	// PrivateDirs get an empty tmpfs of their own inside the sandbox: paths
	// a component uses whatever its configuration, such as the kubelet's
	// device plugin socket directory under /var/lib/kubelet, which the
	// nodes would otherwise share (and race to bind).
	PrivateDirs []string
	// Pause, if set, is a program the holder execs once the sandbox is set
	// up, to hold it with less memory than kubernix: one that blocks until
	// SIGTERM and then exits 0, such as our pause (images/pause).
	Pause string
	// Binds are host paths mounted into the sandbox (the node's
	// [[nodes]] mounts). Their mount points missing on the host are made
	// before each start (MakeMountPoints) and recorded in
	// MountPointsRecord, which cleanup reads (RemoveMountPoints).
	Binds []Bind
	// MountPointsRecord is the file that records the mount points made
	// on the host for Binds.
	MountPointsRecord string
	// IPv6 keeps IPv6 on in the sandbox and turns IPv6 forwarding on
	// there: the node of a dual-stack or IPv6 cluster.
	IPv6 bool

	mu  sync.Mutex
	pid int
}

// SandboxName names a node's sandbox component.
const SandboxName = "sandbox"

// Name implements Executor.
func (c *Container) Name() string { return config.ExecutorContainer }

// HostNetwork implements Executor: the node has a network namespace of
// its own.
func (c *Container) HostNetwork() bool { return false }

// Sandbox implements Executor: the holder process, started first
// (Infrastructure), ready once it has set the namespaces up (see
// SandboxHooks).
func (c *Container) Sandbox() (components.Description, bool) {
	argv := c.HolderArgv()
	return components.Description{
		Name: SandboxName, Scope: c.Hostname, Kind: components.KindProcess, Phase: boot.Infrastructure,
		Binary:  "unshare",
		Command: process.Command{Path: argv[0], Args: argv[1:]},
		Probe:   components.Probe{Then: "the holder wrote " + c.ReadyFile() + " (and exec'd pause); then the node joins the cluster network"},
	}, true
}

// SandboxHooks implements Executor: before each start the last ready
// file goes; the sandbox is ready once its holder wrote it and (with
// Pause) exec'd pause, and its PID is then what Wrapper enters.
func (c *Container) SandboxHooks(attach func(pid int) error, detach func() error) components.Hooks {
	return components.Hooks{
		Prepare: func(context.Context) error {
			err := os.Remove(c.ReadyFile())
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			return MakeMountPoints(c.Binds, c.PrivateDirs, c.MountPointsRecord)
		},
		Ready: func(context.Context) error {
			pid, ok := process.Running(c.RunDir)
			if !ok {
				return errors.New("sandbox holder not running")
			}
			if err := c.HolderReady(pid); err != nil {
				return err
			}
			c.SetHolder(pid)
			return nil
		},
		AfterReady: func(context.Context) error { return attach(c.Holder()) },
		BeforeStop: func(context.Context) error { return detach() },
	}
}

// ReadyFile is written by the holder once the sandbox is set up.
func (c *Container) ReadyFile() string { return filepath.Join(c.RunDir, "ready") }

// HolderArgv is the command that creates the sandbox and holds it.
func (c *Container) HolderArgv() []string {
	argv := []string{c.Unshare, "--net", "--mount", "--uts", "--propagation", "slave",
		c.Self, "sandbox-init", "--hostname", c.Hostname, "--ready-file", c.ReadyFile()}
	for _, d := range c.SharedDirs {
		argv = append(argv, "--shared", d)
	}
	for _, d := range c.PrivateDirs {
		argv = append(argv, "--private", d)
	}
	for _, b := range c.Binds {
		argv = append(argv, "--bind", b.String())
	}
	if c.Pause != "" {
		argv = append(argv, "--exec", c.Pause)
	}
	if c.IPv6 {
		argv = append(argv, "--ipv6")
	}
	return argv
}

// HolderReady reports (nil) whether the holder with PID pid has set the
// sandbox up: it wrote ReadyFile and, with Pause set, has exec'd it. The
// exec follows the ready file, and while a process execs its /proc entries
// (its namespaces among them) can vanish for a moment.
func (c *Container) HolderReady(pid int) error {
	if _, err := os.Stat(c.ReadyFile()); err != nil {
		return fmt.Errorf("sandbox not set up yet")
	}
	if c.Pause == "" {
		return nil
	}
	exe, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return fmt.Errorf("sandbox holder %d: %w", pid, err)
	}
	pause, err := os.Stat(c.Pause)
	if err != nil {
		return err
	}
	if !os.SameFile(exe, pause) {
		return fmt.Errorf("sandbox holder %d has not exec'd %s yet", pid, c.Pause)
	}
	return nil
}

// SetHolder records the PID of the running holder process.
func (c *Container) SetHolder(pid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pid = pid
}

// Holder returns the holder's PID, 0 before SetHolder.
func (c *Container) Holder() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid
}

// Wrapper implements Executor: nsenter into the holder's namespaces. It
// returns nil before the holder runs.
func (c *Container) Wrapper() []string {
	pid := c.Holder()
	if pid == 0 {
		return nil
	}
	return c.wrapper(strconv.Itoa(pid))
}

// PlannedWrapper implements Executor.
func (c *Container) PlannedWrapper() []string { return c.wrapper("<sandbox-pid>") }

func (c *Container) wrapper(pid string) []string {
	return []string{c.Nsenter, "--target", pid, "--net", "--mount", "--uts", "--"}
}

// SandboxInit is the body of `kubernix sandbox-init`, run by unshare inside
// fresh network, mount and UTS namespaces: it sets the hostname, mounts a
// private tmpfs on /run and on each private dir, makes each shared dir an
// rshared bind mount, mounts each bind (bindMounts), writes readyFile, and then execs pause or, without
// one, blocks until ctx ends (SIGTERM). The network inside (lo, eth0) is set
// up from the host by the network package. A shared dir under a private
// one is an error: the tmpfs would hide it.
func SandboxInit(ctx context.Context, hostname string, shared, private []string, binds []Bind, readyFile, pause string, ipv6 bool) error {
	for _, p := range private {
		for _, d := range shared {
			if rel, err := filepath.Rel(p, d); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				return fmt.Errorf("%s lies under %s, which each node covers with a tmpfs of its own: choose another state dir", d, p)
			}
		}
	}
	if err := unix.Sethostname([]byte(hostname)); err != nil {
		return fmt.Errorf("sethostname %s: %w", hostname, err)
	}
	if err := networkSysctls(ipv6); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", "/run", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount tmpfs on /run: %w", err)
	}
	for _, d := range []string{"/run/netns", "/run/containerd", "/run/lock"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, d := range private {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
			return fmt.Errorf("mount tmpfs on %s: %w", d, err)
		}
	}
	for _, d := range shared {
		if err := os.MkdirAll(d, config.StateDirMode); err != nil {
			return err
		}
		if err := unix.Mount(d, d, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", d, err)
		}
		if err := unix.Mount("", d, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("make %s rshared: %w", d, err)
		}
	}
	if err := bindMounts(binds); err != nil {
		return err
	}
	if err := os.WriteFile(readyFile, []byte("ready\n"), config.StateFileMode); err != nil {
		return err
	}
	if pause != "" {
		// The namespaces, PID and start time stay; the memory goes.
		return fmt.Errorf("exec %s: %w", pause, unix.Exec(pause, []string{pause}, os.Environ()))
	}
	<-ctx.Done()
	return nil
}

// networkSysctls sets the sandbox's new network namespace up:
// forwarding on (it is per namespace, and off in a new one). Without
// ipv6, IPv6 goes off, as the cluster is IPv4 (pods' own namespaces are
// not affected): kube-proxy then runs single-stack, one table to sync
// instead of two, as upstream decides by
// /proc/sys/net/ipv6/conf/all/disable_ipv6 (k8s.io/kubernetes
// cmd/kube-proxy/app: platformCheckSupported). With ipv6, IPv6
// forwarding goes on instead (the node routes its pods' IPv6 traffic;
// the host never forwards IPv6, see pkg/network).
func networkSysctls(ipv6 bool) error {
	set := map[string]string{"/proc/sys/net/ipv4/ip_forward": "1"}
	if sysctl.HasIPv6() && !ipv6 {
		set["/proc/sys/net/ipv6/conf/all/disable_ipv6"] = "1"
		set["/proc/sys/net/ipv6/conf/default/disable_ipv6"] = "1"
	} else if ipv6 {
		set["/proc/sys/net/ipv6/conf/all/forwarding"] = "1"
	}
	for path, v := range set {
		if err := os.WriteFile(path, []byte(v+"\n"), 0o644); err != nil {
			return fmt.Errorf("sandbox network: %w", err)
		}
	}
	return nil
}
