package components

import (
	"slices"
	"testing"
)

func TestMergeArgs(t *testing.T) {
	ours := []string{"--a=1", "--b=2", "--flag", "--c=3"}
	tests := []struct {
		name  string
		ours  []string
		extra []string
		want  []string
	}{
		{"no extra", ours, nil, ours},
		{"appended", ours, []string{"--d=4"}, []string{"--a=1", "--b=2", "--flag", "--c=3", "--d=4"}},
		{"collision replaced by the user's", ours, []string{"--b=20"}, []string{"--a=1", "--flag", "--c=3", "--b=20"}},
		{"boolean replaced by a value", ours, []string{"--flag=false"}, []string{"--a=1", "--b=2", "--c=3", "--flag=false"}},
		{"value replaced by a boolean", ours, []string{"--a"}, []string{"--b=2", "--flag", "--c=3", "--a"}},
		{"user's order and repeats kept", ours, []string{"--x=1", "--c=30", "--x=2"}, []string{"--a=1", "--b=2", "--flag", "--x=1", "--c=30", "--x=2"}},
		{"prefix of a name is another flag", ours, []string{"--a-b=5"}, []string{"--a=1", "--b=2", "--flag", "--c=3", "--a-b=5"}},
		{"value holding = and --", []string{"--feature-gates=A=true"}, []string{"--feature-gates=B=false,C=true"}, []string{"--feature-gates=B=false,C=true"}},
		{"two-argument flag of ours replaced whole", []string{"--config", "/a.toml", "--log-level=info"}, []string{"--config=/b.toml"},
			[]string{"--log-level=info", "--config=/b.toml"}},
		{"two-argument flag of ours kept whole", []string{"--config", "/a.toml", "--log-level=info"}, []string{"--log-level=debug"},
			[]string{"--config", "/a.toml", "--log-level=debug"}},
		{"no ours", nil, []string{"--d=4"}, []string{"--d=4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.ours)
			got := MergeArgs(tt.ours, tt.extra)
			if !slices.Equal(got, tt.want) {
				t.Errorf("MergeArgs(%q, %q) = %q, want %q", tt.ours, tt.extra, got, tt.want)
			}
			if !slices.Equal(tt.ours, before) {
				t.Errorf("MergeArgs changed ours: %q, was %q", tt.ours, before)
			}
		})
	}
}

func TestFlagName(t *testing.T) {
	for arg, want := range map[string]string{
		"--max-pods=50": "max-pods", "--v": "v", "-v=2": "v", "--a=b=c": "a", "value": "", "": "",
	} {
		if got := FlagName(arg); got != want {
			t.Errorf("FlagName(%q) = %q, want %q", arg, got, want)
		}
	}
}

func TestMapFlags(t *testing.T) {
	if got := FeatureGatesArgs(map[string]bool{"B": false, "A": true}); !slices.Equal(got, []string{"--feature-gates=A=true,B=false"}) {
		t.Errorf("FeatureGatesArgs = %q", got)
	}
	if got := FeatureGatesArgs(nil); got != nil {
		t.Errorf("FeatureGatesArgs(nil) = %q, want none", got)
	}
	rc := map[string]string{"coordination.k8s.io/v1beta1": "true", "api/alpha": "false"}
	if got := MapArgs("runtime-config", rc); !slices.Equal(got, []string{"--runtime-config=api/alpha=false,coordination.k8s.io/v1beta1=true"}) {
		t.Errorf("MapArgs = %q", got)
	}
	if got := MapArgs("runtime-config", nil); got != nil {
		t.Errorf("MapArgs(nil) = %q, want none", got)
	}
}
