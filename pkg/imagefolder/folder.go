package imagefolder

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kubernix/kubernix/pkg/components/containerd"
)

// Defaults of Options.
const (
	// DefaultSettle is how long a file must stay unchanged (size and
	// mtime) before it is imported.
	DefaultSettle = time.Second
	// DefaultResync is how often the folder is rescanned besides the
	// events, for changes the watch may have missed.
	DefaultResync = time.Minute
	// DefaultWorkers is how many files are imported at once. Each file
	// goes to all nodes in parallel; a node imports one file at a time.
	DefaultWorkers = 2
	// DefaultRetryBase and DefaultRetryMax bound the exponential backoff
	// of retries after a failed import: 1 s, doubling, at most 5 min.
	DefaultRetryBase = time.Second
	DefaultRetryMax  = 5 * time.Minute
	// DefaultPullTimeout bounds the pull of one image of a list on one node.
	DefaultPullTimeout = 5 * time.Minute
)

// Node is a node whose containerd gets the folder's images.
type Node struct {
	// Name is the node's name, its key in the record.
	Name string
	// Socket is the node's containerd socket.
	Socket string
	// Root is the node's containerd root directory, as this process sees
	// it (containerd.Target.Root); "" if unknown.
	Root string
}

// target is how an importer reaches nd's containerd.
func (nd Node) target() containerd.Target { return containerd.Target{Socket: nd.Socket, Root: nd.Root} }

// Options configure a Folder. Dir, RecordFile and Nodes are required; the
// rest have defaults.
type Options struct {
	// Dir is the images folder, <state>/images.
	Dir string
	// RecordFile is the JSON record of imports, in the state dir.
	RecordFile string
	// Nodes are the cluster's nodes.
	Nodes []Node
	// Runtime acts on the nodes; nil means Containerd with an Importer
	// of its own.
	Runtime Runtime
	// Log receives one line per import, removal and failure; nil discards.
	Log *slog.Logger
	// Settle, Resync, Workers, RetryBase, RetryMax and PullTimeout default
	// to the Default* constants when zero.
	Settle      time.Duration
	Resync      time.Duration
	Workers     int
	RetryBase   time.Duration
	RetryMax    time.Duration
	PullTimeout time.Duration
	// Clock drives the queue's delays and the settling; nil means the real
	// clock.
	Clock clock.WithTicker
}

// Folder keeps the nodes in step with the images folder: SyncNode when a
// node starts, Run while the cluster runs. Its methods are safe for
// concurrent use.
type Folder struct {
	dir, recordFile string
	nodes           []Node
	rt              Runtime
	log             *slog.Logger
	clock           clock.WithTicker
	settle, resync  time.Duration
	workers         int
	pullTimeout     time.Duration

	limiter workqueue.TypedRateLimiter[string]
	queue   workqueue.TypedRateLimitingInterface[string]

	// nodeLocks serialize the work on each node: an import, a release, and
	// the record check before them.
	nodeLocks map[string]*sync.Mutex

	mu       sync.Mutex // guards record and observed
	record   *Record
	observed map[string]observation
}

// observation is a file's state when the folder last looked at it.
type observation struct {
	state FileState
	at    time.Time
}

