package preflight

import (
	"fmt"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/network"
)

// checkPortMappings checks, in the caller's network namespace, that the
// host address of every [[nodes]] port mapping is free for its protocol:
// nothing listens there (TCP) or is bound there (UDP), on that address or
// a wildcard one, except the processes recorded in cfg's state dir (a
// port proxy a killed supervisor left, which Up stops first). It returns
// one error per taken mapping, naming it (nodes[i].ports[j]), its address
// and who holds it.
func checkPortMappings(cfg config.Config) []error {
	return mappingProblems(cfg, recordedPIDs(cfg.Paths()))
}

func mappingProblems(cfg config.Config, ignore map[int]bool) []error {
	var errs []error
	for i, spec := range cfg.NodeSpecs {
		for j, m := range spec.Ports {
			at := fmt.Sprintf("nodes[%d].ports[%d]", i, j)
			listen, proto := m.Listen(), m.Proto()
			ls, err := network.Conflicts(string(proto), listen.Addr(), int(listen.Port()))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: check %s/%s: %w", at, listen, proto, err))
				continue
			}
			if l, who, taken := holder(ls, ignore); taken {
				errs = append(errs, fmt.Errorf("%s: %s/%s is in use on this host: %s holds %s; stop it, or choose another host_port",
					at, listen, proto, who, l))
			}
		}
	}
	return errs
}

// hasPortMappings reports whether a node of cfg publishes a port.
func hasPortMappings(cfg config.Config) bool {
	for _, spec := range cfg.NodeSpecs {
		if len(spec.Ports) > 0 {
			return true
		}
	}
	return false
}
