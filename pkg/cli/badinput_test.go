package cli

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/network"
)

// runUp runs `kubernix up args...` through Run and returns the exit code
// and standard error.
func runUp(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), common.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, append([]string{"up"}, args...), nil)
	return code, errOut.String()
}

// tree lists the paths below dir (dir itself included), or nil when it
// does not exist.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// TestBadInputRefused runs `kubernix up` with an unsafe state dir, a CIDR
// that is not private or a --name that makes a socket path too long: each
// must exit 2 with a message naming the flag, and create or change nothing
// (the state dir, a marker in an existing directory, the files around).
func TestBadInputRefused(t *testing.T) {
	root, err := os.MkdirTemp("", "kxbad") // short: socket paths must fit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	foreign := filepath.Join(root, "foreign")
	for _, d := range []string{home, foreign} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(foreign, "thesis.tex"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"to-usr": "/usr", "to-foreign": foreign} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	// The derived state dir of a non-root user is below $HOME.
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	state := filepath.Join(root, "s")
	long := strings.Repeat("n", 40)
	tests := []struct {
		name string
		args []string
		want []string
		// watched must look the same after the run (nil: absent).
		watched []string
	}{
		{"public cidr", []string{"--cidr", "8.8.0.0/16"}, []string{"--cidr 8.8.0.0/16: not a private range", "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or 100.64.0.0/10"}, nil},
		{"link-local cidr", []string{"--cidr", "169.254.0.0/16"}, []string{"--cidr 169.254.0.0/16: not a private range"}, nil},
		{"cidr 0.0.0.0/4", []string{"--cidr", "0.0.0.0/4"}, []string{"--cidr 0.0.0.0/4: not a private range"}, nil},
		{"multicast cidr", []string{"--cidr", "224.0.0.0/16"}, []string{"--cidr 224.0.0.0/16: not a private range"}, nil},
		{"public service cidr", []string{"--service-cidr", "8.8.8.0/24"}, []string{"--service-cidr 8.8.8.0/24: not a private range"}, nil},
		{"public node cidr", []string{"--node-cidr", "192.0.2.0/24"}, []string{"--node-cidr 192.0.2.0/24: not a private range"}, nil},
		{"colon in state dir", []string{"--state-dir", root + "/a:b"}, []string{`--state-dir "` + root + `/a:b": contains ":"`}, []string{root + "/a:b"}},
		{"colon in bin dir", []string{"--bin-dir", root + "/b:in"}, []string{`--bin-dir "` + root + `/b:in": contains ":"`}, nil},
		{"bundle dir without bin", []string{"--bundle-dir", foreign}, []string{"--bundle-dir " + foreign + ": no bin directory"}, []string{foreign}},
		{"state dir /", []string{"--state-dir", "/"}, []string{"--state-dir: / is a system directory"}, []string{"/" + ".kubernix-state", "/kubernix.toml", "/logs"}},
		{"state dir /usr", []string{"--state-dir", "/usr"}, []string{"--state-dir: /usr is a system directory"}, []string{"/usr/.kubernix-state", "/usr/logs"}},
		{"state dir /etc", []string{"--state-dir", "/etc/"}, []string{"--state-dir: /etc is a system directory"}, []string{"/etc/.kubernix-state"}},
		{"state dir /var/lib", []string{"--state-dir", "/var/lib"}, []string{"--state-dir: /var/lib is a system directory"}, []string{"/var/lib/.kubernix-state"}},
		{"state dir /mnt", []string{"--state-dir", "/mnt"}, []string{"--state-dir: /mnt is a system directory"}, []string{"/mnt/.kubernix-state"}},
		{"state dir /tmp", []string{"--state-dir", "/tmp"}, []string{"--state-dir: /tmp is a system directory"}, []string{"/tmp/.kubernix-state"}},
		{"home dir", []string{"--state-dir", home}, []string{"--state-dir: " + home + " is a home directory"}, []string{home}},
		{"foreign dir", []string{"--state-dir", foreign}, []string{"--state-dir: " + foreign + " is not empty and not a kubernix state dir"}, []string{foreign}},
		{"symlink to /usr", []string{"--state-dir", filepath.Join(root, "to-usr")}, []string{"--state-dir: /usr is a system directory"}, []string{"/usr/.kubernix-state"}},
		{"symlink to foreign dir", []string{"--state-dir", filepath.Join(root, "to-foreign")}, []string{"--state-dir: " + foreign + " is not empty"}, []string{foreign}},
		{"long name, default state dir", []string{"--name", long}, []string{`--name "` + long + `" (40 bytes, also part of the default --state-dir`, "over the kernel's limit of 107 bytes", "use a --name of at most"},
			[]string{"/var/lib/kubernix/" + long, filepath.Join(home, ".local/share/kubernix", long)}},
		{"long name", []string{"--name", strings.Repeat("m", 63), "--state-dir", state}, []string{`--name "` + strings.Repeat("m", 63) + `" (63 bytes) makes socket path`, "use a --name of at most"}, []string{state}},
		{"long state dir", []string{"--state-dir", filepath.Join(root, strings.Repeat("d", 80))}, []string{"--state-dir " + filepath.Join(root, strings.Repeat("d", 80)), "choose a --state-dir of at most"}, []string{filepath.Join(root, strings.Repeat("d", 80))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{}, tt.args...)
			if !strings.Contains(strings.Join(args, " "), "--state-dir") && !strings.Contains(tt.name, "default state dir") {
				args = append(args, "--state-dir", state)
			}
			watched := append([]string{state}, tt.watched...)
			before := map[string][]string{}
			for _, w := range watched {
				before[w] = tree(t, w)
			}
			code, stderr := runUp(t, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, stderr)
				}
			}
			for _, w := range watched {
				if after := tree(t, w); strings.Join(after, "\n") != strings.Join(before[w], "\n") {
					t.Errorf("%s changed: %q, then %q", w, before[w], after)
				}
			}
		})
	}
}

