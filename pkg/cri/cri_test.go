package cri

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtime "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime is a CRI runtime service whose Version returns err, or
// "fake v1" when err is nil.
type fakeRuntime struct {
	runtime.UnimplementedRuntimeServiceServer
	err error
}

func (f fakeRuntime) Version(context.Context, *runtime.VersionRequest) (*runtime.VersionResponse, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &runtime.VersionResponse{RuntimeName: "fake", RuntimeVersion: "v1"}, nil
}

// serveFake serves rt on a unix socket in a fresh directory and returns
// the socket's path.
func serveFake(t *testing.T, rt runtime.RuntimeServiceServer) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "cri.sock")
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtime.RegisterRuntimeServiceServer(srv, rt)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return socket
}

func TestPing(t *testing.T) {
	tests := []struct {
		name   string
		socket func(t *testing.T) string
		want   codes.Code
	}{
		{"serving", func(t *testing.T) string { return serveFake(t, fakeRuntime{}) }, codes.OK},
		{"unix URL", func(t *testing.T) string { return "unix://" + serveFake(t, fakeRuntime{}) }, codes.OK},
		{"CRI not ready", func(t *testing.T) string {
			return serveFake(t, fakeRuntime{err: status.Error(codes.Unavailable, "starting")})
		}, codes.Unavailable},
		{"no CRI service", func(t *testing.T) string { return serveFake(t, runtime.UnimplementedRuntimeServiceServer{}) }, codes.Unimplemented},
		{"nothing listening", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none.sock") }, codes.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Long enough for a busy machine; no case waits it out.
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			err := Ping(ctx, tt.socket(t))
			if got := status.Code(err); got != tt.want {
				t.Errorf("Ping = %v (code %v), want code %v", err, got, tt.want)
			}
			cri, err := DialReady(ctx, tt.socket(t))
			if (err == nil) != (tt.want == codes.OK) {
				t.Errorf("DialReady = %v, want code %v", err, tt.want)
			}
			if err == nil {
				if v, err := cri.Version(ctx); err != nil || v != "fake v1" {
					t.Errorf("Version after DialReady = %q, %v", v, err)
				}
				cri.Close()
			}
		})
	}
}