// New returns a Folder for opts, loading the record of earlier imports. An
// unreadable record is moved aside (logged) and starts empty: every file
// is then checked again, which costs time but loses nothing.
func New(opts Options) (*Folder, error) {
	if opts.Dir == "" || opts.RecordFile == "" {
		return nil, errors.New("images folder: Dir and RecordFile are required")
	}
	f := &Folder{
		dir: filepath.Clean(opts.Dir), recordFile: opts.RecordFile,
		nodes: slices.Clone(opts.Nodes), rt: opts.Runtime, log: opts.Log, clock: opts.Clock,
		settle: opts.Settle, resync: opts.Resync, workers: opts.Workers, pullTimeout: opts.PullTimeout,
		nodeLocks: map[string]*sync.Mutex{}, observed: map[string]observation{},
	}
	if f.rt == nil {
		f.rt = Containerd{Importer: &containerd.Importer{}}
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	if f.clock == nil {
		f.clock = clock.RealClock{}
	}
	f.settle = orDefault(f.settle, DefaultSettle)
	f.resync = orDefault(f.resync, DefaultResync)
	f.pullTimeout = orDefault(f.pullTimeout, DefaultPullTimeout)
	if f.workers <= 0 {
		f.workers = DefaultWorkers
	}
	for _, n := range f.nodes {
		if n.Name == "" || n.Socket == "" {
			return nil, fmt.Errorf("images folder: node %+v: name and socket are required", n)
		}
		f.nodeLocks[n.Name] = &sync.Mutex{}
	}
	f.limiter = workqueue.NewTypedItemExponentialFailureRateLimiter[string](
		orDefault(opts.RetryBase, DefaultRetryBase), orDefault(opts.RetryMax, DefaultRetryMax))
	f.queue = workqueue.NewTypedRateLimitingQueueWithConfig(f.limiter, workqueue.TypedRateLimitingQueueConfig[string]{
		Name: "", Clock: f.clock,
	})
	rec, err := LoadRecord(f.recordFile)
	if errors.Is(err, ErrCorruptRecord) {
		aside := f.recordFile + ".corrupt"
		f.log.Warn("images folder: record unreadable; moving it aside and checking every file again", "record", f.recordFile, "moved-to", aside, "err", err)
		if rerr := os.Rename(f.recordFile, aside); rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		rec, err = newRecord(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("images folder: %w", err)
	}
	f.record = rec
	return f, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Record returns a copy of the record of imports.
func (f *Folder) Record() *Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.record.clone()
}

// node returns the node named name.
func (f *Folder) node(name string) (Node, bool) {
	i := slices.IndexFunc(f.nodes, func(n Node) bool { return n.Name == name })
	if i < 0 {
		return Node{}, false
	}
	return f.nodes[i], true
}

// SyncNode imports into the node named name every file of the folder it
// lacks, synchronously: files whose version is not recorded for the node,
// or whose recorded images are gone from its containerd. A file still being
// written is waited for until it settles. Images of files no longer in the
// folder are released (unpinned). Use it when the node's containerd has
// (re)started, before its kubelet runs.
//
// Failures are per file: they are returned joined, each naming the file and
// the node, and the file is queued for retry by Run; the other files are
// still imported. An unreachable node is an error of its own.
func (f *Folder) SyncNode(ctx context.Context, name string) error {
	nd, ok := f.node(name)
	if !ok {
		return fmt.Errorf("images folder: unknown node %q", name)
	}
	names, err := scan(f.dir)
	if err != nil {
		return fmt.Errorf("images folder: %w", err)
	}
	have, err := f.rt.List(ctx, nd.Socket)
	if err != nil {
		return fmt.Errorf("images folder: node %s: %w", nd.Name, err)
	}
	present := map[string]bool{}
	for _, img := range have {
		present[img.Ref] = true
	}
	var errs []error
	for _, file := range names {
		if err := f.syncFile(ctx, nd, file, present); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			errs = append(errs, err)
			f.retryLater(file)
		}
	}
	// Files gone from the folder: recorded for the node, or named by an
	// image's source label.
	f.mu.Lock()
	gone := f.record.filesOf(nd.Name)
	f.mu.Unlock()
	for _, img := range have {
		if file, ok := strings.CutPrefix(img.Labels[containerd.LabelSource], SourcePrefix); ok && !slices.Contains(gone, file) {
			gone = append(gone, file)
		}
	}
	for _, file := range gone {
		if slices.Contains(names, file) {
			continue
		}
		if err := f.removeFrom(ctx, nd, file); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			errs = append(errs, err)
			f.retryLater(file)
		}
	}
	return errors.Join(errs...)
}

