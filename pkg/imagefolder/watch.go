package imagefolder

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Backoff of re-establishing a failed watch.
const (
	watchRetryMin = 250 * time.Millisecond
	watchRetryMax = 5 * time.Second
)

// Run watches the folder and keeps every node in step with it until ctx
// ends; then it stops the workers (an import in progress is cancelled,
// which leaves no partial image) and returns. It first queues every file in
// the folder or the record, so changes made while nothing watched are
// caught up. A Folder runs once.
func (f *Folder) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range f.workers {
		wg.Go(func() {
			for f.processNext(ctx) {
			}
		})
	}
	f.watch(ctx)
	f.queue.ShutDown()
	wg.Wait()
}

// Close stops a Folder that will not Run (Run stops it by itself when its
// context ends): retries that SyncNode queued are dropped. Idempotent.
func (f *Folder) Close() { f.queue.ShutDown() }

// processNext handles one key of the queue; false once the queue is shut
// down.
func (f *Folder) processNext(ctx context.Context) bool {
	file, shutdown := f.queue.Get()
	if shutdown {
		return false
	}
	defer f.queue.Done(file)
	wait, err := f.process(ctx, file)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		delay := f.limiter.When(file)
		f.log.Warn("images folder: import failed; will retry", "file", file, "attempt", f.limiter.NumRequeues(file),
			"retry-in", delay.Round(time.Millisecond), "err", err)
		f.queue.AddAfter(file, delay)
	case wait > 0:
		f.queue.AddAfter(file, wait)
	default:
		f.queue.Forget(file)
	}
	return true
}

// rescan queues every file in the folder or the record, except those
// waiting for a retry after a failure (their backoff stands).
func (f *Folder) rescan() {
	for _, file := range f.names() {
		if f.limiter.NumRequeues(file) == 0 {
			f.queue.Add(file)
		}
	}
}

// watch keeps a watch on the folder until ctx ends, re-establishing it
// with backoff whenever it fails or the folder goes away (it is not
// re-created: a user replacing it would race with us).
func (f *Folder) watch(ctx context.Context) {
	delay := watchRetryMin
	outage := false
	var scanned time.Time
	for ctx.Err() == nil {
		w, id, err := f.establish()
		if err != nil {
			if !outage {
				outage = true
				f.log.Warn("images folder: cannot watch; retrying, and rescanning every resync period meanwhile", "dir", f.dir, "resync", f.resync, "err", err)
			}
			// A removed folder removed its files; an unwatchable one (no
			// inotify instances left) is polled.
			if scanned.IsZero() || f.clock.Since(scanned) >= f.resync {
				f.rescan()
				scanned = f.clock.Now()
			}
			select {
			case <-ctx.Done():
			case <-f.clock.After(delay):
			}
			delay = min(2*delay, watchRetryMax)
			continue
		}
		if outage {
			f.log.Info("images folder: watching again", "dir", f.dir)
		}
		outage, delay, scanned = false, watchRetryMin, time.Time{}
		f.rescan()
		err = f.loop(ctx, w, id)
		_ = w.Close()
		if err != nil {
			f.log.Warn("images folder: watch failed; re-establishing it", "dir", f.dir, "err", err)
		}
	}
}

// dirID identifies a directory: a folder removed and created again, or
// mounted over, is another one.
type dirID struct{ dev, ino uint64 }

func identify(dir string) (dirID, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return dirID{}, err
	}
	if !fi.IsDir() {
		return dirID{}, fmt.Errorf("%s: not a directory", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return dirID{}, nil
	}
	return dirID{dev: uint64(st.Dev), ino: st.Ino}, nil
}

// establish starts a watch on the folder.
func (f *Folder) establish() (*fsnotify.Watcher, dirID, error) {
	id, err := identify(f.dir)
	if err != nil {
		return nil, id, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, id, err
	}
	if err := w.Add(f.dir); err != nil {
		_ = w.Close()
		return nil, id, err
	}
	// The folder may have been replaced between identify and Add.
	if now, err := identify(f.dir); err != nil || now != id {
		_ = w.Close()
		return nil, id, errors.Join(errors.New("folder replaced while setting up the watch"), err)
	}
	return w, id, nil
}

// loop turns the watch's events into queued keys until ctx ends (nil) or
// the watch fails (its error). It never waits for an import: a key is
// queued for when the file may have settled, and many events for one file
// collapse into that one key. Every Resync it rescans the folder and checks
// that the watched directory is still the folder.
func (f *Folder) loop(ctx context.Context, w *fsnotify.Watcher, id dirID) error {
	tick := f.clock.NewTicker(f.resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("watch closed")
			}
			if filepath.Clean(ev.Name) == f.dir {
				if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
					return fmt.Errorf("folder removed or renamed (%s)", ev.Op)
				}
				continue
			}
			if filepath.Dir(ev.Name) != f.dir {
				continue
			}
			if name := filepath.Base(ev.Name); KindOf(name) != Ignored {
				f.log.Debug("images folder: event", "file", name, "op", ev.Op)
				f.queue.AddAfter(name, f.settle)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("watch closed")
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				f.log.Warn("images folder: events lost; rescanning", "dir", f.dir, "err", err)
				f.rescan()
				continue
			}
			return err
		case <-tick.C():
			if now, err := identify(f.dir); err != nil || now != id {
				return errors.Join(errors.New("folder replaced"), err)
			}
			f.rescan()
		}
	}
}
