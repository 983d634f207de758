package up

import (
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

// asked renders the settings this up was given, for the cluster's
// AskedConfigFile: cfg, with what no source set explicitly commented out;
// nil (nothing written) when the sources cannot be read again.
func asked(env *common.Env, cfg config.Config) []byte {
	_, explicit, err := config.LoadExplicit(env.Flags, env.Environ)
	if err != nil {
		return nil
	}
	b, err := config.MarshalExplicit(cfg, explicit)
	if err != nil {
		return nil
	}
	return b
}
