package cluster

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/images"
	"github.com/kubernix/kubernix/pkg/state"
)

// afterReady is the addons Up deploys once the cluster is Ready
// (addons.Addon.AfterReady): registered by their boot tasks
// (DeployAfterReady), run one after the other by the supervisor in the
// background once Up's boot is over, and stopped by Down before the
// components they need.
type afterReady struct {
	mu      sync.Mutex
	pending []afterReadyAddon
	cancel  context.CancelFunc
	done    chan struct{}
}

// afterReadyAddon is one deployment DeployAfterReady registered.
type afterReadyAddon struct {
	task   components.Description
	images []string // pkg/images names of its built-in images
}

// afterReadyTimeout bounds one after-Ready addon's deployment, from the
// import of its images to its Deployment Available.
const afterReadyTimeout = 5 * time.Minute

func (l liveCluster) DeployAfterReady(d components.Description, images []string) {
	l.c.after.mu.Lock()
	defer l.c.after.mu.Unlock()
	l.c.after.pending = append(l.c.after.pending, afterReadyAddon{task: d, images: images})
}

// startAfterReady starts deploying the registered after-Ready addons in
// the background. Each records its progress as its Supervision
// (state.AfterReadyRunDir): starting while it deploys, running once its
// Deployment is Available, failed with the error otherwise; the
// supervisor's log says the same.
func (c *Cluster) startAfterReady(ctx context.Context) {
	c.after.mu.Lock()
	defer c.after.mu.Unlock()
	pending := c.after.pending
	c.after.pending = nil
	if len(pending) == 0 || c.after.cancel != nil {
		return
	}
	for _, a := range pending {
		c.recordAfterReady(a, components.Supervision{State: components.StateStarting})
	}
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	c.after.cancel, c.after.done = cancel, done
	go func() {
		defer close(done)
		for _, a := range pending {
			c.deployAfterReady(actx, a)
		}
	}()
}

// deployAfterReady deploys a, as DeployAfterReady describes, and records
// the outcome.
func (c *Cluster) deployAfterReady(ctx context.Context, a afterReadyAddon) {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, afterReadyTimeout)
	defer cancel()
	err := c.importNamed(ctx, a.images)
	if err == nil {
		err = c.applyAddon(ctx, a.task)
	}
	if err == nil {
		err = c.waitAvailable(ctx, a.task.Available)
	}
	if context.Cause(ctx) == context.Canceled {
		return // Down: the cluster is going, nothing to record
	}
	if err != nil {
		err = fmt.Errorf("deploy addon %s after the cluster was Ready: %w", a.task.Name, err)
		c.Log.Error("addon not deployed", "addon", a.task.Name, "err", err)
		c.recordAfterReady(a, components.Supervision{State: components.StateFailed, LastFailure: err.Error(), LastFailureAt: time.Now()})
		return
	}
	c.Log.Info("addon deployed after the cluster was Ready", "addon", a.task.Name, "elapsed", round(time.Since(begin)))
	c.recordAfterReady(a, components.Supervision{State: components.StateRunning})
}

func (c *Cluster) recordAfterReady(a afterReadyAddon, s components.Supervision) {
	if err := components.WriteSupervision(state.AfterReadyRunDir(c.Plan.Paths, a.task.Name), s); err != nil {
		c.Log.Warn("record an addon's deployment", "addon", a.task.Name, "err", err)
	}
}

// stopAfterReady cancels the after-Ready deployments in progress and
// waits for them. Idempotent.
func (c *Cluster) stopAfterReady() {
	c.after.mu.Lock()
	cancel, done := c.after.cancel, c.after.done
	c.after.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// importNamed imports the built-in images named (pkg/images names) into
// every node that is not given up on.
func (c *Cluster) importNamed(ctx context.Context, names []string) error {
	var files []string
	for _, name := range names {
		files = append(files, images.Builtin{Name: name}.FileName())
	}
	for _, nd := range c.Plan.Nodes {
		if _, err := os.Stat(state.FailedFile(c.Plan.Paths, nd.Name)); err == nil {
			continue // given up on (nodeFailed)
		}
		if err := c.importBuiltinFiles(ctx, nd, files); err != nil {
			return fmt.Errorf("node %s: %w", nd.Name, err)
		}
	}
	return nil
}
