// Package portproxy publishes ports of a cluster's nodes on the host
// ([[nodes]] ports, config.PortMapping), as kind's extraPortMappings and
// k3d's ports do: a connection to the host's listen address and port
// reaches the node's port (a Service's NodePort, or a pod's hostPort on
// that node).
//
// As root it is a userland proxy, docker's (the proxy package of
// github.com/docker/go-connections, which docker-proxy grew from): it binds
// each host address itself, so a taken port is an error at once and the
// port is reserved while the cluster runs, forwards TCP connections and
// UDP datagrams (with a connection-tracking table per client), exposes
// nothing beyond the listen address, and needs no nftables rules or
// sysctls, so nothing is left when the process ends, however it ends.
// In a rootless cluster the host is outside rootlesskit's namespaces:
// rootlesskit's port driver publishes there instead (Rootless).
package portproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/docker/go-connections/proxy"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/server/healthz"
)

// Forward is one published port: Listen on the host, for Proto, reaches
// Target (a node's IP and port).
type Forward struct {
	// Proto is v1.ProtocolTCP or v1.ProtocolUDP.
	Proto v1.Protocol
	// Listen is the host address and port (config.PortMapping.Listen).
	Listen netip.AddrPort
	// Target is the node's IP (IPv4, or IPv6 in an IPv6 cluster) and its
	// port (config.PortMapping.NodePort).
	Target netip.AddrPort
}

// String renders f as ParseForward reads it, e.g.
// "tcp:127.0.0.1:8080=10.10.0.3:30080".
func (f Forward) String() string {
	return strings.ToLower(string(f.Proto)) + ":" + f.Listen.String() + "=" + f.Target.String()
}

// ParseForward reads a Forward from its String form. It errors on a
// protocol other than tcp or udp, a listen address that is not IPv4:port
// or a target that is neither IPv4:port nor [IPv6]:port (a node of an
// IPv6 cluster).
func ParseForward(s string) (Forward, error) {
	proto, rest, ok := strings.Cut(s, ":")
	listen, target, ok2 := strings.Cut(rest, "=")
	if !ok || !ok2 {
		return Forward{}, fmt.Errorf("%q: want PROTO:LISTEN_IP:PORT=TARGET_IP:PORT", s)
	}
	f := Forward{Proto: v1.Protocol(strings.ToUpper(proto))}
	if f.Proto != v1.ProtocolTCP && f.Proto != v1.ProtocolUDP {
		return Forward{}, fmt.Errorf("%q: protocol %q: must be tcp or udp", s, proto)
	}
	var err error
	if f.Listen, err = netip.ParseAddrPort(listen); err != nil || !f.Listen.Addr().Is4() || f.Listen.Port() == 0 {
		return Forward{}, fmt.Errorf("%q: %q is not IPv4:port", s, listen)
	}
	if f.Target, err = netip.ParseAddrPort(target); err != nil || f.Target.Addr().Is4In6() || f.Target.Port() == 0 {
		return Forward{}, fmt.Errorf("%q: %q is not IPv4:port or [IPv6]:port", s, target)
	}
	return f, nil
}

// Options configure Run.
type Options struct {
	// Forwards are the ports to publish.
	Forwards []Forward
	// Healthz is the address /healthz is served on over plain HTTP: 200
	// once every forward is published.
	Healthz netip.AddrPort
	// RootlesskitAPI, in a rootless cluster, is rootlesskit's API socket:
	// the forwards are then published by rootlesskit's port driver on the
	// host (Rootless) instead of by this process. "" as root.
	RootlesskitAPI string
}

// Run publishes opts.Forwards until ctx is done, serving /healthz at
// opts.Healthz, and then unpublishes them. It returns nil when ctx ends
// it; it errors, having published nothing, when a forward cannot be
// published (its host port is taken, say; the error names it) or the
// health address cannot be bound.
func Run(ctx context.Context, log *slog.Logger, opts Options) error {
	var stop func() error
	if opts.RootlesskitAPI != "" {
		r, err := NewRootless(opts.RootlesskitAPI)
		if err != nil {
			return err
		}
		if err := r.Publish(ctx, opts.Forwards); err != nil {
			return err
		}
		stop = func() error { return r.Unpublish(context.WithoutCancel(ctx), opts.Forwards) }
	} else {
		proxies, err := Listen(opts.Forwards, log)
		if err != nil {
			return err
		}
		for _, p := range proxies {
			go p.Run()
		}
		stop = func() error { closeAll(proxies); return nil }
	}
	ln, err := net.Listen("tcp", opts.Healthz.String())
	if err != nil {
		return errors.Join(fmt.Errorf("healthz: %w", err), stop())
	}
	mux := http.NewServeMux()
	healthz.InstallHandler(mux)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	for _, f := range opts.Forwards {
		log.Info("published", "listen", f.Listen, "proto", f.Proto, "target", f.Target)
	}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return errors.Join(fmt.Errorf("healthz: %w", err), stop())
	}
	return stop()
}

// Listen binds the host side of every forward, as docker's userland proxy
// does, and returns the proxies, ready to Run. It errors naming each
// forward whose address cannot be bound (e.g. address already in use),
// having closed the others.
func Listen(forwards []Forward, log *slog.Logger) ([]proxy.Proxy, error) {
	var out []proxy.Proxy
	var errs []error
	for _, f := range forwards {
		p, err := newProxy(f, slogPrintf{log})
		if err != nil {
			errs = append(errs, fmt.Errorf("publish %s/%s: %w", f.Listen, f.Proto, err))
			continue
		}
		out = append(out, p)
	}
	if len(errs) > 0 {
		closeAll(out)
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// newProxy returns the proxy of f, its host side bound.
func newProxy(f Forward, log slogPrintf) (proxy.Proxy, error) {
	if f.Proto == v1.ProtocolUDP {
		return proxy.NewUDPProxy(net.UDPAddrFromAddrPort(f.Listen), net.UDPAddrFromAddrPort(f.Target),
			func(p *proxy.UDPProxy) { p.Logger = log })
	}
	return proxy.NewTCPProxy(net.TCPAddrFromAddrPort(f.Listen), net.TCPAddrFromAddrPort(f.Target),
		func(p *proxy.TCPProxy) { p.Logger = log })
}

func closeAll(proxies []proxy.Proxy) {
	for _, p := range proxies {
		p.Close()
	}
}

// slogPrintf gives the proxies' Printf logger a slog.Logger: they log
// each backend that cannot be reached, and their end.
type slogPrintf struct{ log *slog.Logger }

func (s slogPrintf) Printf(format string, args ...any) {
	s.log.Info(strings.TrimSpace(fmt.Sprintf(format, args...)))
}
