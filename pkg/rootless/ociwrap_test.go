package rootless

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestBundleOf(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		bundle string
		ok     bool
	}{
		{"shim create", []string{"--root", "/run/containerd/runc/k8s.io", "--log", "/b/log.json", "--log-format", "json",
			"create", "--bundle", "/b", "--pid-file", "/b/init.pid", "id1"}, "/b", true},
		{"short flag", []string{"create", "-b", "/b", "id1"}, "/b", true},
		{"equals form", []string{"--root=/r", "run", "--bundle=/b", "id1"}, "/b", true},
		{"boolean global flag", []string{"--debug", "--systemd-cgroup", "create", "--bundle", "/b", "id1"}, "/b", true},
		{"no bundle flag: cwd", []string{"--root", "/r", "create", "id1"}, "/cwd", true},
		{"start", []string{"--root", "/r", "start", "id1"}, "", false},
		{"delete named create", []string{"delete", "create"}, "", false},
		{"state", []string{"--root", "/r", "--log", "/l", "state", "id1"}, "", false},
		{"features", []string{"features"}, "", false},
		{"empty", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bundle, ok := BundleOf(tt.args, "/cwd")
			if bundle != tt.bundle || ok != tt.ok {
				t.Errorf("BundleOf(%q) = %q, %v; want %q, %v", tt.args, bundle, ok, tt.bundle, tt.ok)
			}
		})
	}
}

