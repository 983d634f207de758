package image

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubernix/kubernix/pkg/cli/common"
)

func TestListOutput(t *testing.T) {
	pause := Image{Node: "kx-node-0", Image: "registry.k8s.io/pause:3.10.2", Digest: "sha256:aaaa", Pinned: true, Source: "builtin:pause.tar"}
	pulled := Image{Node: "kx-node-1", Image: "docker.io/library/busybox:1.35.0", Digest: "sha256:bbbb"}
	tests := []struct {
		name string
		list List
		want string
	}{
		{"none", List{Images: []Image{}}, "NODE  IMAGE  DIGEST  PINNED  SOURCE\n"},
		{"pinned builtin and pulled", List{Images: []Image{pause, pulled}},
			"NODE       IMAGE                             DIGEST       PINNED  SOURCE\n" +
				"kx-node-0  registry.k8s.io/pause:3.10.2      sha256:aaaa  yes     builtin:pause.tar\n" +
				"kx-node-1  docker.io/library/busybox:1.35.0  sha256:bbbb  no      -\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var table bytes.Buffer
			if err := common.PrintOutput(&table, common.OutputTable, tt.list, tt.list.Table); err != nil {
				t.Fatal(err)
			}
			if table.String() != tt.want {
				t.Errorf("table:\n%s\nwant:\n%s", table.String(), tt.want)
			}
			for _, format := range []string{common.OutputJSON, common.OutputYAML} {
				var out bytes.Buffer
				if err := common.PrintOutput(&out, format, tt.list, tt.list.Table); err != nil {
					t.Fatal(err)
				}
				var back List
				if err := yaml.Unmarshal(out.Bytes(), &back); err != nil { // JSON is YAML
					t.Fatalf("%s: %v", format, err)
				}
				if !reflect.DeepEqual(back, tt.list) {
					t.Errorf("%s round trip: %+v, want %+v\n%s", format, back, tt.list, out.String())
				}
			}
		})
	}
	b, err := json.Marshal(List{Images: []Image{pulled}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"images":[{"node":"kx-node-1","image":"docker.io/library/busybox:1.35.0","digest":"sha256:bbbb","pinned":false}]}`; string(b) != want {
		t.Errorf("JSON = %s\nwant %s", b, want)
	}
}
