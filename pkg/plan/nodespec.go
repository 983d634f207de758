package plan

import (
	"github.com/kubernix/kubernix/pkg/config"
	corev1 "k8s.io/api/core/v1"
)

// NodeTaints returns the taints of spec (validated, so each parses).
func NodeTaints(spec config.NodeSpec) []corev1.Taint {
	var out []corev1.Taint
	for _, s := range spec.Taints {
		if t, err := config.ParseTaint(s); err == nil {
			out = append(out, t)
		}
	}
	return out
}
