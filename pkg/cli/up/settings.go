package up

import (
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
)

// upConfig is up's config: with Env.UseClusterSettings, a cluster that
// ran before starts from the settings its last up was given, which it
// says on the error stream.
func upConfig(env *common.Env) (config.Config, error) {
	if asked := env.UseClusterSettings(); asked != "" {
		common.Fprintf(env.Streams.Err, "starting from the settings of the cluster's last up (%s)\n", asked)
	}
	return env.Config()
}

// explicit are the toml keys of the settings one of up's sources set
// (config.LoadExplicit); none, and false, when the sources cannot be read
// again.
func explicit(env *common.Env) ([]string, bool) {
	_, keys, err := config.LoadExplicit(env.Flags, env.Environ)
	return keys, err == nil
}

// chosenRanges are the address ranges of cfg (the prepared config) that
// preflight.Prepare chose rather than the sources gave, toml key
// (config.RangeKeys) to value: a free range instead of a taken default,
// or the ranges the cluster recorded; a range derived from the chosen
// --cidr is not listed. The supervisor up starts is given
// them as flags, and the cluster's AskedConfigFile records them as set,
// so that its next up keeps them.
func chosenRanges(env *common.Env, cfg config.Config) map[string]string {
	loaded, err := config.Load(env.Flags, env.Environ)
	if err != nil {
		return nil
	}
	given, prepared := loaded.Ranges(), cfg.Ranges()
	out := map[string]string{}
	if whole, err := netip.ParsePrefix(cfg.CIDR); err == nil && cfg.CIDR != loaded.CIDR {
		// The others, if derived from the chosen --cidr, follow it.
		given = loaded.WithCIDR(whole).Ranges()
		out["cidr"] = cfg.CIDR
	}
	for _, key := range config.RangeKeys {
		if prepared[key] != given[key] {
			out[key] = prepared[key]
		}
	}
	return out
}

// rangeFlags is ranges (chosenRanges) as flag name to value.
func rangeFlags(ranges map[string]string) map[string]string {
	out := make(map[string]string, len(ranges))
	for key, v := range ranges {
		out[strings.ReplaceAll(key, "_", "-")] = v
	}
	return out
}

// asked renders the settings this up was given, for the cluster's
// AskedConfigFile: cfg, with what no source set explicitly commented out
// (the ranges up chose count as set); nil (nothing written) when the
// sources cannot be read again.
func asked(env *common.Env, cfg config.Config) []byte {
	keys, ok := explicit(env)
	if !ok {
		return nil
	}
	for _, key := range slices.Sorted(maps.Keys(chosenRanges(env, cfg))) {
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	b, err := config.MarshalExplicit(cfg, keys)
	if err != nil {
		return nil
	}
	return b
}
