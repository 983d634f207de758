package rootless

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// runtimeValueFlags are the global flags of runc and crun that take a
// value, so the subcommand is the first argument that is not one of these
// or their value.
var runtimeValueFlags = []string{"--root", "--log", "--log-format", "--criu", "--rootless", "--cgroup-manager"}

// BundleOf parses an OCI runtime's command line (without the binary) and
// returns the bundle dir of a `create` or `run`: the --bundle (-b) value,
// else the working directory cwd, as runc and crun default to. ok is false
// for every other subcommand.
func BundleOf(args []string, cwd string) (bundle string, ok bool) {
	i := 0
	for i < len(args) {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		if slices.Contains(runtimeValueFlags, a) {
			i++
		}
		i++
	}
	if i >= len(args) || (args[i] != "create" && args[i] != "run") {
		return "", false
	}
	rest := args[i+1:]
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		switch {
		case a == "--":
			return cwd, true
		case (a == "--bundle" || a == "-b") && j+1 < len(rest):
			return rest[j+1], true
		case strings.HasPrefix(a, "--bundle="):
			return strings.TrimPrefix(a, "--bundle="), true
		case strings.HasPrefix(a, "-b="):
			return strings.TrimPrefix(a, "-b="), true
		}
	}
	return cwd, true
}

// Rewrite is what RewriteSpec changes in a container's config.json.
type Rewrite struct {
	// StripOOMScoreAdj removes process.oomScoreAdj: in a user namespace
	// the score can only be raised, so the runtime keeps the one it
	// inherits (containerd's, as restrict_oom_score_adj asks anyway).
	StripOOMScoreAdj bool
	// DropOwnNamespaces removes the linux.namespaces entries whose path is
	// the namespace the runtime already runs in: joining it changes
	// nothing, but setns(2) into a namespace that rootlesskit shares with
	// the host (pid, uts, ipc: owned by the host's user namespace) is
	// refused, and containers of hostPID or hostNetwork pods, which join
	// their sandbox's, fail with "failed to setns into pid namespace:
	// Operation not permitted".
	DropOwnNamespaces bool
	// IsOwnNamespace reports whether the namespace file at path is the
	// runtime's own namespace of that type (an OCI type: "pid",
	// "network"...); nil means SameNamespace.
	IsOwnNamespace func(typ, path string) bool
	// BindProcWithoutPIDNS turns the /proc mount of a container without a
	// pid namespace of its own (hostPID: it shares rootlesskit's, the
	// host's) into a recursive bind of /proc: a new proc can only be
	// mounted for a pid namespace the user namespace owns, and runc fails
	// with "mount proc:/proc ...: operation not permitted".
	BindProcWithoutPIDNS bool
}

// DefaultRewrite is what the rootless wrapper changes.
var DefaultRewrite = Rewrite{StripOOMScoreAdj: true, DropOwnNamespaces: true, BindProcWithoutPIDNS: true}

// nsFiles maps OCI namespace types to their files in /proc/<pid>/ns.
var nsFiles = map[string]string{
	"pid": "pid", "network": "net", "mount": "mnt", "ipc": "ipc", "uts": "uts",
	"user": "user", "cgroup": "cgroup", "time": "time",
}

// SameNamespace reports whether the namespace file at path is this
// process's own namespace of OCI type typ (same device and inode as
// /proc/self/ns/<file>).
func SameNamespace(typ, path string) bool {
	file, ok := nsFiles[typ]
	if !ok || path == "" {
		return false
	}
	var own, other unix.Stat_t
	if unix.Stat("/proc/self/ns/"+file, &own) != nil || unix.Stat(path, &other) != nil {
		return false
	}
	return own.Dev == other.Dev && own.Ino == other.Ino
}

// procBind is the /proc mount of a container sharing the host's pid
// namespace in rootless mode.
var procBind = map[string]any{
	"destination": "/proc", "type": "bind", "source": "/proc",
	"options": []string{"rbind", "nosuid", "noexec", "nodev"},
}

// RewriteSpec returns the OCI runtime spec in (a config.json) changed as
// r says. Every other field is kept as it was, unknown ones included
// (the key order of the changed objects is not). changes lists what was
// changed, for the runtime's log; no change returns in itself.
func RewriteSpec(in []byte, r Rewrite) (out []byte, changes []string, err error) {
	var spec map[string]json.RawMessage
	if err := json.Unmarshal(in, &spec); err != nil {
		return nil, nil, fmt.Errorf("parse OCI spec: %w", err)
	}
	// Namespaces are dropped before /proc is looked at: dropping the
	// runtime's own pid namespace makes the container share the host's.
	var steps []func(map[string]json.RawMessage) ([]string, error)
	if r.StripOOMScoreAdj {
		steps = append(steps, stripOOMScoreAdj)
	}
	if r.DropOwnNamespaces {
		own := r.IsOwnNamespace
		if own == nil {
			own = SameNamespace
		}
		steps = append(steps, func(spec map[string]json.RawMessage) ([]string, error) {
			return dropOwnNamespaces(spec, own)
		})
	}
	if r.BindProcWithoutPIDNS {
		steps = append(steps, bindProcWithoutPIDNS)
	}
	for _, step := range steps {
		c, err := step(spec)
		if err != nil {
			return nil, nil, err
		}
		changes = append(changes, c...)
	}
	if len(changes) == 0 {
		return in, nil, nil
	}
	out, err = json.Marshal(spec)
	return out, changes, err
}

