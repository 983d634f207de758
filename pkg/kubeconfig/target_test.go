package kubeconfig

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestUserTarget(t *testing.T) {
	const (
		uid, gid = 1001, 1002
		// placeholders in the table, replaced by the test's directories
		dirP  = "{dir}"
		homeP = "{home}"
	)
	alice := &Owner{UID: uid, GID: gid}
	sudo := map[string]string{sudoUserEnv: "alice", sudoUIDEnv: "1001", sudoGIDEnv: "1002"}
	tests := []struct {
		name       string
		euid       int
		env        map[string]string // SUDO_* and KUBECONFIG; unset if absent
		existing   []string          // files that exist
		want       string
		wantOwner  *Owner
		wantErrors []string // substrings of the error; the call must fail
	}{
		{name: "no sudo, no KUBECONFIG", want: clientcmd.RecommendedHomeFile},
		{name: "no sudo, one file", env: map[string]string{"KUBECONFIG": "{dir}/a"}, want: "{dir}/a"},
		{name: "no sudo, list, none exists: the last", env: map[string]string{"KUBECONFIG": "{dir}/a:{dir}/b"}, want: "{dir}/b"},
		{name: "no sudo, list: the first that exists", env: map[string]string{"KUBECONFIG": "{dir}/a:{dir}/b:{dir}/c"},
			existing: []string{"{dir}/b", "{dir}/c"}, want: "{dir}/b"},
		{name: "no sudo, list with empty entries", env: map[string]string{"KUBECONFIG": "::{dir}/b:{dir}/c"}, want: "{dir}/c"},
		{name: "no sudo, list ending in an empty entry", env: map[string]string{"KUBECONFIG": "{dir}/a:"},
			wantErrors: []string{`KUBECONFIG="{dir}/a:" names no file`}},
		{name: "sudo -u to an ordinary user", euid: 1003, env: sudo, want: clientcmd.RecommendedHomeFile},
		{name: "sudo by root", env: map[string]string{sudoUserEnv: "root", sudoUIDEnv: "0", sudoGIDEnv: "0"}, want: clientcmd.RecommendedHomeFile},
		{name: "sudo: the user's home, not $HOME", env: sudo, want: "{home}/.kube/config", wantOwner: alice},
		{name: "sudo kept KUBECONFIG", env: with(sudo, "KUBECONFIG", "{dir}/a"), want: "{dir}/a", wantOwner: alice},
		{name: "sudo kept a KUBECONFIG list", env: with(sudo, "KUBECONFIG", "{dir}/a:{dir}/b"),
			existing: []string{"{dir}/a"}, want: "{dir}/a", wantOwner: alice},
		{name: "sudo with bad ids", env: map[string]string{sudoUserEnv: "alice", sudoUIDEnv: "x", sudoGIDEnv: "-1"},
			wantErrors: []string{`SUDO_UID="x" is not`, `SUDO_GID="-1" is not`}},
		{name: "sudo of an unknown user", env: with(sudo, sudoUserEnv, "bob"),
			wantErrors: []string{"home directory of SUDO_USER=bob", "unknown user bob"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			home := filepath.Join(dir, "home", "alice")
			expand := strings.NewReplacer(dirP, dir, homeP, home).Replace
			for _, k := range []string{sudoUserEnv, sudoUIDEnv, sudoGIDEnv, clientcmd.RecommendedConfigPathEnvVar} {
				t.Setenv(k, expand(tt.env[k]))
			}
			// $HOME as sudo may leave it: root's.
			t.Setenv("HOME", filepath.Join(dir, "root"))
			for _, f := range tt.existing {
				if err := os.WriteFile(expand(f), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			lookup := func(name string) (*user.User, error) {
				if name != "alice" {
					return nil, user.UnknownUserError(name)
				}
				return &user.User{Username: name, Uid: "1001", Gid: "1002", HomeDir: home}, nil
			}
			euid := tt.euid // 0 unless set: root
			got, err := userTarget(euid, lookup)
			if tt.wantErrors != nil {
				if err == nil {
					t.Fatalf("userTarget() = %+v, want an error", got)
				}
				for _, w := range tt.wantErrors {
					if !strings.Contains(err.Error(), expand(w)) {
						t.Errorf("error %q does not contain %q", err, expand(w))
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := expand(tt.want); got.Path != want {
				t.Errorf("path %q, want %q", got.Path, want)
			}
			switch {
			case (got.Owner == nil) != (tt.wantOwner == nil):
				t.Errorf("owner %v, want %v", got.Owner, tt.wantOwner)
			case got.Owner != nil && *got.Owner != *tt.wantOwner:
				t.Errorf("owner %+v, want %+v", *got.Owner, *tt.wantOwner)
			}
		})
	}
}

// with returns a copy of env with k set to v.
func with(env map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for ek, ev := range env {
		if ek != k {
			out[ek] = ev
		}
	}
	return out
}