// syncFile imports file into nd if its recorded import is missing, of
// another version, or lacks an image that present (the node's images) does
// not hold.
func (f *Folder) syncFile(ctx context.Context, nd Node, file string, present map[string]bool) error {
	path := filepath.Join(f.dir, file)
	st, err := f.waitSettled(ctx, path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotFile) {
		return nil // gone meanwhile; Run's removal handles it
	}
	if err != nil {
		return err
	}
	f.mu.Lock()
	ni := f.record.get(file, nd.Name)
	complete := ni != nil && ni.FileState.Equal(st) &&
		!slices.ContainsFunc(ni.Images, func(img Image) bool { return !present[img.Ref] })
	f.mu.Unlock()
	if complete {
		return nil
	}
	refs, err := f.listRefs(file, path)
	if err != nil {
		return err
	}
	return f.importNode(ctx, nd, file, path, refs, st, true)
}

// waitSettled returns the state of the file at path once it has settled.
func (f *Folder) waitSettled(ctx context.Context, path string) (FileState, error) {
	var (
		prev observation
		seen bool
	)
	for {
		st, err := stat(path)
		if err != nil {
			return st, err
		}
		wait, obs := settled(st, prev, seen, f.clock.Now(), f.settle)
		if wait <= 0 {
			return st, nil
		}
		prev, seen = obs, true
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-f.clock.After(wait):
		}
	}
}

// settled decides whether a file in state cur can be imported now, given
// what was observed of it before (prev, if seen). It returns how long to
// wait before looking again (0: import now) and the observation to keep.
//
// A file is settled when its size and mtime have not changed for settle:
// observed unchanged for that long, or, at first sight, last modified that
// long ago (a file complete before the folder looked, such as one moved in
// or present at start). A file modified in the future (a skewed clock, an
// archive's timestamps) settles by observation alone.
func settled(cur FileState, prev observation, seen bool, now time.Time, settle time.Duration) (time.Duration, observation) {
	switch {
	case !seen:
		if age := now.Sub(cur.ModTime); age >= settle {
			return 0, observation{state: cur, at: now}
		}
		return settle, observation{state: cur, at: now}
	case !prev.state.Equal(cur):
		return settle, observation{state: cur, at: now}
	}
	if since := now.Sub(prev.at); since < settle {
		return settle - since, prev
	}
	return 0, prev
}

// listRefs returns the references of an image list file, nil for a tarball.
func (f *Folder) listRefs(file, path string) ([]string, error) {
	if KindOf(file) != List {
		return nil, nil
	}
	return readList(path)
}

// lockNode takes nd's import lock, which serializes the imports and
// removals on a node, and returns its unlock and what the record holds of
// file on nd then (nil for nothing).
func (f *Folder) lockNode(nd Node, file string) (unlock func(), recorded *NodeImport) {
	lock := f.nodeLocks[nd.Name]
	lock.Lock()
	f.mu.Lock()
	defer f.mu.Unlock()
	return lock.Unlock, f.record.get(file, nd.Name)
}

// importNode imports version st of file (at path; refs if it is a list)
// into nd, unless (without force) the record has that version there
// already. It pins and labels the images, records them, and releases the
// images the node's previous version of the file provided but this one
// does not.
func (f *Folder) importNode(ctx context.Context, nd Node, file, path string, refs []string, st FileState, force bool) error {
	unlock, prev := f.lockNode(nd, file)
	defer unlock()
	if !force && prev != nil && prev.FileState.Equal(st) {
		return nil // done meanwhile, e.g. by SyncNode
	}
	begin := f.clock.Now()
	labels := map[string]string{containerd.LabelPinned: containerd.PinnedValue, containerd.LabelSource: SourceLabel(file)}
	var imgs []Image
	switch KindOf(file) {
	case Tarball:
		got, err := f.rt.Import(ctx, nd.target(), path, containerd.ImportOptions{Labels: labels})
		if err != nil {
			return fmt.Errorf("node %s: %w", nd.Name, err)
		}
		for _, img := range got {
			imgs = append(imgs, Image{Ref: img.Ref, Digest: img.Digest})
		}
	case List:
		for _, ref := range refs {
			img, err := f.ensure(ctx, nd, ref, labels)
			if err != nil {
				return fmt.Errorf("node %s: image list %s: %w", nd.Name, path, err)
			}
			imgs = append(imgs, Image{Ref: img.Ref, Digest: img.Digest})
		}
	default:
		return fmt.Errorf("%s: not an image tarball or list", path)
	}
	slices.SortFunc(imgs, func(a, b Image) int { return strings.Compare(a.Ref, b.Ref) })
	if prev != nil {
		for _, old := range prev.Images {
			if !slices.ContainsFunc(imgs, func(i Image) bool { return i.Ref == old.Ref }) {
				if err := f.releaseRef(ctx, nd, file, old.Ref); err != nil {
					return err
				}
			}
		}
	}
	f.mu.Lock()
	ni := f.record.set(file, nd.Name, st, imgs, f.clock.Now())
	imports := ni.Imports
	err := f.record.save(f.recordFile)
	f.mu.Unlock()
	f.log.Info("images folder: imported", "file", file, "node", nd.Name, "images", describe(imgs),
		"imports", imports, "took", f.clock.Since(begin).Round(time.Millisecond))
	if err != nil {
		return fmt.Errorf("images folder: record: %w", err)
	}
	return nil
}

