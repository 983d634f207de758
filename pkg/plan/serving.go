package plan

import (
	"fmt"

	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/pki"
)

// addonServices are the Services of the configured addons that get a
// serving certificate from the cluster CA (addons.Serving), in
// --addons order.
func (p *Plan) addonServices() []pki.Service {
	var out []pki.Service
	for _, name := range p.Cfg.Addons {
		if a, ok := addons.Lookup(name); ok && a.Serving != nil {
			ns, svc := a.Serving.ServiceName()
			out = append(out, pki.Service{Name: svc, Namespace: ns, ClusterDomain: p.Cfg.ClusterDomain})
		}
	}
	return out
}

// servingSummary says, for the plan, what the manifest task of an addon
// with serving certificate s does besides applying it; "" for none.
func servingSummary(s *addons.Serving) string {
	if s == nil {
		return ""
	}
	ns, _ := s.ServiceName()
	out := fmt.Sprintf(", after Secret %s/%s (serving certificate for Service %s and the cluster CA, from the PKI)", ns, s.Secret, s.Service)
	if s.APIService != "" {
		out += ", with the cluster CA as caBundle of APIService " + s.APIService
	}
	return out
}

// crdsSummary says, for an addon's manifest task, which CRDs it applies
// and waits for first; "" for an addon without CRDs.
func crdsSummary(a addons.Addon) string {
	if a.CRDs == "" {
		return ""
	}
	return ", after the CustomResourceDefinitions of " + a.CRDs + " (embedded; each waited for until Established)"
}