// stripOOMScoreAdj removes process.oomScoreAdj from spec.
func stripOOMScoreAdj(spec map[string]json.RawMessage) (changes []string, err error) {
	proc, ok, err := specField[map[string]json.RawMessage](spec, "process", "process")
	if !ok || err != nil {
		return nil, err
	}
	v, ok := proc["oomScoreAdj"]
	if !ok {
		return nil, nil
	}
	delete(proc, "oomScoreAdj")
	if spec["process"], err = json.Marshal(proc); err != nil {
		return nil, err
	}
	return []string{"removed process.oomScoreAdj " + string(v)}, nil
}

// dropOwnNamespaces removes from spec's linux.namespaces those with a path
// that own reports as the runtime's own.
func dropOwnNamespaces(spec map[string]json.RawMessage, own func(typ, path string) bool) (changes []string, err error) {
	linux, ok, err := specField[map[string]json.RawMessage](spec, "linux", "linux")
	if !ok || err != nil {
		return nil, err
	}
	nss, ok, err := specField[[]map[string]json.RawMessage](linux, "namespaces", "linux.namespaces")
	if !ok || err != nil {
		return nil, err
	}
	kept := make([]map[string]json.RawMessage, 0, len(nss))
	for _, ns := range nss {
		var typ, path string
		_ = json.Unmarshal(ns["type"], &typ)
		_ = json.Unmarshal(ns["path"], &path)
		if path != "" && own(typ, path) {
			changes = append(changes, fmt.Sprintf("removed %s namespace %s: the runtime's own", typ, path))
			continue
		}
		kept = append(kept, ns)
	}
	if len(kept) == len(nss) {
		return nil, nil
	}
	if linux["namespaces"], err = json.Marshal(kept); err != nil {
		return nil, err
	}
	if spec["linux"], err = json.Marshal(linux); err != nil {
		return nil, err
	}
	return changes, nil
}

// bindProcWithoutPIDNS replaces spec's proc mount on /proc by procBind when
// the container shares the runtime's pid namespace.
func bindProcWithoutPIDNS(spec map[string]json.RawMessage) (changes []string, err error) {
	hostPID, err := sharesHostPID(spec["linux"])
	if err != nil {
		return nil, err
	}
	if !hostPID {
		return nil, nil
	}
	mounts, ok, err := specField[[]map[string]json.RawMessage](spec, "mounts", "mounts")
	if !ok || err != nil {
		return nil, err
	}
	replaced := false
	for i, m := range mounts {
		var typ, dest string
		_ = json.Unmarshal(m["type"], &typ)
		_ = json.Unmarshal(m["destination"], &dest)
		if typ != "proc" || dest != "/proc" {
			continue
		}
		b, err := json.Marshal(procBind)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &mounts[i]); err != nil {
			return nil, err
		}
		replaced = true
	}
	if !replaced {
		return nil, nil
	}
	if spec["mounts"], err = json.Marshal(mounts); err != nil {
		return nil, err
	}
	return []string{"no pid namespace: /proc bind-mounted instead of a new proc"}, nil
}

// specField decodes obj[key], the spec's field named path (for errors),
// into a T; ok is false when the field is absent or null.
func specField[T any](obj map[string]json.RawMessage, key, path string) (v T, ok bool, err error) {
	raw, ok := obj[key]
	if !ok || isNull(raw) {
		return v, false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, false, fmt.Errorf("parse OCI spec %s: %w", path, err)
	}
	return v, true, nil
}

// sharesHostPID reports whether the spec's linux.namespaces lacks a pid
// namespace: the container then runs in the runtime's own.
func sharesHostPID(raw json.RawMessage) (bool, error) {
	if raw == nil || isNull(raw) {
		return true, nil
	}
	var linux struct {
		Namespaces []struct {
			Type string `json:"type"`
		} `json:"namespaces"`
	}
	if err := json.Unmarshal(raw, &linux); err != nil {
		return false, fmt.Errorf("parse OCI spec linux: %w", err)
	}
	for _, ns := range linux.Namespaces {
		if ns.Type == "pid" {
			return false, nil
		}
	}
	return true, nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// RewriteBundle applies RewriteSpec to <bundle>/config.json in place
// (atomically, keeping its mode) and returns the changes.
func RewriteBundle(bundle string, r Rewrite) ([]string, error) {
	path := filepath.Join(bundle, "config.json")
	in, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out, changes, err := RewriteSpec(in, r)
	if err != nil || len(changes) == 0 {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	tmp := path + ".kubernix-tmp"
	if err := os.WriteFile(tmp, out, st.Mode().Perm()); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return changes, nil
}
