package release

import (
	"errors"
	"strconv"
	"testing"
)

func TestLookup(t *testing.T) {
	def := Default()
	tests := []struct {
		version string
		want    string // "" wants ErrUnsupported
	}{
		{def.Kubernetes, def.Kubernetes},
		{def.Kubernetes[1:], def.Kubernetes},
		{" " + def.Kubernetes + " ", def.Kubernetes},
		{"1." + strconv.Itoa(def.Minor()), def.Kubernetes},
		{"v1.20.0", ""},
		{"1.3", ""}, // not a prefix match of 1.37
		{"1", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			got, err := Lookup(tt.version)
			if tt.want == "" {
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("Lookup(%q) = %v, %v; want ErrUnsupported", tt.version, got, err)
				}
				return
			}
			if err != nil || got.Kubernetes != tt.want {
				t.Fatalf("Lookup(%q) = %v, %v; want %s", tt.version, got, err, tt.want)
			}
		})
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
