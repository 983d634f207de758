package cluster

import (
	"context"
	"sync"

	"github.com/kubernix/kubernix/pkg/imagefolder"
	"github.com/kubernix/kubernix/pkg/node"
)

// imagesFolder is the cluster's side of <state>/images (pkg/imagefolder):
// every node's containerd syncs from it when it starts or restarts, before
// the node's kubelet runs, and the supervisor watches it from Up to Down.
type imagesFolder struct {
	mu      sync.Mutex
	folder  *imagefolder.Folder // made on first use
	started bool                // a Folder runs once
	cancel  context.CancelFunc
	done    chan struct{}
}

// imageFolder returns the cluster's images folder, made on first use.
func (c *Cluster) imageFolder() (*imagefolder.Folder, error) {
	c.images.mu.Lock()
	defer c.images.mu.Unlock()
	if c.images.folder != nil {
		return c.images.folder, nil
	}
	var nodes []imagefolder.Node
	for _, nd := range c.Plan.Nodes {
		t := c.containerdTarget(nd)
		nodes = append(nodes, imagefolder.Node{Name: nd.Name, Socket: t.Socket, Root: t.Root})
	}
	f, err := imagefolder.New(imagefolder.Options{
		Dir: c.Plan.Paths.Images(), RecordFile: c.Plan.Paths.ImagesRecord(), Nodes: nodes, Log: c.Log,
		Runtime: imagefolder.Containerd{Importer: c.importer},
	})
	if err != nil {
		return nil, err
	}
	c.images.folder = f
	return f, nil
}

// syncImagesFolder imports into nd's containerd what of the images folder
// it lacks, synchronously: a containerd hook, so the node's kubelet starts
// (and the node reports Ready) with the folder's images in place. A file
// that fails is logged and left to the watcher's retries: a bad file in the
// folder does not keep a node from starting. Only a cancelled ctx is an
// error.
func (c *Cluster) syncImagesFolder(ctx context.Context, nd *node.Node) error {
	f, err := c.imageFolder()
	if err != nil {
		c.Log.Warn("images folder unusable; its images are not imported", "dir", c.Plan.Paths.Images(), "err", err)
		return nil
	}
	if err := f.SyncNode(ctx, nd.Name); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.Log.Warn("images folder: not every file was imported; retrying in the background", "node", nd.Name, "err", err)
	}
	return nil
}

// startImageWatcher starts watching the images folder until
// stopImageWatcher: files dropped in, changed or removed while the cluster
// runs are imported into (or released on) every node.
func (c *Cluster) startImageWatcher(ctx context.Context) {
	f, err := c.imageFolder()
	if err != nil {
		c.Log.Warn("images folder unusable; not watching it", "dir", c.Plan.Paths.Images(), "err", err)
		return
	}
	c.images.mu.Lock()
	defer c.images.mu.Unlock()
	if c.images.started {
		return
	}
	c.images.started = true
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	c.images.cancel, c.images.done = cancel, done
	go func() {
		defer close(done)
		f.Run(wctx)
	}()
}

// stopImageWatcher stops the watcher and waits for it; an import in
// progress is cancelled (leaving no partial image). A folder made by the
// nodes' syncs but never watched (a failed up) is closed. Idempotent.
func (c *Cluster) stopImageWatcher() {
	c.images.mu.Lock()
	cancel, done, started, f := c.images.cancel, c.images.done, c.images.started, c.images.folder
	c.images.cancel, c.images.started = nil, true
	c.images.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
		return
	}
	if !started && f != nil {
		f.Close()
	}
}
