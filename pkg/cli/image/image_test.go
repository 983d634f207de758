package image

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/components/containerd"
	"github.com/kubernix/kubernix/pkg/config"
)

func TestExpand(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b.tar", "a.tar.zst", "c.tgz", "notes.txt", ".hidden.tar", "x.zip"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.tar"), 0o755); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	tests := []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{name: "a dir: its tarballs, sorted", args: []string{dir}, want: []string{"a.tar.zst", "b.tar", "c.tgz"}},
		{name: "a file by any name", args: []string{filepath.Join(dir, "x.zip")}, want: []string{"x.zip"}},
		{name: "files and dirs in order", args: []string{filepath.Join(dir, "notes.txt"), dir}, want: []string{"notes.txt", "a.tar.zst", "b.tar", "c.tgz"}},
		{name: "missing file", args: []string{filepath.Join(dir, "nope.tar")}, wantErr: "nope.tar"},
		{name: "dir without tarballs", args: []string{empty}, wantErr: "no image tarballs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := expand(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("expand = %v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range got {
				if !filepath.IsAbs(p) {
					t.Errorf("%s is not absolute", p)
				}
				names = append(names, filepath.Base(p))
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("expand = %v, want %v", names, tt.want)
			}
		})
	}
}

func TestSelectNodes(t *testing.T) {
	cfg := config.Config{Name: "c", Nodes: 3, StateDir: "/s"}
	tests := []struct {
		name     string
		index    int
		selected bool
		want     []string
		invalid  bool
	}{
		{"every node", 0, false, []string{"c-node-0", "c-node-1", "c-node-2"}, false},
		{"one node", 2, true, []string{"c-node-2"}, false},
		{"out of range", 3, true, nil, true},
		{"negative", -1, true, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := selectNodes(cfg, tt.index, tt.selected)
			if tt.invalid {
				if !errors.Is(err, config.ErrInvalid) {
					t.Fatalf("error %v, want config.ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, n := range got {
				names = append(names, n.name)
				if want := "/s/nodes/" + n.name + "/containerd.sock"; n.socket != want {
					t.Errorf("socket %s, want %s", n.socket, want)
				}
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("nodes %v, want %v", names, tt.want)
			}
		})
	}
}

func TestSummarizeAndGroupErrors(t *testing.T) {
	nodes := []node{{name: "n0"}, {name: "n1"}, {name: "n2"}}
	app := containerd.ImportedImage{Ref: "example.test/app:1", Digest: "sha256:a"}
	base := containerd.ImportedImage{Ref: "example.test/base:1", Digest: "sha256:b"}
	corrupt := errors.New("import images from /x/bad.tar: unpack: corrupt")
	results := [][]containerd.ImportedImage{{base, app}, {app, base}, nil}
	errs := []error{nil, nil, errors.New("connection refused")}
	got := summarize(nodes, results, errs)
	want := []loaded{{ref: app.Ref, digest: "sha256:a", nodes: []string{"n0", "n1"}}, {ref: base.Ref, digest: "sha256:b", nodes: []string{"n0", "n1"}}}
	if len(got) != len(want) {
		t.Fatalf("summarize = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].ref != want[i].ref || got[i].digest != want[i].digest || !slices.Equal(got[i].nodes, want[i].nodes) {
			t.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	if err := groupErrors(nodes, []error{nil, nil, nil}); err != nil {
		t.Errorf("no errors grouped into %v", err)
	}
	err := groupErrors(nodes, []error{corrupt, errors.New("connection refused"), corrupt})
	msg := err.Error()
	for _, s := range []string{"node n0, n2: import images from /x/bad.tar", "node n1: connection refused"} {
		if !strings.Contains(msg, s) {
			t.Errorf("grouped error %q lacks %q", msg, s)
		}
	}
	if strings.Count(msg, "bad.tar") != 1 {
		t.Errorf("grouped error repeats the same failure: %q", msg)
	}
}
