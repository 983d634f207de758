package rootless

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
)

func TestKitArgs(t *testing.T) {
	k := Kit{
		Rootlesskit: "/usr/bin/rootlesskit", Slirp4netns: "/usr/bin/slirp4netns",
		StateDir: "/home/u/.local/share/kubernix/k/rootlesskit",
		HostIP:   netip.MustParseAddr("127.0.0.1"), HostPort: 6443,
		ChildIP: netip.MustParseAddr("10.10.0.1"), ChildPort: 6443,
		LoopbackPorts: []int{5001, 0},
		Argv:          []string{"/bin/kubernix", "up", "--rootless-child"},
	}
	if err := k.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--net=slirp4netns", "--slirp4netns-binary=/usr/bin/slirp4netns", "--disable-host-loopback",
		"--copy-up=/etc", "--copy-up=/run", "--copy-up=/var/lib", "--copy-up=/var/log",
		"--port-driver=builtin", "--publish=127.0.0.1:6443:10.10.0.1:6443/tcp",
		"--publish=127.0.0.1:5001:127.0.0.1:5001/tcp",
		"--state-dir=/home/u/.local/share/kubernix/k/rootlesskit",
		"--", "/bin/kubernix", "up", "--rootless-child",
	}
	if got := k.Args(); !reflect.DeepEqual(got, want) {
		t.Errorf("Args() =\n%q\nwant\n%q", got, want)
	}
}

func TestKitValidate(t *testing.T) {
	err := Kit{StateDir: "/" + strings.Repeat("x", 100)}.Validate()
	for _, want := range []string{"rootlesskit \"\"", "too long for its sockets", "host and child IP", "no command"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %q", err, want)
		}
	}
}

func TestPortSpec(t *testing.T) {
	got := PortSpec(netip.MustParseAddr("127.0.0.1"), 7443, netip.MustParseAddr("10.205.0.1"), 6443)
	if got != "127.0.0.1:7443:10.205.0.1:6443/tcp" {
		t.Errorf("PortSpec = %q", got)
	}
}

func TestStateDirFor(t *testing.T) {
	short := StateDirFor("/home/u/.local/share/kubernix/k", "/tmp", 1000)
	if short != "/home/u/.local/share/kubernix/k/rootlesskit" {
		t.Errorf("short state dir = %q", short)
	}
	long := "/home/" + strings.Repeat("u", 90) + "/state"
	got := StateDirFor(long, "/tmp", 1000)
	if !strings.HasPrefix(got, "/tmp/kubernix-1000/") || len(got)+len(longestStateFile) > maxSocketPath {
		t.Errorf("long state dir = %q", got)
	}
	if got != StateDirFor(long, "/tmp", 1000) {
		t.Error("not deterministic")
	}
}

func TestParseSubIDs(t *testing.T) {
	file := "# comment\nalice:100000:65536\nbob:165536:65536\n1001:231072:1000\nalice:300000:10\nbroken\ncarol:x:5\n" +
		"erin:0:65536\nfrank:-5:65536\ngina:400000:-1\n  hank:500000:70000  \n"
	tests := []struct {
		user  string
		id    int
		total int
	}{
		{"alice", 1000, 65546},
		{"bob", 1002, 65536},
		{"dave", 1001, 1000}, // by numeric id
		{"carol", 1003, 0},
		{"erin", 1004, 0},  // a range from host ID 0 (root) is not subordinate
		{"frank", 1005, 0}, // a negative start
		{"gina", 1006, 0},  // a negative count
		{"hank", 1007, 70000},
		{"nobody", 9, 0},
	}
	for _, tt := range tests {
		ranges, err := parseSubIDs(strings.NewReader(file), tt.user, tt.id)
		if err != nil || Total(ranges) != tt.total {
			t.Errorf("%s: total %d, %v; want %d", tt.user, Total(ranges), err, tt.total)
		}
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "subuid")
	if err := os.WriteFile(f, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckSubIDs(f, "alice", 1000); err != nil {
		t.Error(err)
	}
	if err := CheckSubIDs(f, "dave", 1001); err == nil || !strings.Contains(err.Error(), f) {
		t.Errorf("CheckSubIDs(dave) = %v, want an error naming %s", err, f)
	}
	if err := CheckSubIDs(filepath.Join(dir, "missing"), "alice", 1000); err == nil {
		t.Error("a missing file granted IDs")
	}
}

func TestCommonCgroup(t *testing.T) {
	tests := []struct {
		paths []string // of the hierarchies, as /proc/self/cgroup lists them
		want  string
		ok    bool
	}{
		{[]string{"/user.slice/user-1000.slice/user@1000.service/app.slice"}, "/user.slice/user-1000.slice/user@1000.service/app.slice", true},
		{[]string{"/kubernix-1000", "/kubernix-1000", "/kubernix-1000"}, "/kubernix-1000", true},
		{[]string{"/process_api/955f", "/", "/"}, "", false},
		{nil, "", false},
	}
	for _, tt := range tests {
		var cgs []procfs.Cgroup
		for i, p := range tt.paths {
			cgs = append(cgs, procfs.Cgroup{HierarchyID: len(tt.paths) - 1 - i, Path: p})
		}
		got, err := commonCgroup(cgs)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("commonCgroup(%q) = %q, %v; want %q", tt.paths, got, err, tt.want)
		}
	}
	if _, err := ownCgroup(); err != nil && !strings.Contains(err.Error(), "different cgroups") {
		t.Errorf("ownCgroup = %v", err)
	}
}

func TestRenderWrapper(t *testing.T) {
	dir := t.TempDir()
	// A stand-in "kubernix" that prints its arguments, one per line.
	fake := filepath.Join(dir, "it's kubernix")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The fake serves as the runtime too: both print their arguments.
	b, err := RenderWrapper(fake, fake)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "#!/bin/sh\n# generated by kubernix, do not edit\n") {
		t.Errorf("script header:\n%s", b)
	}
	script := filepath.Join(dir, WrapperName)
	if err := os.WriteFile(script, b, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(script, "--root", "/run/x", "create", "--bundle", "/b c", "id").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "oci-runtime-wrap\n--runtime\n" + fake + "\n--\n--root\n/run/x\ncreate\n--bundle\n/b c\nid\n"
	if string(out) != want {
		t.Errorf("wrapper ran %q, want %q", out, want)
	}
	// Other subcommands go straight to the runtime.
	out, err = exec.Command(script, "--root", "/run/x", "state", "id").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "--root\n/run/x\nstate\nid\n"; string(out) != want {
		t.Errorf("wrapper ran %q for state, want %q", out, want)
	}
	if _, err := RenderWrapper("kubernix", fake); err == nil {
		t.Error("relative kubernix path accepted")
	}
}

func TestPrepareMountsRefusesHost(t *testing.T) {
	if err := PrepareMounts(false); err == nil {
		t.Error("PrepareMounts outside a user namespace succeeded")
	}
}
