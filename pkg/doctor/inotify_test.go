package doctor

import (
	"errors"
	"strings"
	"testing"
)

func TestInotifyResult(t *testing.T) {
	tests := []struct {
		name       string
		value      string
		err        error
		want       Status
		wantDetail string
		wantFix    string
	}{
		{name: "kernel default", value: "128", want: StatusWarn, wantDetail: "max_user_instances=128: a few clusters", wantFix: "sysctl -w fs.inotify.max_user_instances=512"},
		{name: "just below", value: "511", want: StatusWarn, wantDetail: "=511"},
		{name: "kind's advice", value: "512", want: StatusOK, wantDetail: "=512"},
		{name: "high", value: "8192", want: StatusOK, wantDetail: "=8192"},
		{name: "unreadable", err: errors.New("open /proc/sys/fs/inotify/max_user_instances: no such file"), want: StatusWarn, wantDetail: "no such file"},
		{name: "not a number", value: "lots", want: StatusWarn, wantDetail: `"lots"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, detail, fix := inotifyResult(tt.value, tt.err)
			if status != tt.want || !strings.Contains(detail, tt.wantDetail) || !strings.Contains(fix, tt.wantFix) {
				t.Errorf("inotifyResult(%q, %v) = %v, %q, %q; want %v, detail with %q, fix with %q",
					tt.value, tt.err, status, detail, fix, tt.want, tt.wantDetail, tt.wantFix)
			}
			if status == StatusOK && fix != "" {
				t.Errorf("fix %q for an OK value", fix)
			}
		})
	}
}
