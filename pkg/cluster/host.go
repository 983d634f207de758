package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/host"
)

// KubeletSysctls are the global sysctls kubelets change when
// protectKernelDefaults is false (pkg/kubelet/cm of Kubernetes v1.37):
// kubernix records them before the first kubelet and restores them at down.
var KubeletSysctls = []string{
	"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
	"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes",
}

func sysctlFile(paths config.Paths) string {
	return filepath.Join(paths.State, "host", "sysctls.json")
}

// prepareHost records the sysctls the kubelets will change (once: a record
// left by a killed run is the original), and mounts the cgroup v1
// controllers the kernel has but no hierarchy mounts, so container stats
// work. A rootless cluster does neither.
func (c *Cluster) prepareHost() error {
	if c.Plan.Rootless {
		// In a user namespace the kubelets cannot change kernel
		// tunables (KubeletInUserNamespace lets them go on), and no
		// cgroup hierarchy can be mounted.
		return nil
	}
	file := sysctlFile(c.Plan.Paths)
	if !host.Exists(file) {
		orig := map[string]string{}
		for _, k := range KubeletSysctls {
			if v, err := host.Sysctl(k); err == nil {
				orig[k] = v
			}
		}
		b, err := json.MarshalIndent(orig, "", "  ")
		if err != nil {
			return err
		}
		if err := writeFile(file, b); err != nil {
			return err
		}
	}
	cg := c.Plan.Facts.Cgroups
	if cg.Mode != host.CgroupV2 && len(cg.Unmounted) > 0 && os.Geteuid() == 0 {
		mounted, err := host.MountControllers(cg.Unmounted)
		if len(mounted) > 0 {
			c.Log.Info("mounted cgroup v1 controllers the host left unmounted, so container stats work", "controllers", mounted)
		}
		if err != nil {
			c.Log.Debug("some cgroup controllers could not be mounted", "err", err)
		}
	}
	return nil
}

// restoreSysctls writes back the recorded sysctls and drops the record.
func restoreSysctls(paths config.Paths) error {
	file := sysctlFile(paths)
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	orig := map[string]string{}
	if err := json.Unmarshal(b, &orig); err != nil {
		return fmt.Errorf("parse %s: %w", file, err)
	}
	var errs []error
	for k, v := range orig {
		if cur, err := host.Sysctl(k); err == nil && cur != v {
			errs = append(errs, host.SetSysctl(k, v))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.Remove(file)
}
