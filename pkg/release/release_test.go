package release

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	def := Default()
	built := []Release{def, Of("v1.36.3", "/b/releases/v1.36.3/bin"), Of("v1.36.1", "/b/releases/v1.36.1/bin")}
	known := Known()
	if len(known) < 2 {
		t.Fatalf("Known() = %v: versions.env lists no other release", known)
	}
	older := known[1]
	tests := []struct {
		built   []Release
		version string
		want    string // "" wants the error
		err     error
	}{
		{built, def.Kubernetes, def.Kubernetes, nil},
		{built, def.Kubernetes[1:], def.Kubernetes, nil},
		{built, " " + def.Kubernetes + " ", def.Kubernetes, nil},
		{built, "", def.Kubernetes, nil},
		{built, "1." + strconv.Itoa(def.Minor()), def.Kubernetes, nil},
		{built, "v1.36", "v1.36.3", nil}, // the first, newest patch of the minor
		{built, "v1.36.1", "v1.36.1", nil},
		{built[:1], older, "", ErrNotBuilt},
		{built[:1], older[:len(older)-2], "", ErrNotBuilt}, // its minor
		{built, "v1.20.0", "", ErrUnsupported},
		{built, "1.3", "", ErrUnsupported}, // not a prefix match of 1.36 or 1.37
		{built, "1", "", ErrUnsupported},
		{built, "v1.37.2-rc.0", "", ErrUnsupported},
		{nil, "", "", ErrNotBuilt},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			got, err := Lookup(tt.built, tt.version)
			if tt.want == "" {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Lookup(%q) = %v, %v; want %v", tt.version, got, err, tt.err)
				}
				return
			}
			if err != nil || got.Kubernetes != tt.want {
				t.Fatalf("Lookup(%q) = %v, %v; want %s", tt.version, got, err, tt.want)
			}
		})
	}
	// The error names the make command that builds the release.
	_, err := Lookup(built[:1], older)
	if want := "make bins KUBERNETES_VERSION=" + older; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Lookup(%q) error %v does not say %q", older, err, want)
	}
}

func TestCheckUpgrade(t *testing.T) {
	tests := []struct {
		from, to string
		ok       bool
	}{
		{"v1.36.3", "v1.36.3", true},
		{"v1.36.1", "v1.36.3", true},
		{"v1.36.3", "v1.36.1", true}, // a patch of the same minor
		{"v1.36.3", "v1.37.2", true},
		{"v1.35.4", "v1.36.3", true},
		{"v1.37.2", "v1.36.3", false}, // downgrade
		{"v1.35.4", "v1.37.2", false}, // skip
		{"v1.37.2", "v2.0.0", false},
		{"", "v1.37.2", false},
		{"v1.37.2", "bad", false},
	}
	for _, tt := range tests {
		err := CheckUpgrade(tt.from, tt.to)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, ErrUpgrade) {
			t.Errorf("CheckUpgrade(%q, %q) = %v, want ok %v", tt.from, tt.to, err, tt.ok)
		}
	}
	if err := CheckUpgrade("v1.35.4", "v1.37.2"); err == nil || !strings.Contains(err.Error(), "v1.36 first") {
		t.Errorf("a skip's error %v does not name the minor between", err)
	}
}

func TestKnownNewestFirst(t *testing.T) {
	known := Known()
	for i := 1; i < len(known); i++ {
		a, b := Release{Kubernetes: known[i-1]}, Release{Kubernetes: known[i]}
		if a.Minor() <= b.Minor() {
			t.Errorf("Known() = %v: not newest first, one release per minor", known)
		}
	}
}

func TestMinor(t *testing.T) {
	tests := []struct {
		version string
		minor   int
	}{
		{"v1.37.2", 37}, {"1.34.0", 34}, {"v1.35", 35}, {"v1", 0}, {"", 0}, {"v1.x.2", 0},
	}
	for _, tt := range tests {
		r := Release{Kubernetes: tt.version}
		if got := r.Minor(); got != tt.minor {
			t.Errorf("Minor(%q) = %d, want %d", tt.version, got, tt.minor)
		}
		if tt.minor > 0 && (!r.AtLeast(tt.minor) || r.AtLeast(tt.minor+1)) {
			t.Errorf("AtLeast around %d wrong for %q", tt.minor, tt.version)
		}
	}
}

func TestDefaultComplete(t *testing.T) {
	d := Default()
	for name, v := range map[string]string{"Kubernetes": d.Kubernetes, "Containerd": d.Containerd, "Registry": d.Registry, "SandboxImage": d.SandboxImage} {
		if v == "" || v[len(v)-1] == ':' {
			t.Errorf("Default().%s = %q: assets/versions.env lacks it", name, v)
		}
	}
	if d.Minor() == 0 {
		t.Errorf("Default().Kubernetes %q has no minor version", d.Kubernetes)
	}
}