// ensure makes the image ref of a list present on nd, pulled only if it is
// not there yet (as imagePullPolicy IfNotPresent; k3s does the same), and
// labels it.
func (f *Folder) ensure(ctx context.Context, nd Node, ref string, labels map[string]string) (containerd.ImportedImage, error) {
	img, ok, err := lookup(ctx, f.rt, nd.Socket, ref)
	if err != nil {
		return img, err
	}
	if ok {
		if err := f.rt.SetLabels(ctx, nd.Socket, ref, labels); err != nil {
			return img, err
		}
		return img, nil
	}
	pctx, cancel := context.WithTimeout(ctx, f.pullTimeout)
	defer cancel()
	return f.rt.Pull(pctx, nd.Socket, ref, labels)
}

// describe lists images as "ref@digest", for logs.
func describe(imgs []Image) string {
	s := make([]string, len(imgs))
	for i, img := range imgs {
		s[i] = img.Ref + "@" + img.Digest
	}
	return strings.Join(s, ", ")
}

// removeFrom releases on nd the images file provided there and forgets
// the file's import into nd. The images are those recorded and those
// labelled with the file as source (an import whose record was never
// written, as when the supervisor was killed in between). When nothing is
// recorded for the node, a failure to list its images is not an error:
// SyncNode finds such leftovers by their label when the node starts.
func (f *Folder) removeFrom(ctx context.Context, nd Node, file string) error {
	unlock, ni := f.lockNode(nd, file)
	defer unlock()
	var refs []string
	if ni != nil {
		for _, img := range ni.Images {
			refs = append(refs, img.Ref)
		}
	}
	labelled, err := f.rt.List(ctx, nd.Socket, sourceFilter(file))
	if err != nil {
		if ni == nil {
			return nil
		}
		return fmt.Errorf("node %s: %w", nd.Name, err)
	}
	for _, img := range labelled {
		if !slices.Contains(refs, img.Ref) {
			refs = append(refs, img.Ref)
		}
	}
	if len(refs) == 0 && ni == nil {
		return nil
	}
	for _, ref := range refs {
		if err := f.releaseRef(ctx, nd, file, ref); err != nil {
			return err
		}
	}
	if ni != nil {
		f.mu.Lock()
		f.record.forget(file, nd.Name)
		err = f.record.save(f.recordFile)
		f.mu.Unlock()
	}
	f.log.Info("images folder: file removed; its images are released", "file", file, "node", nd.Name, "images", strings.Join(refs, ", "))
	return err
}

// sourceFilter is the containerd image filter for the images labelled as
// coming from file.
func sourceFilter(file string) string {
	return "labels." + strconv.Quote(containerd.LabelSource) + "==" + strconv.Quote(SourceLabel(file))
}

