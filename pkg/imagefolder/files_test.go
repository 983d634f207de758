package imagefolder

import (
	"slices"
	"strings"
	"testing"
)

func TestKindOf(t *testing.T) {
	tests := []struct {
		name string
		want Kind
	}{
		{"app.tar", Tarball},
		{"app.TAR", Tarball},
		{"app.tar.gz", Tarball},
		{"app.tgz", Tarball},
		{"app.tar.zst", Tarball},
		{"app.tzst", Tarball},
		{"images.txt", List},
		{"IMAGES.TXT", List},
		{".app.tar", Ignored},        // hidden: editors', rsync's temp files
		{".app.tar.Xy12ab", Ignored}, // rsync temp name
		{"app.tar.part", Ignored},    // partial download
		{"app.tar~", Ignored},        // backup
		{"app.tar.gz.crdownload", Ignored},
		{"app.zip", Ignored},
		{".tar", Ignored},
		{".txt", Ignored},
		{"README", Ignored},
		{"", Ignored},
		{"sub/app.tar", Ignored},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := KindOf(tt.name); got != tt.want {
				t.Errorf("KindOf(%q) = %s, want %s", tt.name, got, tt.want)
			}
		})
	}
}

func TestParseList(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr []string // substrings of the error
	}{
		{name: "empty", in: "", want: nil},
		{name: "only comments and blanks", in: "# mirror of prod\n\n   \n\t# more\n", want: nil},
		{
			name: "normalized and deduplicated",
			in:   "busybox\ndocker.io/library/busybox:latest\nregistry.example.test:5000/app:v1  # the app\n  quay.io/x/y@sha256:" + strings.Repeat("a", 64) + "\n",
			want: []string{"docker.io/library/busybox:latest", "registry.example.test:5000/app:v1", "quay.io/x/y@sha256:" + strings.Repeat("a", 64)},
		},
		{name: "CRLF line ends", in: "example.test/a:1\r\nexample.test/b:2\r\n", want: []string{"example.test/a:1", "example.test/b:2"}},
		{
			name:    "every bad line reported",
			in:      "example.test/ok:1\nNot/Valid:Ref\nexample.test/a:1 example.test/b:2\n",
			wantErr: []string{"line 2", "line 3", "one image reference per line"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseList(strings.NewReader(tt.in))
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("ParseList = %v, want an error", got)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				if got != nil {
					t.Errorf("refs %v returned with the error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ParseList = %q, want %q", got, tt.want)
			}
		})
	}
}