// spec builds a config.json as containerd writes one: process, mounts and
// linux.namespaces, with fields RewriteSpec must keep.
func spec(t *testing.T, oom *int, namespaces []map[string]string) []byte {
	t.Helper()
	proc := map[string]any{"args": []string{"/pause"}, "cwd": "/", "user": map[string]int{"uid": 0, "gid": 0}}
	if oom != nil {
		proc["oomScoreAdj"] = *oom
	}
	s := map[string]any{
		"ociVersion": "1.3.0",
		"process":    proc,
		"root":       map[string]any{"path": "rootfs", "readonly": true},
		"mounts": []map[string]any{
			{"destination": "/proc", "type": "proc", "source": "proc", "options": []string{"nosuid", "noexec", "nodev"}},
			{"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		},
		"annotations": map[string]string{"io.kubernetes.cri.container-type": "sandbox"},
		"linux": map[string]any{
			"namespaces":         namespaces,
			"cgroupsPath":        "/kubernix-1000/node-0/kubepods/besteffort/pod1/abc",
			"resources":          map[string]any{"devices": []map[string]any{{"allow": false, "access": "rwm"}}},
			"unknownFutureField": map[string]any{"kept": true},
		},
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ns(pairs ...string) []map[string]string {
	var out []map[string]string
	for _, p := range pairs {
		typ, path, _ := strings.Cut(p, "=")
		m := map[string]string{"type": typ}
		if path != "" {
			m["path"] = path
		}
		out = append(out, m)
	}
	return out
}

func TestRewriteSpec(t *testing.T) {
	own := func(typ, path string) bool {
		return path == "/proc/1/ns/"+map[string]string{"pid": "pid", "uts": "uts", "ipc": "ipc", "network": "net"}[typ]
	}
	r := DefaultRewrite
	r.IsOwnNamespace = own
	minus998 := -998
	tests := []struct {
		name string
		in   []byte
		// want: the namespaces left, whether oomScoreAdj is left, the type
		// of the /proc mount, and the number of changes.
		wantNS      []map[string]string
		wantOOM     bool
		wantProc    string
		wantChanges int
	}{
		{"pod sandbox: only oomScoreAdj goes",
			spec(t, &minus998, ns("pid", "ipc", "uts", "mount", "network=/var/run/netns/cni-1")),
			ns("pid", "ipc", "uts", "mount", "network=/var/run/netns/cni-1"), false, "proc", 1},
		{"container joining its sandbox: unchanged",
			spec(t, nil, ns("pid", "ipc=/proc/42/ns/ipc", "uts=/proc/42/ns/uts", "mount", "network=/proc/42/ns/net")),
			ns("pid", "ipc=/proc/42/ns/ipc", "uts=/proc/42/ns/uts", "mount", "network=/proc/42/ns/net"), false, "proc", 0},
		{"hostNetwork sandbox: unchanged",
			spec(t, nil, ns("pid", "ipc", "mount")),
			ns("pid", "ipc", "mount"), false, "proc", 0},
		{"hostPID sandbox: /proc bound",
			spec(t, nil, ns("ipc", "uts", "mount", "network=/var/run/netns/cni-2")),
			ns("ipc", "uts", "mount", "network=/var/run/netns/cni-2"), false, "bind", 1},
		{"hostPID container: joins the host's pid and uts namespaces: dropped, /proc bound",
			spec(t, nil, ns("pid=/proc/1/ns/pid", "ipc=/proc/42/ns/ipc", "uts=/proc/1/ns/uts", "mount", "network=/proc/42/ns/net")),
			ns("ipc=/proc/42/ns/ipc", "mount", "network=/proc/42/ns/net"), false, "bind", 3},
		{"hostNetwork container: joins the namespace's own network",
			spec(t, nil, ns("pid", "ipc=/proc/42/ns/ipc", "mount", "network=/proc/1/ns/net")),
			ns("pid", "ipc=/proc/42/ns/ipc", "mount"), false, "proc", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changes, err := RewriteSpec(tt.in, r)
			if err != nil {
				t.Fatal(err)
			}
			if len(changes) != tt.wantChanges {
				t.Errorf("changes = %q, want %d", changes, tt.wantChanges)
			}
			if len(changes) == 0 && string(out) != string(tt.in) {
				t.Errorf("no change reported but the spec differs")
			}
			var got struct {
				Process map[string]any `json:"process"`
				Mounts  []struct {
					Destination string   `json:"destination"`
					Type        string   `json:"type"`
					Source      string   `json:"source"`
					Options     []string `json:"options"`
				} `json:"mounts"`
				Linux struct {
					Namespaces         []map[string]string `json:"namespaces"`
					CgroupsPath        string              `json:"cgroupsPath"`
					UnknownFutureField map[string]any      `json:"unknownFutureField"`
				} `json:"linux"`
				Annotations map[string]string `json:"annotations"`
				OCIVersion  string            `json:"ociVersion"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			if !reflect.DeepEqual(got.Linux.Namespaces, tt.wantNS) {
				t.Errorf("namespaces = %v, want %v", got.Linux.Namespaces, tt.wantNS)
			}
			if _, has := got.Process["oomScoreAdj"]; has != tt.wantOOM {
				t.Errorf("oomScoreAdj present = %v, want %v", has, tt.wantOOM)
			}
			if got.Mounts[0].Destination != "/proc" || got.Mounts[0].Type != tt.wantProc {
				t.Errorf("/proc mount = %+v, want type %s", got.Mounts[0], tt.wantProc)
			}
			if tt.wantProc == "bind" && (got.Mounts[0].Source != "/proc" || got.Mounts[0].Options[0] != "rbind") {
				t.Errorf("/proc bind = %+v, want an rbind of /proc", got.Mounts[0])
			}
			// Everything else is kept.
			if got.OCIVersion != "1.3.0" || got.Annotations["io.kubernetes.cri.container-type"] != "sandbox" ||
				got.Linux.CgroupsPath == "" || got.Linux.UnknownFutureField["kept"] != true ||
				got.Process["cwd"] != "/" || len(got.Mounts) != 2 || got.Mounts[1].Type != "tmpfs" {
				t.Errorf("fields lost in the rewrite:\n%s", out)
			}
		})
	}
}

func TestRewriteSpecNoRewrite(t *testing.T) {
	minus998 := -998
	in := spec(t, &minus998, ns("ipc", "mount"))
	out, changes, err := RewriteSpec(in, Rewrite{})
	if err != nil || len(changes) != 0 || string(out) != string(in) {
		t.Errorf("empty Rewrite changed the spec: %q, %v", changes, err)
	}
}

func TestRewriteSpecErrors(t *testing.T) {
	for _, in := range []string{"", "[]", `{"process": 3}`, `{"linux": {"namespaces": "x"}}`, `{"mounts": {}, "linux": {"namespaces": []}}`} {
		if _, _, err := RewriteSpec([]byte(in), DefaultRewrite); err == nil {
			t.Errorf("RewriteSpec(%q) succeeded, want an error", in)
		}
	}
}

func TestRewriteBundle(t *testing.T) {
	dir := t.TempDir()
	minus998 := -998
	if err := os.WriteFile(filepath.Join(dir, "config.json"), spec(t, &minus998, ns("pid", "mount")), 0o600); err != nil {
		t.Fatal(err)
	}
	changes, err := RewriteBundle(dir, DefaultRewrite)
	if err != nil || len(changes) != 1 {
		t.Fatalf("RewriteBundle = %q, %v; want one change", changes, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	if strings.Contains(string(b), "oomScoreAdj") {
		t.Errorf("oomScoreAdj still in the bundle:\n%s", b)
	}
	st, _ := os.Stat(filepath.Join(dir, "config.json"))
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600 kept", st.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("bundle dir holds %d files, want only config.json", len(entries))
	}
	if _, err := RewriteBundle(t.TempDir(), DefaultRewrite); err == nil {
		t.Error("RewriteBundle of a dir without config.json succeeded")
	}
}

func TestSameNamespace(t *testing.T) {
	if !SameNamespace("network", "/proc/self/ns/net") || !SameNamespace("pid", "/proc/self/ns/pid") {
		t.Error("own namespaces not recognised")
	}
	if SameNamespace("network", "/proc/self/ns/uts") || SameNamespace("bogus", "/proc/self/ns/net") || SameNamespace("pid", "/nonexistent") {
		t.Error("a different or missing namespace counted as own")
	}
}
