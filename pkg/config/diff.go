package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Unset is how a Change shows a setting one side does not have.
const Unset = "(unset)"

// Change is a setting whose value differs between two configs.
type Change struct {
	// Key is the setting's key as the config file spells it, dotted into
	// its tables: cidr, feature_gates.Foo, components.kube-apiserver.args,
	// nodes[1].labels.tier (node 1 counted from 0), nodes[0].mounts[0].host_path.
	// The key nodes is the node count.
	Key string
	// Old and New are the values as TOML writes them (3, true,
	// '10.10.0.0/16', ['coredns']), Unset when that side has none.
	Old, New string
}

// String renders c as one line: "nodes: 2 → 3".
func (c Change) String() string { return fmt.Sprintf("%s: %s → %s", c.Key, c.Old, c.New) }

// TopKey is the top-level key of c.Key: nodes for nodes[1].labels.tier.
func (c Change) TopKey() string {
	return c.Key[:strings.IndexAny(c.Key+".", ".[")]
}

// Diff lists the settings whose values differ between old and new, key by
// key through nested tables, in the order of Keys (then by key): the
// settings go-toml writes for each (as Marshal does), the node count as
// nodes, and each node's [[nodes]] settings as nodes[i].<key>, up to the
// larger node count (a node added or removed shows its own settings too).
// An empty table or map reads as unset. Errors are go-toml's, which do
// not happen for a Config.
func Diff(old, new Config) ([]Change, error) {
	before, err := flatSettings(old)
	if err != nil {
		return nil, err
	}
	after, err := flatSettings(new)
	if err != nil {
		return nil, err
	}
	keys := slices.Concat(slices.Collect(maps.Keys(before)), slices.Collect(maps.Keys(after)))
	slices.Sort(keys)
	var changes []Change
	for _, key := range slices.Compact(keys) {
		o, n := renderSetting(before, key), renderSetting(after, key)
		if o != n {
			changes = append(changes, Change{Key: key, Old: o, New: n})
		}
	}
	order := Keys()
	slices.SortStableFunc(changes, func(a, b Change) int {
		return slices.Index(order, a.TopKey()) - slices.Index(order, b.TopKey())
	})
	return changes, nil
}

// flatSettings maps each dotted key of c's settings to its value as
// go-toml decodes it.
func flatSettings(c Config) (map[string]any, error) {
	out := map[string]any{}
	nodes := c
	c.NodeSpecs = nil // nodes is the count here; each node's settings below
	if err := flattenTOML("", c, out); err != nil {
		return nil, err
	}
	for i := range max(c.Nodes, len(nodes.NodeSpecs)) {
		if err := flattenTOML(fmt.Sprintf("nodes[%d]", i), nodes.NodeSpec(i), out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// flattenTOML encodes v with go-toml and adds its settings to out, keyed
// under prefix.
func flattenTOML(prefix string, v any, out map[string]any) error {
	b, err := toml.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	var doc map[string]any
	if err := toml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("decode config: %w", err)
	}
	flatten(prefix, doc, out)
	return nil
}

// flatten adds v to out under key: a table's values under key.<their
// key>, an array of tables' under key[i], any other value (an array of
// values included) as it is.
func flatten(key string, v any, out map[string]any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			flatten(joinKey(key, k), e, out)
		}
		return
	case []any:
		if len(v) > 0 && !slices.ContainsFunc(v, func(e any) bool { _, table := e.(map[string]any); return !table }) {
			for i, e := range v {
				flatten(fmt.Sprintf("%s[%d]", key, i), e, out)
			}
			return
		}
	}
	out[key] = v
}

// bareKey matches a TOML bare key: it needs no quotes.
var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// joinKey appends key to the dotted key prefix, quoted as TOML quotes it
// when it is not bare (a label key such as example.com/tier).
func joinKey(prefix, key string) string {
	if !bareKey.MatchString(key) {
		key = toText(key)
	}
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// renderSetting is settings[key] as TOML writes it, or Unset.
func renderSetting(settings map[string]any, key string) string {
	v, ok := settings[key]
	if !ok {
		return Unset
	}
	return toText(v)
}
