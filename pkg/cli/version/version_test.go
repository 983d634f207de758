package version

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/kubernix/kubernix/pkg/cli/common"
)

func TestInfoOutput(t *testing.T) {
	info := Info{
		Kubernix: "v0.3.0", Revision: "abc123", GoVersion: "go1.26.8", Platform: "linux/amd64",
		Upstream: map[string]string{"KUBERNETES_VERSION": "v1.37.2", "CONTAINERD_VERSION": "v2.4.2"},
	}
	tests := []struct {
		name string
		info Info
		want string
	}{
		{"with revision", info, "kubernix v0.3.0 abc123 (go1.26.8 linux/amd64)\n  CONTAINERD_VERSION  v2.4.2\n  KUBERNETES_VERSION  v1.37.2\n"},
		{"no revision, no upstream", Info{Kubernix: "dev", GoVersion: "go1.26.8", Platform: "linux/arm64"}, "kubernix dev (go1.26.8 linux/arm64)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var table bytes.Buffer
			if err := common.PrintOutput(&table, common.OutputTable, tt.info, tt.info.Table); err != nil {
				t.Fatal(err)
			}
			if table.String() != tt.want {
				t.Errorf("table:\n%s\nwant:\n%s", table.String(), tt.want)
			}
			var js bytes.Buffer
			if err := common.PrintOutput(&js, common.OutputJSON, tt.info, tt.info.Table); err != nil {
				t.Fatal(err)
			}
			var back Info
			if err := json.Unmarshal(js.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			if len(tt.info.Upstream) == 0 {
				back.Upstream = tt.info.Upstream // nil and {} both mean none
			}
			if !reflect.DeepEqual(back, tt.info) {
				t.Errorf("JSON round trip: %+v, want %+v\n%s", back, tt.info, js.String())
			}
		})
	}
	// The json field names are part of the interface.
	var m map[string]any
	b, _ := json.Marshal(info)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"kubernix", "revision", "goVersion", "platform", "upstream"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
}

// TestCurrent checks the Info of this test binary: the pinned versions
// are there.
func TestCurrent(t *testing.T) {
	info := Current()
	if info.Kubernix != Version || info.GoVersion == "" || info.Platform == "" {
		t.Errorf("Current() = %+v", info)
	}
	if info.Upstream["KUBERNETES_VERSION"] == "" {
		t.Errorf("Current().Upstream lacks KUBERNETES_VERSION: %v", info.Upstream)
	}
}
