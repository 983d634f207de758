package cluster

import (
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Annotations on a Node recording what kubernix set on it from the
// node's [[nodes]] entry (config.NodeSpec), so the next up removes what
// the config no longer has, and nothing that someone else set.
const (
	// AnnotationLabels holds the label keys kubernix set, comma-separated
	// and sorted.
	AnnotationLabels = "kubernix.io/labels"
	// AnnotationTaints holds the taints kubernix set as key:effect,
	// comma-separated and sorted.
	AnnotationTaints = "kubernix.io/taints"
)

// applyNodeSpec sets labels and taints on n (a taint is identified by its
// key and effect, as kubectl taint does), removes the labels and taints
// that its annotations (AnnotationLabels, AnnotationTaints) say an earlier
// up set and that are no longer asked for, and records the new ones
// there. Labels and taints kubernix did not set stay. It reports whether n
// changed.
func applyNodeSpec(n *corev1.Node, labels map[string]string, taints []corev1.Taint) bool {
	before := n.DeepCopy()
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	for _, key := range splitList(n.Annotations[AnnotationLabels]) {
		if _, keep := labels[key]; !keep {
			delete(n.Labels, key)
		}
	}
	maps.Copy(n.Labels, labels)
	want := map[string]corev1.Taint{}
	for _, t := range taints {
		want[taintID(t)] = t
	}
	previous := splitList(n.Annotations[AnnotationTaints])
	var kept []corev1.Taint
	for _, t := range n.Spec.Taints {
		id := taintID(t)
		if w, ok := want[id]; ok {
			kept = append(kept, w)
			delete(want, id)
			continue
		}
		if !slices.Contains(previous, id) {
			kept = append(kept, t)
		}
	}
	for _, t := range taints {
		if _, add := want[taintID(t)]; add {
			kept = append(kept, t)
		}
	}
	n.Spec.Taints = kept
	setList(n.Annotations, AnnotationLabels, slices.Collect(maps.Keys(labels)))
	var ids []string
	for _, t := range taints {
		ids = append(ids, taintID(t))
	}
	setList(n.Annotations, AnnotationTaints, ids)
	return !equalNodeSpec(before, n)
}

// taintID identifies a taint on a Node: key:effect.
func taintID(t corev1.Taint) string { return t.Key + ":" + string(t.Effect) }

// splitList splits a comma-separated annotation value; "" is none.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// setList records items, sorted and without repeats, as the annotation
// key, or removes the annotation when there are none.
func setList(annotations map[string]string, key string, items []string) {
	if len(items) == 0 {
		delete(annotations, key)
		return
	}
	sort.Strings(items)
	annotations[key] = strings.Join(slices.Compact(items), ",")
}

// equalNodeSpec reports whether a and b have the same labels, annotations
// and taints.
func equalNodeSpec(a, b *corev1.Node) bool {
	return maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		slices.EqualFunc(a.Spec.Taints, b.Spec.Taints, func(x, y corev1.Taint) bool { return x.MatchTaint(&y) && x.Value == y.Value })
}
