package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/components/containerd"
	"github.com/kubernix/kubernix/pkg/imagefolder"
)

// LoadSourcePrefix starts the source label (containerd.LabelSource) of
// images loaded by `kubernix image load`; the tarball's absolute path
// follows.
const LoadSourcePrefix = "load:"

type loadFlags struct {
	node int
	pin  bool
}

func newLoadCommand(env *common.Env) *cobra.Command {
	f := &loadFlags{}
	cmd := &cobra.Command{
		Use:   "load FILE|DIR...",
		Short: "Import image tarballs into every node (or --node N)",
		Long: `Import image tarballs into the containerd of every node of the running
cluster, in parallel, or of node N only. A tarball is a docker-archive
("docker save", "podman save") or an OCI image layout archive, uncompressed or
compressed with gzip or zstd (.tar, .tar.gz, .tgz, .tar.zst, .tzst); a DIR
means every such file in it. Each image the archive names is created, or
replaced by the archive's content if it exists.

A file that is not an image archive, or a damaged one, fails with its name and
leaves no image behind; the other files are still loaded, and the exit code is
non-zero.

Loaded images are pinned, so the kubelet never garbage-collects them: no
registry is reachable to pull them back. --pin=false loads them unpinned.
Each is labelled io.kubernix.source=load:<file>. Use imagePullPolicy: Never
or IfNotPresent (the default for tags other than :latest) to run them.

To have images imported into every node also when a node starts later, drop
the tarball into the images folder, <state>/images/, instead.`,
		Example: `  kubernix image load app.tar
  docker save app:dev | zstd > app.tar.zst && kubernix image load app.tar.zst --node 1
  kubernix image load ./images/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLoad(cmd.Context(), env, f, cmd.Flags().Changed("node"), args)
		},
	}
	env.BindSelector(cmd)
	cmd.Flags().IntVar(&f.node, "node", 0, "load into this node only (index from 0); default: every node")
	cmd.Flags().BoolVar(&f.pin, "pin", true, "pin the images, so the kubelet never garbage-collects them")
	_ = cmd.RegisterFlagCompletionFunc("node", env.CompleteNodeIndex)
	return cmd
}

func runLoad(ctx context.Context, env *common.Env, f *loadFlags, nodeSelected bool, args []string) error {
	cfg, err := env.SavedConfig()
	if err != nil {
		return err
	}
	nodes, err := selectNodes(cfg, f.node, nodeSelected)
	if err != nil {
		return err
	}
	files, err := expand(args)
	if err != nil {
		return err
	}
	if err := checkReachable(ctx, cfg.Name, nodes); err != nil {
		return err
	}
	pinned := ""
	if f.pin {
		pinned = containerd.PinnedValue
	}
	// The importer's store is on the nodes' filesystem, so that they
	// hard-link its blobs.
	if err := os.MkdirAll(cfg.Paths().ImageCache(), 0o700); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(cfg.Paths().ImageCache(), "load-")
	if err != nil {
		return err
	}
	importer, err := containerd.NewImporter(dir)
	if err != nil {
		return err
	}
	defer importer.Close()
	return load(ctx, env.Streams.Out, importer, files, nodes, pinned)
}

// expand turns FILE|DIR arguments into absolute file paths: a file as it
// is (its content decides whether it is an image archive), a directory as
// the image tarballs in it (imagefolder.TarballExtensions, not hidden),
// sorted. A missing path, or a directory without tarballs, is an error.
func expand(args []string) ([]string, error) {
	var out []string
	for _, arg := range args {
		abs, err := filepath.Abs(arg)
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", arg, err)
		}
		if !fi.IsDir() {
			out = append(out, abs)
			continue
		}
		entries, err := os.ReadDir(abs)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", arg, err)
		}
		n := len(out)
		for _, e := range entries {
			if e.Type().IsRegular() && imagefolder.KindOf(e.Name()) == imagefolder.Tarball {
				out = append(out, filepath.Join(abs, e.Name()))
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("load %s: no image tarballs (%s) in the directory", arg, strings.Join(imagefolder.TarballExtensions, ", "))
		}
	}
	return out, nil
}

// load imports each file into every node, the nodes in parallel, the files
// one after the other; importer reads each file once. It prints each imported image with its digest and
// nodes to out as each file is done, and a summary. Images are labelled
// with their source (LoadSourcePrefix and the file's path) and
// containerd.LabelPinned set to pinned ("" leaves them unpinned). The error
// lists every file that failed, with the nodes it failed on; the other
// files are loaded.
func load(ctx context.Context, out io.Writer, importer *containerd.Importer, files []string, nodes []node, pinned string) error {
	begin := time.Now()
	var (
		errs   []error
		images int
	)
	for _, file := range files {
		fileBegin := time.Now()
		labels := map[string]string{containerd.LabelPinned: pinned, containerd.LabelSource: LoadSourcePrefix + file}
		results := make([][]containerd.ImportedImage, len(nodes))
		nodeErrs := make([]error, len(nodes))
		var wg sync.WaitGroup
		for i, nd := range nodes {
			wg.Go(func() {
				results[i], nodeErrs[i] = importer.Import(ctx, containerd.Target{Socket: nd.socket, Root: nd.root}, file, containerd.ImportOptions{Labels: labels})
			})
		}
		wg.Wait()
		took := time.Since(fileBegin).Round(10 * time.Millisecond)
		for _, line := range summarize(nodes, results, nodeErrs) {
			images++
			common.Fprintf(out, "loaded %s %s into %s (%s, %s)\n", line.ref, line.digest, strings.Join(line.nodes, ", "), filepath.Base(file), took)
		}
		if err := groupErrors(nodes, nodeErrs); err != nil {
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	common.Fprintf(out, "%d image(s) from %d of %d file(s) into %d node(s) in %s\n",
		images, len(files)-len(errs), len(files), len(nodes), time.Since(begin).Round(10*time.Millisecond))
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d file(s) not loaded:\n%w", len(errs), len(files), errors.Join(errs...))
	}
	return nil
}

// loaded is one image loaded into some nodes.
type loaded struct {
	ref, digest string
	nodes       []string
}

// summarize groups the nodes' imported images by ref and digest, in ref
// order.
func summarize(nodes []node, results [][]containerd.ImportedImage, errs []error) []loaded {
	var out []loaded
	for i, imgs := range results {
		if errs[i] != nil {
			continue
		}
		for _, img := range imgs {
			j := slices.IndexFunc(out, func(l loaded) bool { return l.ref == img.Ref && l.digest == img.Digest })
			if j < 0 {
				out = append(out, loaded{ref: img.Ref, digest: img.Digest})
				j = len(out) - 1
			}
			out[j].nodes = append(out[j].nodes, nodes[i].name)
		}
	}
	slices.SortStableFunc(out, func(a, b loaded) int { return strings.Compare(a.ref, b.ref) })
	return out
}

// groupErrors joins the nodes' errors for one file, each distinct message
// once with the nodes it came from; nil if there are none. The messages
// name the file (containerd.Import's do).
func groupErrors(nodes []node, errs []error) error {
	var (
		msgs []string
		on   = map[string][]string{}
	)
	for i, err := range errs {
		if err == nil {
			continue
		}
		msg := err.Error()
		if _, ok := on[msg]; !ok {
			msgs = append(msgs, msg)
		}
		on[msg] = append(on[msg], nodes[i].name)
	}
	var out []error
	for _, msg := range msgs {
		out = append(out, fmt.Errorf("node %s: %s", strings.Join(on[msg], ", "), msg))
	}
	return errors.Join(out...)
}