// releaseRef gives up file's claim on the image ref on nd; the caller holds
// nd's lock. An image that another file of the folder provides stays
// pinned and is labelled with that file (which is imported again if it
// provided other content under that name). An image whose source label
// names something else now (a later `kubernix image load`, another file)
// is left alone. Otherwise the image is unpinned and its source label
// removed; the image itself stays.
func (f *Folder) releaseRef(ctx context.Context, nd Node, file, ref string) error {
	cur, ok, err := lookup(ctx, f.rt, nd.Socket, ref)
	if err != nil {
		return fmt.Errorf("node %s: %w", nd.Name, err)
	}
	if !ok || cur.Labels[containerd.LabelSource] != SourceLabel(file) {
		return nil
	}
	f.mu.Lock()
	others := f.record.providers(nd.Name, ref, file)
	var otherDigest string
	if len(others) > 0 {
		for _, img := range f.record.get(others[0], nd.Name).Images {
			if img.Ref == ref {
				otherDigest = img.Digest
			}
		}
	}
	f.mu.Unlock()
	if len(others) > 0 {
		other := others[0]
		if otherDigest != cur.Digest {
			// The other file's content under this name was replaced by
			// ours: import it again.
			f.mu.Lock()
			f.record.invalidate(other, nd.Name)
			f.mu.Unlock()
			f.queue.Add(other)
		}
		err := f.rt.SetLabels(ctx, nd.Socket, ref, map[string]string{containerd.LabelSource: SourceLabel(other)})
		if err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("node %s: %w", nd.Name, err)
		}
		return nil
	}
	err = f.rt.SetLabels(ctx, nd.Socket, ref, map[string]string{containerd.LabelPinned: "", containerd.LabelSource: ""})
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("node %s: %w", nd.Name, err)
	}
	f.log.Info("images folder: unpinned", "ref", ref, "node", nd.Name, "file", file)
	return nil
}

// retryLater queues file for another attempt after the backoff.
func (f *Folder) retryLater(file string) {
	f.queue.AddAfter(file, f.limiter.When(file))
}

// process brings every node in step with file (a name in the folder) and
// returns how long to wait before looking again when it is still being
// written (0 when done), or the error of a failed import or release.
func (f *Folder) process(ctx context.Context, file string) (time.Duration, error) {
	path := filepath.Join(f.dir, file)
	st, err := stat(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotFile) || KindOf(file) == Ignored {
		f.forgetObserved(file)
		return 0, f.remove(ctx, file)
	}
	if err != nil {
		return 0, err
	}
	var stale []Node
	f.mu.Lock()
	for _, nd := range f.nodes {
		if !f.record.upToDate(file, nd.Name, st) {
			stale = append(stale, nd)
		}
	}
	f.mu.Unlock()
	if len(stale) == 0 {
		f.forgetObserved(file)
		return 0, nil
	}
	f.mu.Lock()
	prev, seen := f.observed[file]
	wait, obs := settled(st, prev, seen, f.clock.Now(), f.settle)
	f.observed[file] = obs
	f.mu.Unlock()
	if wait > 0 {
		return wait, nil
	}
	f.forgetObserved(file)
	refs, err := f.listRefs(file, path)
	if err != nil {
		return 0, err
	}
	return 0, errors.Join(parallel(stale, func(nd Node) error {
		return f.importNode(ctx, nd, file, path, refs, st, false)
	})...)
}

// remove releases, on every node, the images of a file no longer in the
// folder.
func (f *Folder) remove(ctx context.Context, file string) error {
	return errors.Join(parallel(f.nodes, func(nd Node) error { return f.removeFrom(ctx, nd, file) })...)
}

func (f *Folder) forgetObserved(file string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.observed, file)
}

// parallel runs fn for each node concurrently and returns the errors.
func parallel(nodes []Node, fn func(Node) error) []error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, nd := range nodes {
		wg.Go(func() { errs[i] = fn(nd) })
	}
	wg.Wait()
	return errs
}

// names returns the files in the folder and those recorded, sorted.
func (f *Folder) names() []string {
	set := map[string]bool{}
	found, err := scan(f.dir)
	if err != nil {
		f.log.Debug("images folder: scan", "dir", f.dir, "err", err)
	}
	for _, n := range found {
		set[n] = true
	}
	f.mu.Lock()
	for n := range f.record.Files {
		set[n] = true
	}
	f.mu.Unlock()
	return slices.Sorted(maps.Keys(set))
}
