package portproxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rootless-containers/rootlesskit/v2/pkg/port"

	"github.com/kubernix/kubernix/pkg/rootless"
)

// Rootless publishes forwards through rootlesskit's port driver (its REST
// API on <rootlesskit state dir>/api.sock): the driver binds the host
// address outside the namespaces and forwards into them, to the target.
// The forwards are rootlesskit's record, and end with rootlesskit at the
// latest. An ordinary user cannot bind ports below
// net.ipv4.ip_unprivileged_port_start (1024 by default) on the host.
type Rootless struct {
	ports port.Manager
}

// NewRootless returns the publisher of rootlesskit's API socket apiSocket.
// It errors when the socket is not a rootlesskit API.
func NewRootless(apiSocket string) (*Rootless, error) {
	ports, err := rootless.PortManager(apiSocket)
	if err != nil {
		return nil, err
	}
	return &Rootless{ports: ports}, nil
}

// spec is f as rootlesskit's port spec.
func spec(f Forward) port.Spec {
	return port.Spec{Proto: strings.ToLower(string(f.Proto)), ParentIP: f.Listen.Addr().String(),
		ParentPort: int(f.Listen.Port()), ChildIP: f.Target.Addr().String(), ChildPort: int(f.Target.Port())}
}

// Publish publishes forwards, first removing what an earlier publisher of
// the same host addresses left (a killed one). It errors naming each
// forward rootlesskit could not publish (its host port taken, say), having
// removed those it did publish.
func (r *Rootless) Publish(ctx context.Context, forwards []Forward) error {
	if err := r.Unpublish(ctx, forwards); err != nil {
		return err
	}
	var errs []error
	var done []Forward
	for _, f := range forwards {
		if _, err := r.ports.AddPort(ctx, spec(f)); err != nil {
			errs = append(errs, fmt.Errorf("publish %s/%s on the host: %w", f.Listen, f.Proto, err))
			continue
		}
		done = append(done, f)
	}
	if len(errs) > 0 {
		return errors.Join(append(errs, r.Unpublish(context.WithoutCancel(ctx), done))...)
	}
	return nil
}

// Unpublish removes every forward of rootlesskit on the host address of
// one of forwards; none is no error.
func (r *Rootless) Unpublish(ctx context.Context, forwards []Forward) error {
	have, err := r.ports.ListPorts(ctx)
	if err != nil {
		return fmt.Errorf("rootlesskit: list ports: %w", err)
	}
	var errs []error
	for _, st := range have {
		same := func(f Forward) bool {
			s := spec(f)
			return s.Proto == st.Spec.Proto && s.ParentIP == st.Spec.ParentIP && s.ParentPort == st.Spec.ParentPort
		}
		if slices.ContainsFunc(forwards, same) {
			if err := r.ports.RemovePort(ctx, st.ID); err != nil {
				errs = append(errs, fmt.Errorf("rootlesskit: remove port %d: %w", st.ID, err))
			}
		}
	}
	return errors.Join(errs...)
}
