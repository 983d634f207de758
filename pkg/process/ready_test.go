package process

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitReadyHTTP(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()

	p := start(t, newCommand(t, "kube-apiserver", sleepPath(t), "1000"))
	if err := p.WaitReady(testCtx(t), HTTPGet(srv.URL+"/readyz", nil), 10*time.Millisecond); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("probe ran %d times, want 3 (two 503s, then 200)", n)
	}
}

func TestWaitReadyExited(t *testing.T) {
	p := start(t, shCommand(t, "etcd", `i=1; while [ $i -le 30 ]; do echo line$i; i=$((i+1)); done; exit 3`))
	never := func(context.Context) error { return errors.New("not listening") }

	// An interval far beyond the test's patience: only the exit can end the wait.
	err := p.WaitReady(testCtx(t), never, time.Hour)
	if !errors.Is(err, ErrExited) {
		t.Fatalf("WaitReady = %v, want ErrExited", err)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("WaitReady = %v, want it to wrap the *exec.ExitError of exit status 3", err)
	}
	msg := err.Error()
	// 20 lines: line12..line30 and the supervisor's exit line.
	for _, want := range []string{"etcd (pid ", "exit status 3", "last 20 lines of ", "\n    line12\n", "\n    line30\n", "--- kubernix: etcd exited (exit status 3)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "line11") {
		t.Errorf("error shows more than 20 lines:\n%s", msg)
	}
}

func TestWaitReadyTimeout(t *testing.T) {
	p := start(t, shCommand(t, "kubelet", `echo starting up; exec sleep 1000`))
	waitLog(t, p, "starting up")
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	probeErr := errors.New("probe says no")

	err := p.WaitReady(ctx, func(context.Context) error { return probeErr }, 20*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, probeErr) {
		t.Fatalf("WaitReady = %v, want it to wrap context.DeadlineExceeded and the probe error", err)
	}
	if errors.Is(err, ErrExited) {
		t.Errorf("WaitReady = %v, must not wrap ErrExited", err)
	}
	for _, want := range []string{"not ready after", "last probe error: probe says no", "--- kubernix: starting ", "\n    starting up"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%s", want, err)
		}
	}
}

func TestHTTPGet(t *testing.T) {
	body := strings.Repeat("a", 200) + strings.Repeat("b", 100)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, "ok")
		case "/nocontent":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, body)
		}
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	secure := httptest.NewUnstartedServer(handler)
	secure.Config.ErrorLog = log.New(io.Discard, "", 0) // the unknown-CA case fails the handshake on purpose
	secure.StartTLS()
	defer secure.Close()
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	gone := httptest.NewServer(handler)
	gone.Close()

	tests := []struct {
		name    string
		url     string
		tls     *tls.Config
		wantErr []string // substrings; nil means success
	}{
		{"200", plain.URL + "/ok", nil, nil},
		{"204", plain.URL + "/nocontent", nil, nil},
		{"500 with body excerpt", plain.URL + "/fail", nil, []string{"500 Internal Server Error", strings.Repeat("a", 200)}},
		{"https", secure.URL + "/ok", &tls.Config{RootCAs: roots}, nil},
		{"https, unknown CA", secure.URL + "/ok", nil, []string{"certificate"}},
		{"connection refused", gone.URL + "/ok", nil, []string{"refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := HTTPGet(tt.url, tt.tls)(testCtx(t))
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("probe = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("probe = nil, want an error")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q: %v", want, err)
				}
			}
			if strings.Contains(err.Error(), "ab") {
				t.Errorf("error has more than 200 bytes of body: %v", err)
			}
		})
	}
}

func TestTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()

	if err := TCP(ln.Addr().String())(testCtx(t)); err != nil {
		t.Errorf("TCP(listening) = %v, want nil", err)
	}
	if err := TCP(closed.Addr().String())(testCtx(t)); err == nil {
		t.Error("TCP(closed port) = nil, want an error")
	}
}

// TestHTTPGetReusesConnection checks that repeated attempts share one
// connection (no TLS handshake per attempt), and that a probe whose
// server went away dials the new one.
func TestHTTPGetReusesConnection(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	tlsConfig := &tls.Config{RootCAs: x509.NewCertPool()}
	tlsConfig.RootCAs.AddCert(srv.Certificate())
	probe := HTTPGet(srv.URL+"/healthz", tlsConfig)
	for i := range 5 {
		if err := probe(testCtx(t)); err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("5 attempts opened %d connections, want 1", n)
	}
	srv.CloseClientConnections()
	var err error
	for range 2 { // at most one attempt may see the closed connection
		if err = probe(testCtx(t)); err == nil {
			break
		}
	}
	if err != nil {
		t.Errorf("after the server closed the connection: %v", err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("connections = %d, want 2 (one new after the close)", n)
	}
}

// TestHTTPCheckAttemptTimeout: an attempt is bounded by ProbeTimeout,
// unless its context gives it longer (WithAttemptTimeout, as liveness
// checks do): a server that answers after 2.5 s fails the first, passes
// the second.
func TestHTTPCheckAttemptTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(ProbeTimeout + 500*time.Millisecond):
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	probe := HTTPGet(srv.URL, nil)
	if err := probe(t.Context()); err == nil {
		t.Errorf("a %s answer passed an attempt bounded by ProbeTimeout (%s)", ProbeTimeout+500*time.Millisecond, ProbeTimeout)
	}
	if err := probe(WithAttemptTimeout(t.Context(), 10*time.Second)); err != nil {
		t.Errorf("an attempt given 10 s failed: %v", err)
	}
}
