package common

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/kubernix/kubernix/pkg/config"
)

func TestPrintOutput(t *testing.T) {
	type row struct {
		Name  string `json:"name"`
		Nodes int    `json:"nodes"`
	}
	v := []row{{"a", 1}, {"bb", 3}}
	table := func(tw io.Writer) error {
		fmt.Fprintln(tw, "NAME\tNODES")
		for _, r := range v {
			fmt.Fprintf(tw, "%s\t%d\n", r.Name, r.Nodes)
		}
		return nil
	}
	tests := []struct {
		format, want string
		invalid      bool
	}{
		{OutputTable, "NAME  NODES\na     1\nbb    3\n", false},
		{OutputJSON, "[\n  {\n    \"name\": \"a\",\n    \"nodes\": 1\n  },\n  {\n    \"name\": \"bb\",\n    \"nodes\": 3\n  }\n]\n", false},
		{OutputYAML, "- name: a\n  nodes: 1\n- name: bb\n  nodes: 3\n", false},
		{"wide", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			if err := CheckOutput(tt.format); (err != nil) != tt.invalid || (err != nil && !errors.Is(err, config.ErrInvalid)) {
				t.Fatalf("CheckOutput(%q) = %v, want invalid %v", tt.format, err, tt.invalid)
			}
			var buf bytes.Buffer
			err := PrintOutput(&buf, tt.format, v, table)
			if (err != nil) != tt.invalid {
				t.Fatalf("PrintOutput(%q) error %v", tt.format, err)
			}
			if buf.String() != tt.want {
				t.Errorf("PrintOutput(%q) =\n%q\nwant\n%q", tt.format, buf.String(), tt.want)
			}
		})
	}
}
