package plan_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/addons"
	ccomp "github.com/kubernix/kubernix/pkg/components/cloudcontroller"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
)

// TestCloudControllerGateways: the cloud controller runs the Gateway
// provisioner, from the ingress addon's traefik Deployment, exactly when
// the ingress addon is on; its manifest grants the controller's identity
// what the provisioner needs.
func TestCloudControllerGateways(t *testing.T) {
	args := func(cfg config.Config) string {
		ds, err := plan.Describe(plantest.Of(t, cfg))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.Name == ccomp.Name {
				return strings.Join(d.Command.Args, " ")
			}
		}
		t.Fatal("no cloud controller described")
		return ""
	}
	cfg := config.Default()
	cfg.Addons = slices.DeleteFunc(slices.Clone(cfg.Addons), func(a string) bool { return a == addons.Ingress })
	if got := args(cfg); strings.Contains(got, "--gateway-template") {
		t.Errorf("without the ingress addon: %s", got)
	}
	cfg.Addons = append(cfg.Addons, addons.Ingress)
	if got := args(cfg); !strings.Contains(got, "--gateway-template=kube-system/traefik") {
		t.Errorf("with the ingress addon: %s", got)
	}
	ds, err := plan.Describe(plantest.Of(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range ds {
		if d.Name == addons.Ingress {
			found = true
			if !strings.Contains(string(d.Manifest), "name: kubernix:cloud-controller") {
				t.Error("the ingress manifest does not bind the cloud controller's identity")
			}
		}
	}
	if !found {
		t.Error("no ingress manifest described")
	}
}
