package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// RuntimeSpecVersion is the OCI runtime-spec version containerd writes into
// container bundles (the runtime-spec module containerd v2 builds with).
var RuntimeSpecVersion = specs.Version

// CheckOCIRuntime runs a throw-away container with the OCI runtime at
// runtimePath (runc, crun) the way containerd would: a bundle whose
// ociVersion is RuntimeSpecVersion, with pid, mount, ipc and uts namespaces
// and a cgroup. staticBinary is copied into the rootfs and run with args; it
// must exit 0 (busybox-static with "true" serves). It returns nil when the
// runtime works, else an error carrying the runtime's output. It leaves
// nothing behind: the bundle and the runtime's state live in a temp dir.
func CheckOCIRuntime(ctx context.Context, runtimePath, staticBinary string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "kubernix-ocicheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rootfs := filepath.Join(dir, "bundle", "rootfs")
	if err := os.MkdirAll(filepath.Join(rootfs, "proc"), 0o755); err != nil {
		return err
	}
	bin, err := os.ReadFile(staticBinary)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(rootfs, "probe"), bin, 0o755); err != nil {
		return err
	}
	id := fmt.Sprintf("kubernix-ocicheck-%d", os.Getpid())
	spec := specs.Spec{
		Version:  RuntimeSpecVersion,
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: "ocicheck",
		Process: &specs.Process{
			Args: append([]string{"/probe"}, args...),
			Cwd:  "/",
			Env:  []string{"PATH=/"},
		},
		Mounts: []specs.Mount{{Destination: "/proc", Type: "proc", Source: "proc"}},
		Linux: &specs.Linux{
			CgroupsPath: "/" + id,
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.MountNamespace},
				{Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
			},
		},
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bundle", "config.json"), b, 0o644); err != nil {
		return err
	}
	state := filepath.Join(dir, "state")
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, runtimePath, "--root", state, "run", "--bundle", filepath.Join(dir, "bundle"), id)
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	// Best effort: a failed run may leave the container's state and cgroup.
	_ = exec.Command(runtimePath, "--root", state, "delete", "--force", id).Run()
	if runErr != nil {
		return fmt.Errorf("%s run (runtime-spec %s): %w: %s", filepath.Base(runtimePath), RuntimeSpecVersion, runErr, strings.TrimSpace(out.String()))
	}
	return nil
}
