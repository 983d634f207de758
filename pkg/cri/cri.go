package cri

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtime "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxCRIMessageSize is the largest CRI response accepted, in bytes. The
// kubelet uses the same limit; lists of many containers exceed gRPC's 4 MiB
// default.
const maxCRIMessageSize = 16 << 20

// Client is a client of a containerd's CRI runtime and image services. It is
// safe for concurrent use.
type Client struct {
	conn *grpc.ClientConn
	// Runtime is the CRI runtime service, for calls this type does not wrap.
	Runtime runtime.RuntimeServiceClient
	// Images is the CRI image service.
	Images runtime.ImageServiceClient
	// StopTimeout is the grace period RemoveAll gives each container between
	// its stop signal and SIGKILL, rounded down to whole seconds; 0 (the
	// default) kills at once.
	StopTimeout time.Duration
}

// Dial returns a CRI client for the containerd listening on socket, a path
// or a "unix://" URL. It does not wait for containerd: the connection is made
// on the first call, so use Version to wait until containerd is ready, and
// calls made while containerd is down fail with gRPC code Unavailable. Dial
// does no I/O (ctx is unused) and fails only on a malformed target.
func Dial(ctx context.Context, socket string) (*Client, error) {
	target := socket
	if !strings.HasPrefix(target, "unix://") {
		target = "unix://" + target
	}
	// gRPC waits 1 s, growing, before it redials a socket that is not
	// there yet; redial sooner, so Version sees a starting containerd
	// within 100 ms of it serving.
	backoffConfig := backoff.DefaultConfig
	backoffConfig.BaseDelay = 50 * time.Millisecond
	backoffConfig.MaxDelay = 100 * time.Millisecond
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoffConfig, MinConnectTimeout: 5 * time.Second}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxCRIMessageSize)),
	)
	if err != nil {
		return nil, fmt.Errorf("dial CRI %s: %w", socket, err)
	}
	return &Client{
		conn:    conn,
		Runtime: runtime.NewRuntimeServiceClient(conn),
		Images:  runtime.NewImageServiceClient(conn),
	}, nil
}

// Close closes the connection.
func (c *Client) Close() error {
	return c.conn.Close()
}

// Version returns the runtime's name and version, e.g. "containerd v2.4.2".
// It is the readiness probe of containerd: it fails (with gRPC code
// Unavailable) until the CRI plugin serves.
func (c *Client) Version(ctx context.Context) (string, error) {
	resp, err := c.Runtime.Version(ctx, &runtime.VersionRequest{})
	if err != nil {
		return "", fmt.Errorf("CRI version: %w", err)
	}
	return resp.RuntimeName + " " + resp.RuntimeVersion, nil
}

// DialReady dials the containerd listening on socket (see Dial) and calls
// Version once: it returns a client of a containerd whose CRI plugin
// serves, which the caller must Close, or the error of Dial or Version
// (gRPC code Unavailable while containerd is down or starting; how long
// that call waits is up to ctx).
func DialReady(ctx context.Context, socket string) (*Client, error) {
	cri, err := Dial(ctx, socket)
	if err != nil {
		return nil, err
	}
	if _, err := cri.Version(ctx); err != nil {
		cri.Close()
		return nil, err
	}
	return cri, nil
}

// Ping reports whether the containerd listening on socket serves CRI: nil
// when a Version call succeeds (see DialReady), else the error, which
// names the socket (gRPC code Unavailable until containerd serves). It is
// containerd's readiness probe; ctx bounds the call.
func Ping(ctx context.Context, socket string) error {
	cri, err := DialReady(ctx, socket)
	if err != nil {
		return fmt.Errorf("%s: %w", socket, err)
	}
	return cri.Close()
}

// RemoveAll stops and removes every container, then stops and removes every
// pod sandbox, so that no shim or container outlives containerd when it is
// stopped next. Containers are stopped in parallel, each given StopTimeout.
// Things already gone are not errors; every other failure is collected and
// returned joined, after all the rest have been tried.
func (c *Client) RemoveAll(ctx context.Context) error {
	ctrs, err := c.Runtime.ListContainers(ctx, &runtime.ListContainersRequest{})
	if err != nil {
		return fmt.Errorf("remove all: list containers: %w", err)
	}
	timeout := int64(c.StopTimeout / time.Second)
	errs := parallel(len(ctrs.Containers), func(i int) error {
		id := ctrs.Containers[i].Id
		if _, err := c.Runtime.StopContainer(ctx, &runtime.StopContainerRequest{ContainerId: id, Timeout: timeout}); ignoreNotFound(err) != nil {
			return fmt.Errorf("stop container %s: %w", id, err)
		}
		if _, err := c.Runtime.RemoveContainer(ctx, &runtime.RemoveContainerRequest{ContainerId: id}); ignoreNotFound(err) != nil {
			return fmt.Errorf("remove container %s: %w", id, err)
		}
		return nil
	})

	pods, err := c.Runtime.ListPodSandbox(ctx, &runtime.ListPodSandboxRequest{})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("remove all: list pod sandboxes: %w", err))...)
	}
	errs = append(errs, parallel(len(pods.Items), func(i int) error {
		id := pods.Items[i].Id
		if _, err := c.Runtime.StopPodSandbox(ctx, &runtime.StopPodSandboxRequest{PodSandboxId: id}); ignoreNotFound(err) != nil {
			return fmt.Errorf("stop pod sandbox %s: %w", id, err)
		}
		if _, err := c.Runtime.RemovePodSandbox(ctx, &runtime.RemovePodSandboxRequest{PodSandboxId: id}); ignoreNotFound(err) != nil {
			return fmt.Errorf("remove pod sandbox %s: %w", id, err)
		}
		return nil
	})...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove all: %w", err)
	}
	return nil
}

// parallel runs f(0) … f(n-1) concurrently and returns their errors.
func parallel(n int, f func(i int) error) []error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := range n {
		wg.Go(func() {
			if err := f(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errs
}

// ignoreNotFound returns nil for a gRPC NotFound error, else err.
func ignoreNotFound(err error) error {
	if status.Code(err) == codes.NotFound {
		return nil
	}
	return err
}
