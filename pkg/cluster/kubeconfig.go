package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubernix/kubernix/pkg/kubeconfig"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/state"
)

// mergeUserKubeconfig merges the cluster's admin context into the user's
// kubeconfig (userKubeconfigTarget), recording the file first. The cluster
// is Ready by now and the kubeconfig is the user's: a file that cannot be
// merged (malformed, locked, read-only) must not take the cluster down, so
// a failure is returned as a warning for the user (what failed, and how to
// reach the cluster without the context), "" on success.
func (c *Cluster) mergeUserKubeconfig() (warning string) {
	p := c.Plan
	target, err := c.userKubeconfigTarget()
	if err == nil {
		err = state.WriteJSON(state.UserKubeconfigFile(p.Paths), state.UserKubeconfig{Path: target.Path})
	}
	if err == nil {
		if err = kubeconfig.Merge(target, state.ClientKubeconfig(p.Paths), p.Cfg.ContextName(), c.Log); err != nil {
			// Nothing was merged: down has nothing to remove.
			err = errors.Join(err, state.RemoveIfExists(state.UserKubeconfigFile(p.Paths)))
		}
	}
	if err == nil {
		return ""
	}
	admin := state.ClientKubeconfig(p.Paths)
	return fmt.Sprintf(`WARNING: the cluster is up, but its context %s is not in your kubeconfig %s: %v
  kubectl reaches the cluster with the admin kubeconfig %s:
    KUBECONFIG=%s kubectl get nodes
  or, for a shell:
    eval "$(kubernix env --name %s --state-dir %s)"
`, p.Cfg.ContextName(), orUnknown(target.Path), err, admin, admin, p.Cfg.Name, p.Paths.State)
}

// userKubeconfigTarget is where up merges the context:
// Options.KubeconfigPath if set, else the config's Kubeconfig (--kubeconfig)
// if set, owned like the invoking user's kubeconfig when created (the sudo
// user's, see kubeconfig.UserTarget), else the invoking user's kubeconfig.
// A rootless cluster's supervisor is root only in its user namespace, where
// sudo's variables do not apply: it writes the kubeconfig of the user it
// runs as.
func (c *Cluster) userKubeconfigTarget() (kubeconfig.Target, error) {
	switch {
	case c.opts.KubeconfigPath != "":
		return kubeconfig.Target{Path: c.opts.KubeconfigPath}, nil
	case c.Plan.Cfg.Kubeconfig != "":
		t := kubeconfig.Target{Path: c.Plan.Cfg.Kubeconfig}
		if user, err := kubeconfig.UserTarget(); err == nil && !c.Plan.Rootless {
			t.Owner = user.Owner // else the process's
		}
		return t, nil
	case c.Plan.Rootless:
		return kubeconfig.ProcessTarget()
	}
	return kubeconfig.UserTarget()
}

// removeUserKubeconfig removes the cluster's context from the kubeconfig
// recorded by up, and then the record. Without a record, up merged
// nothing. A kubeconfig that cannot be changed is the user's: Cleanup goes
// on, the failure is logged with the way to remove the context by hand,
// and the record is kept for the next down.
func removeUserKubeconfig(pl *plan.Plan, log *slog.Logger) error {
	var rec state.UserKubeconfig
	b, err := os.ReadFile(state.UserKubeconfigFile(pl.Paths))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("read %s: %w", state.UserKubeconfigFile(pl.Paths), err)
	}
	if err := kubeconfig.Remove(rec.Path, pl.Cfg.ContextName(), log); err != nil {
		log.Warn("could not remove the cluster's context from the kubeconfig; `kubectl config delete-context` and "+
			"`kubectl config delete-cluster` remove it", "context", pl.Cfg.ContextName(), "file", rec.Path, "err", err)
		return nil
	}
	return state.RemoveIfExists(state.UserKubeconfigFile(pl.Paths))
}

// StandaloneKubeconfig is the cluster's admin kubeconfig as `kubernix
// kubeconfig` prints it: one cluster, user and context named
// Cfg.ContextName(), current-context set, the CA and the admin
// certificate and key of the cluster's PKI embedded (kubeconfig.New).
// Its server is the one a client on the host uses: rootlesskit's port
// forward on the host loopback (RootlessState.HostAPIServer) for a
// rootless cluster, else APIServerURL; with internal, APIServerURL, as
// reached from the nodes and pods. The error is kubeconfig.New's, e.g.
// when the PKI was never made.
func StandaloneKubeconfig(p *plan.Plan, internal bool) (*clientcmdapi.Config, error) {
	server := p.APIServerURL()
	if st, ok := state.ReadRootless(p.Paths); ok && !internal {
		server = "https://" + st.HostAPIServer.String()
	}
	b := pki.Files(p.PKISpec())
	return kubeconfig.New(p.Cfg.ContextName(), server, b.CA.Cert, b.Admin)
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}
