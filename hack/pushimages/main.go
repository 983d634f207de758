// Command pushimages pushes the images of docker-archive tarballs (as
// hack/mkimage and `docker save` write them) to a registry, each under its
// repository path without its registry host:
//
//	go run ./hack/pushimages -registry localhost:5001 _output/conformance/images/*.tar
//	go run ./hack/pushimages -state-dir _output/conformance/state _output/images/*.tar
//
// -state-dir names a kubernix cluster: its local registry, at the port its
// last up chose (recorded in <state>/kubernix.toml).
//
// registry.k8s.io/e2e-test-images/agnhost:2.55 goes to
// localhost:5001/e2e-test-images/agnhost:2.55: the name under which a
// cluster with registry_mirrors = ['registry.k8s.io'] serves it to its
// nodes for registry.k8s.io/e2e-test-images/agnhost:2.55. The registry is
// spoken to over plain HTTP. With -state-dir it authenticates with the
// cluster's registry account (readable by the cluster's owner only), with
// -registry as the Docker config says (`kubernix registry login`). It
// prints one line per image pushed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kubernix/kubernix/internal/toolmain"
	kxregistry "github.com/kubernix/kubernix/pkg/components/registry"
	"github.com/kubernix/kubernix/pkg/state"
)

func main() { toolmain.Main("pushimages", run) }

// run parses args (-registry HOST:PORT, then tarballs) and pushes every
// image of every tarball; it stops at the first error.
func run(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("pushimages", flag.ContinueOnError)
	fs.SetOutput(stderr)
	registry := fs.String("registry", "", "registry to push to, host:port (plain HTTP), e.g. localhost:5001")
	stateDir := fs.String("state-dir", "", "push to the local registry of the kubernix cluster of this state dir instead")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: pushimages -registry HOST:PORT | -state-dir DIR  TARBALL...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	if *stateDir != "" {
		cfg, err := state.LoadRecorded(*stateDir)
		if err != nil {
			return fmt.Errorf("-state-dir %s: the cluster's recorded config: %w", *stateDir, err)
		}
		if cfg.LocalRegistryPort() == 0 {
			return fmt.Errorf("-state-dir %s: the cluster runs no local registry (the registry addon, --registry-port)", *stateDir)
		}
		*registry = "localhost:" + strconv.Itoa(cfg.LocalRegistryPort())
		cred, err := kxregistry.ReadCredentials(cfg.Paths().RegistryAuth())
		if err != nil {
			return fmt.Errorf("-state-dir %s: the registry's account: %w", *stateDir, err)
		}
		auth = remote.WithAuth(&authn.Basic{Username: cred.Username, Password: cred.Password})
	}
	if *registry == "" {
		return errors.New("-registry or -state-dir: missing, e.g. -registry localhost:5001")
	}
	for _, file := range fs.Args() {
		if err := pushTarball(ctx, stdout, *registry, file, auth); err != nil {
			return err
		}
	}
	return nil
}

// pushTarball pushes each tagged image of the docker-archive file to
// registry under Target's name, authenticating with auth.
func pushTarball(ctx context.Context, stdout io.Writer, registry, file string, auth remote.Option) error {
	opener := func() (io.ReadCloser, error) { return os.Open(file) }
	manifest, err := tarball.LoadManifest(opener)
	if err != nil {
		return fmt.Errorf("%s: not a docker-archive tarball (its manifest.json): %w", file, err)
	}
	for _, desc := range manifest {
		for _, repoTag := range desc.RepoTags {
			src, err := name.NewTag(repoTag)
			if err != nil {
				return fmt.Errorf("%s: image %q: %w", file, repoTag, err)
			}
			dst, err := Target(registry, src)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			img, err := tarball.Image(opener, &src)
			if err != nil {
				return fmt.Errorf("%s: image %s: %w", file, repoTag, err)
			}
			if err := remote.Write(dst, img, remote.WithContext(ctx), auth); err != nil {
				return fmt.Errorf("push %s (from %s) to %s: %w", repoTag, file, dst, err)
			}
			fmt.Fprintf(stdout, "pushed %s as %s\n", src, dst)
		}
	}
	return nil
}

// Target is src's name in registry: its repository path (for Docker Hub
// images with "library/" where the short name omits it) and tag under
// registry, over plain HTTP. Errors are the name package's, for a
// registry that is not host[:port].
func Target(registry string, src name.Tag) (name.Tag, error) {
	return name.NewTag(registry+"/"+src.RepositoryStr()+":"+src.TagStr(), name.Insecure, name.StrictValidation)
}
