package up

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
)

// nopCloser is a buffer a notifier can write to.
type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

// TestNotifyRoundTrip sends notices as a supervisor does and reads them as
// its parent does: progress is relayed line by line, and the parent's error
// has the supervisor's message, class and exit code.
func TestNotifyRoundTrip(t *testing.T) {
	invalid := fmt.Errorf("the record of the last run: %w:\nconfig file x.toml:1:9: bad", config.ErrInvalid)
	tests := []struct {
		name         string
		send         func(n *notifier)
		wantProgress string
		wantErr      string // "" means ready
		wantCode     int
		wantInvalid  bool
	}{
		{"progress then ready", func(n *notifier) {
			fmt.Fprintf(n, "Prepare  1s\n")
			fmt.Fprintf(n, "Etcd  2s\nControlPlane  3s\n")
			_ = n.ready()
			fmt.Fprintf(n, "after ready\n")
			n.fail(errors.New("after ready"))
		}, "Prepare  1s\nEtcd  2s\nControlPlane  3s\n", "", 0, false},
		{"invalid input keeps exit code 2 and its lines", func(n *notifier) {
			fmt.Fprintf(n, "Prepare  1s\n")
			n.fail(invalid)
		}, "Prepare  1s\n", invalid.Error(), 2, true},
		{"other failure exits 1", func(n *notifier) {
			n.fail(errors.New("start etcd: exit status 1"))
		}, "", "start etcd: exit status 1", 1, false},
		{"an exit code of its own", func(n *notifier) {
			n.fail(&common.ExitError{Code: 3, Err: errors.New("three")})
		}, "", "three", 3, false},
		{"only the first final notice counts", func(n *notifier) {
			n.fail(invalid)
			n.fail(errors.New("second"))
			_ = n.ready()
		}, "", invalid.Error(), 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wire bytes.Buffer
			tt.send(newNotifier(nopCloser{&wire}))
			var progress bytes.Buffer
			err := awaitReady(&wire, &progress)
			if progress.String() != tt.wantProgress {
				t.Errorf("progress %q, want %q", progress.String(), tt.wantProgress)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("awaitReady: %v, want ready", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("awaitReady: %v, want error %q", err, tt.wantErr)
			}
			if code := common.ExitCode(err); code != tt.wantCode {
				t.Errorf("exit code %d, want %d", code, tt.wantCode)
			}
			if got := errors.Is(err, config.ErrInvalid); got != tt.wantInvalid {
				t.Errorf("errors.Is(err, config.ErrInvalid) = %v, want %v", got, tt.wantInvalid)
			}
		})
	}
}

// TestNotifyIncomplete: notices that end without ready or error, or that
// are not notices, are an error of their own.
func TestNotifyIncomplete(t *testing.T) {
	tests := []struct {
		name       string
		wire       string
		wantNoNote bool
	}{
		{"nothing", "", true},
		{"progress only", `{"progress":{"line":"Prepare"}}` + "\n", true},
		{"old text protocol", "ready\n", false},
		{"cut off", `{"ready":`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := awaitReady(strings.NewReader(tt.wire), io.Discard)
			if err == nil {
				t.Fatal("awaitReady: ready, want an error")
			}
			if got := errors.Is(err, errNoNotice); got != tt.wantNoNote {
				t.Errorf("awaitReady: %v; errors.Is(errNoNotice) = %v, want %v", err, got, tt.wantNoNote)
			}
		})
	}
}

// TestNilNotifier: a supervisor nobody started writes nowhere.
func TestNilNotifier(t *testing.T) {
	var n *notifier
	if _, err := fmt.Fprintf(n, "line\n"); err != nil {
		t.Error(err)
	}
	if err := n.ready(); err != nil {
		t.Error(err)
	}
	n.fail(errors.New("x"))
	if err := n.Close(); err != nil {
		t.Error(err)
	}
}