// netnsEnv marks the run of TestBadInputHost inside `unshare --net`.
const netnsEnv = "KUBERNIX_CLITEST_NETNS"

// TestBadInputHost runs `kubernix up` where the host takes a CIDR (an
// address, a route) or a fixed port of the cluster: each must exit 2 with
// a message naming the flag or the port, its component and its listener,
// and create nothing. It re-runs itself in a new network namespace
// (`unshare --net`), where it adds the addresses, routes and listeners,
// so the host's network is not touched.
func TestBadInputHost(t *testing.T) {
	if os.Getenv(netnsEnv) == "" {
		if os.Geteuid() != 0 {
			t.Skip("needs root: `kubernix up` checks the host only as root (as an ordinary user it runs rootless), and the test makes a network namespace")
		}
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skipf("needs unshare (util-linux): %v", err)
		}
		cmd := exec.Command("unshare", "--net", os.Args[0], "-test.run=^TestBadInputHost$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), netnsEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("in a new network namespace: %v\n%s", err, out)
		}
		t.Logf("in a new network namespace:\n%s", out)
		return
	}
	links, err := netlink.LinkList()
	if err != nil || len(links) != 1 {
		t.Fatalf("not in a fresh network namespace (links %v, %v): refusing to change the host's network", links, err)
	}
	lo := links[0]
	if err := netlink.LinkSetUp(lo); err != nil {
		t.Fatal(err)
	}
	// The host's "LAN" and a route (say, a VPN's).
	lan, _ := netlink.ParseAddr("10.61.200.1/24")
	if err := netlink.AddrAdd(lo, lan); err != nil {
		t.Fatal(err)
	}
	_, dst, _ := net.ParseCIDR("10.62.64.0/24")
	if err := netlink.RouteAdd(&netlink.Route{Dst: dst, Type: unix.RTN_UNREACHABLE, Protocol: unix.RTPROT_STATIC, Table: unix.RT_TABLE_MAIN}); err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp("", "kxhost")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })

	// The node's own ports bind in the host's namespace only with the
	// process executor; a sandboxed node binds them in its own.
	processNode := []string{"--executor", "process"}
	tests := []struct {
		name   string
		args   []string
		listen string // a listener the test holds during the run
		want   []string
	}{
		{"cluster CIDR on the LAN", []string{"--cidr", "10.61.0.0/16"}, "",
			[]string{"--cluster-cidr 10.61.128.0/17 (inside --cidr 10.61.0.0/16) overlaps address 10.61.200.1/24 on link lo on this host; choose a free range, e.g. --cidr 10.10.0.0/16"}},
		{"whole range over a route", []string{"--cidr", "10.62.0.0/16"}, "",
			[]string{`--cidr 10.62.0.0/16 overlaps route "unreachable 10.62.64.0/24 proto 4" on this host; choose a free range, e.g. --cidr 10.10.0.0/16`}},
		{"node CIDR is the LAN", []string{"--cidr", "10.63.0.0/16", "--node-cidr", "10.61.200.0/24"}, "",
			[]string{"--node-cidr 10.61.200.0/24 overlaps address 10.61.200.1/24 on link lo on this host; choose a free range, e.g. --node-cidr 10.10.0.0/24"}},
		{"service CIDR and cluster CIDR", []string{"--cidr", "10.63.0.0/16", "--service-cidr", "10.61.192.0/20", "--cluster-cidr", "10.62.0.0/16"}, "",
			[]string{"(2 problems on this host)", "--service-cidr 10.61.192.0/20 overlaps address 10.61.200.1/24", `--cluster-cidr 10.62.0.0/16 overlaps route "unreachable 10.62.64.0/24`}},
		{"etcd client port", nil, "0.0.0.0:2379", []string{"port 2379 is in use, so etcd (client) cannot listen on 10.64.0.1: a listener on 0.0.0.0:2379 (pid %d,", "kubernix does not move this port"}},
		{"etcd peer port", nil, "0.0.0.0:2380", []string{"port 2380 is in use, so etcd (peer) cannot listen on 10.64.0.1: a listener on 0.0.0.0:2380 (pid %d,"}},
		{"controller-manager port", nil, "0.0.0.0:10257", []string{"port 10257 is in use, so kube-controller-manager cannot listen on 10.64.0.1: a listener on 0.0.0.0:10257 (pid %d,"}},
		{"scheduler port", nil, "0.0.0.0:10259", []string{"port 10259 is in use, so kube-scheduler cannot listen on 10.64.0.1: a listener on 0.0.0.0:10259 (pid %d,"}},
		{"kubelet port", processNode, "0.0.0.0:10250", []string{"port 10250 is in use, so kubelet@<node> cannot listen on 10.64.0.1: a listener on 0.0.0.0:10250 (pid %d,"}},
		{"kubelet healthz port", processNode, "0.0.0.0:10248", []string{"port 10248 is in use, so kubelet@<node> (healthz) cannot listen on 10.64.0.1"}},
		{"kube-proxy healthz port", processNode, "0.0.0.0:10256", []string{"port 10256 is in use, so kube-proxy@<node> (healthz) cannot listen on 10.64.0.1"}},
		{"kube-proxy metrics port", processNode, "0.0.0.0:10249", []string{"port 10249 is in use, so kube-proxy@<node> (metrics) cannot listen on 10.64.0.1"}},
		{"apiserver port", []string{"--apiserver-port", "7443"}, "0.0.0.0:7443", []string{"port 7443 is in use, so kube-apiserver cannot listen on 10.64.0.1: a listener on 0.0.0.0:7443 (pid %d,", "choose another --apiserver-port"}},
		{"registry port", []string{"--registry-port", "7501"}, "127.0.0.1:7501", []string{"port 7501 is in use, so registry-localhost cannot listen on 127.0.0.1: a listener on 127.0.0.1:7501 (pid %d,", "choose another --registry-port"}},
		{"dual-stack wildcard", nil, "[::]:2379", []string{"port 2379 is in use, so etcd (client) cannot listen on 10.64.0.1: a listener on [::]:2379"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.listen != "" {
				family := "tcp4"
				if strings.HasPrefix(tt.listen, "[") {
					family = "tcp" // dual-stack, as most programs listen on [::]
				}
				ln, err := net.Listen(family, tt.listen)
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
			}
			name := fmt.Sprintf("inp-host-%d", i)
			state := filepath.Join(root, name)
			args := append([]string{"--name", name, "--state-dir", state}, tt.args...)
			if !strings.Contains(strings.Join(args, " "), "--cidr") {
				args = append(args, "--cidr", "10.64.0.0/16")
			}
			code, stderr := runUp(t, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			for _, w := range tt.want {
				if strings.Contains(w, "%d") {
					w = fmt.Sprintf(w, os.Getpid())
				}
				w = strings.ReplaceAll(w, "<node>", name+"-node-0")
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(state); !os.IsNotExist(err) {
				t.Errorf("state dir %s was created (stat: %v)", state, err)
			}
			if l, err := netlink.LinkByName(network.NamesFor(name).Bridge); err == nil {
				t.Errorf("bridge %s was created", l.Attrs().Name)
			}
			if after, err := netlink.LinkList(); err != nil || len(after) != 1 {
				t.Errorf("links after up: %d, %v; want lo only", len(after), err)
			}
		})
	}
}
