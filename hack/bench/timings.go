package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/kubernix/kubernix/pkg/boot"
)

// Timings is the content of <state>/run/supervisor/kubernix/timings.json,
// which the supervisor writes after a successful up (the JSON form of
// pkg/cluster's Timings, also shown by `kubernix status --timings`). The
// bench reads the file rather than importing pkg/cluster: it measures the
// built binaries, and only needs their output format.
type Timings struct {
	// Prepare is the host preparation before the first component: network,
	// PKI, kubeconfigs.
	Prepare time.Duration `json:"prepare_ns"`
	// Phases maps a phase name to its wall time.
	Phases map[string]time.Duration `json:"phases_ns"`
	// Components are the per-component start and ready times.
	Components []boot.Timing `json:"components"`
	// Total is the supervisor's up, from after leftover cleanup to Ready.
	Total time.Duration `json:"total_ns"`
}

// timingsFile is where the supervisor of the cluster in l writes Timings.
func timingsFile(l Layout) string {
	return filepath.Join(l.paths().Run("supervisor", "kubernix"), "timings.json")
}

// readTimings reads the Timings of the cluster's last successful up; the
// error wraps fs.ErrNotExist when there are none.
func readTimings(l Layout) (Timings, error) {
	var t Timings
	b, err := os.ReadFile(timingsFile(l))
	if err != nil {
		return t, err
	}
	return t, json.Unmarshal(b, &t)
}
