// Package healthserve serves the plain-HTTP /healthz of kubernix's own
// supervised processes (the cloud controller, the NetworkPolicy agents),
// which the supervisor probes (components.Probe).
package healthserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"
)

// Start binds addr and serves /healthz there, with checks (200 when every
// check passes), in the background until ctx is done. It errors when addr
// cannot be bound; a later serving error is logged to log.
func Start(ctx context.Context, log *slog.Logger, addr netip.AddrPort, checks ...healthz.HealthChecker) error {
	ln, err := net.Listen("tcp", addr.String())
	if err != nil {
		return fmt.Errorf("healthz: %w", err)
	}
	mux := http.NewServeMux()
	healthz.InstallHandler(mux, checks...)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("healthz server", "err", err)
		}
	}()
	return nil
}
