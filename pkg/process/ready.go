package process

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Defaults of the readiness checks.
const (
	// DefaultReadyInterval is used by WaitReady when interval <= 0.
	DefaultReadyInterval = 500 * time.Millisecond
	// ProbeTimeout bounds one attempt of HTTPGet, HTTPCheck and TCP,
	// unless the attempt's context says otherwise (WithAttemptTimeout).
	ProbeTimeout = 2 * time.Second
	// TailLines is how many log lines WaitReady errors show.
	TailLines = 20
	// bodyExcerpt is how many bytes of an unexpected HTTP response body
	// HTTPGet puts in its error.
	bodyExcerpt = 200
)

// Probe checks once whether a component is ready: nil means ready. It must
// return when ctx ends.
type Probe func(ctx context.Context) error

// WaitReady calls probe, first at once and then every interval (<= 0 means
// DefaultReadyInterval), until it returns nil, and then returns nil.
//
// If the process exits first, WaitReady returns at once (without waiting for
// the next attempt) with an error wrapping ErrExited and, for a started
// process, the *exec.ExitError; it shows the exit status and the last 20
// lines of the log file. If ctx ends first, the error wraps ctx.Err() and the
// last probe error, and shows the log tail too.
func (p *Process) WaitReady(ctx context.Context, probe Probe, interval time.Duration) error {
	if interval <= 0 {
		interval = DefaultReadyInterval
	}
	begin := time.Now()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.done:
			cancel() // abort the attempt in flight and the wait for the next one
		case <-pctx.Done():
		}
	}()

	var lastErr error
	err := wait.PollUntilContextCancel(pctx, interval, true, func(ctx context.Context) (bool, error) {
		if p.exited() {
			return false, ErrExited
		}
		if err := probe(ctx); err != nil {
			lastErr = err
			return false, nil
		}
		return true, nil
	})
	if err == nil {
		return nil
	}

	who := fmt.Sprintf("%s (pid %d)", p.cmd.Name, p.pid)
	if p.exited() {
		tail := p.logTail()
		if p.exitErr != nil {
			return fmt.Errorf("%s exited before it was ready: %w: %w%s", who, ErrExited, p.exitErr, tail)
		}
		return fmt.Errorf("%s exited before it was ready: %w: %s%s", who, ErrExited, p.status(), tail)
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	if lastErr == nil {
		lastErr = errors.New("no probe completed")
	}
	return fmt.Errorf("%s not ready after %s: %w; last probe error: %w%s",
		who, time.Since(begin).Round(time.Millisecond), err, lastErr, p.logTail())
}

// logTail formats the last TailLines lines of the log file for an error message.
func (p *Process) logTail() string {
	lines, err := Tail(p.cmd.LogFile, TailLines)
	if err != nil {
		return fmt.Sprintf("\n(no log: %v)", err)
	}
	if len(lines) == 0 {
		return fmt.Sprintf("\n(%s is empty)", p.cmd.LogFile)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nlast %d lines of %s:", len(lines), p.cmd.LogFile)
	for _, l := range lines {
		b.WriteString("\n    ")
		b.WriteString(l)
	}
	return b.String()
}

// HTTPGet returns a Probe that GETs url and expects a 2xx status (see
// HTTPCheck). The error includes the status and the first 200 bytes of
// the response body.
func HTTPGet(url string, tlsConfig *tls.Config) Probe {
	return HTTPCheck(url, tlsConfig, func(code int, body []byte) error {
		if code >= 200 && code < 300 {
			return nil
		}
		if len(body) > bodyExcerpt {
			body = body[:bodyExcerpt]
		}
		return fmt.Errorf("GET %s: %d %s: %s", url, code, http.StatusText(code), strings.TrimSpace(string(body)))
	})
}

// httpCheckBody is how much of a response body HTTPCheck hands its check,
// and how much more it drains so the connection can be reused: 64 KiB.
const httpCheckBody = 64 << 10

// HTTPCheck returns a Probe that GETs url and passes when check, given the
// status code and the first httpCheckBody bytes of the body, returns nil; its error is
// the probe's. tlsConfig (may be nil; it is cloned) configures https;
// proxies from the environment are not used. Each attempt is bounded by
// ProbeTimeout. Attempts reuse an idle connection (a component probed
// every 50 ms for seconds would otherwise pay a TLS handshake, on both
// sides, at every attempt); one to a process that is gone fails, and the
// next attempt dials anew.
//
// A liveness check gives an attempt longer (WithAttemptTimeout): a busy
// process that answers late is not a hung one.
func HTTPCheck(url string, tlsConfig *tls.Config, check func(code int, body []byte) error) Probe {
	client := &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		TLSClientConfig:     tlsConfig.Clone(),
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     30 * time.Second,
	}}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, attemptTimeout(ctx))
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		// What could be read: a body cut short fails a check that reads
		// it, not one that needs the status alone.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, httpCheckBody))
		// Drained, the connection goes back to the pool.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, httpCheckBody))
		return check(resp.StatusCode, body)
	}
}

// TCP returns a Probe that succeeds when a TCP connection to addr
// ("host:port") can be opened; each attempt is bounded by ProbeTimeout
// or the context's WithAttemptTimeout.
func TCP(addr string) Probe {
	return func(ctx context.Context) error {
		d := net.Dialer{Timeout: attemptTimeout(ctx)}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return conn.Close()
	}
}

// attemptTimeoutKey is the context key of WithAttemptTimeout.
type attemptTimeoutKey struct{}

// WithAttemptTimeout returns ctx with d as the bound of each probe
// attempt (HTTPGet, HTTPCheck, TCP) made with it, in place of
// ProbeTimeout.
func WithAttemptTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, attemptTimeoutKey{}, d)
}

// attemptTimeout is the bound of one probe attempt made with ctx:
// WithAttemptTimeout's, else ProbeTimeout.
func attemptTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(attemptTimeoutKey{}).(time.Duration); ok && d > 0 {
		return d
	}
	return ProbeTimeout
}
