# kubernix build. `make up` installs, builds and starts a cluster; `make test`
# runs every test. Every target is idempotent and skips up-to-date outputs.

include assets/versions.env

OUT     ?= $(CURDIR)/_output
BIN     := $(OUT)/bin
IMAGES  := $(OUT)/images
GO      ?= go
export GOFLAGS := -buildvcs=false
# Everything is built, vetted and tested without cgo, so the build cache of
# one step serves the next (vet of the Kubernetes bundle would otherwise
# recompile all of it with cgo).
export CGO_ENABLED := 0

# The Kubernetes release the bins target builds:
# assets/versions.env's unless given, as in `make bins
# KUBERNETES_VERSION=v1.36.3`. Another release than the default needs a
# module of its own, bundle/releases/v<major>.<minor> (its go.mod pins the
# release), and is built into $(OUT)/releases/<version> beside the default
# bundle, whose other components (containerd, CoreDNS, ...) it shares.
DEFAULT_KUBERNETES_VERSION := $(shell sed -n 's/^KUBERNETES_VERSION=//p' assets/versions.env)
# k8s_ldflags VERSION stamps a Kubernetes binary with VERSION (v1.37.2) as
# upstream's build does (hack/lib/version.sh).
k8s_ldflags = -s -w $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$(1) -X $(p).gitMajor=$(patsubst v%,%,$(word 1,$(subst ., ,$(1)))) \
	-X $(p).gitMinor=$(word 2,$(subst ., ,$(1))) -X $(p).gitTreeState=clean)
K8S_LDFLAGS := $(call k8s_ldflags,$(DEFAULT_KUBERNETES_VERSION))
BUNDLE_DEPS := bundle/go.mod bundle/go.sum assets/versions.env

# GO_RUN_INSTALL PKG DEST builds the command PKG (a package, or one at
# a version: pkg@v1.2.3) and installs it as DEST. Unlike go build -o and
# go install, go run keeps the linked executable in Go's build cache (Go
# 1.24 and later), and -exec hands its path to install(1) instead of
# running it: so a clean clone with a warm Go cache installs every
# component without linking it again (a link of the multi-call binary
# alone takes about 20 CPU-seconds).
GO_RUN_INSTALL = $(GO) run -exec 'install -D -m 0755 -T'

# The multi-call binary's names: `make bins` links each to it.
KUBE_NAMES := etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy
UPSTREAM   := $(BIN)/kube $(BIN)/kubectl $(BIN)/agnhost $(BIN)/containerd \
	$(BIN)/containerd-shim-runc-v2 $(BIN)/crictl $(BIN)/coredns $(BIN)/pause \
	$(BIN)/local-path-provisioner $(BIN)/registry $(BIN)/metrics-server $(BIN)/traefik
KUBERNIX_SRC := $(shell find cmd pkg assets images -type f 2>/dev/null) go.mod go.sum

.PHONY: all deps bins release-bins images build install uninstall up down test unit e2e e2e-release soak bench doctor clean fmt vet vet-bundle \
	conformance conformance-bins netpol dualstack conformance-ipv6 gateway-conformance

all: build

deps:
	hack/deps.sh

bins: $(UPSTREAM) $(addprefix $(BIN)/,$(KUBE_NAMES))

# Another release (KUBERNETES_VERSION): its multi-call binary (the bundle's
# cmd/kube compiled against that release) and kubectl, in
# $(OUT)/releases/<version>/bin, after the default bundle's binaries.
ifneq ($(KUBERNETES_VERSION),$(DEFAULT_KUBERNETES_VERSION))
ifeq ($(filter $(KUBERNETES_VERSION),$(KUBERNETES_RELEASES)),)
$(error KUBERNETES_VERSION=$(KUBERNETES_VERSION) is not a release kubernix builds; it builds $(DEFAULT_KUBERNETES_VERSION) (the default) $(KUBERNETES_RELEASES) (assets/versions.env))
endif
RELEASE_MOD := bundle/releases/$(basename $(KUBERNETES_VERSION))
# make conformance and netpol: the release's own e2e.test, its reports
# apart from the default's, a cluster name of its own.
CONFORMANCE_OUT := $(OUT)/conformance/$(KUBERNETES_VERSION)
CONFORMANCE_NAME ?= conf-$(subst .,-,$(basename $(KUBERNETES_VERSION)))
RELEASE_BIN := $(OUT)/releases/$(KUBERNETES_VERSION)/bin
RELEASE_COMPILED := $(OUT)/releases/$(KUBERNETES_VERSION)/.compiled
RELEASE_PROGRAMS := github.com/kubernix/kubernix/bundle/cmd/kube k8s.io/kubernetes/cmd/kubectl
bins: release-bins
# The release's own binaries only (e2e-release builds them beside a make
# that builds the default bundle).
release-bins: $(RELEASE_BIN)/kube $(RELEASE_BIN)/kubectl $(addprefix $(RELEASE_BIN)/,$(KUBE_NAMES))

# Compiled once by one go command, then linked, as the default bundle is.
$(RELEASE_COMPILED): $(RELEASE_MOD)/go.mod $(RELEASE_MOD)/go.sum $(wildcard bundle/cmd/kube/*.go)
	cd $(RELEASE_MOD) && $(GO) list -export -f '' $(RELEASE_PROGRAMS) >/dev/null
	@mkdir -p $(@D) && touch $@

$(RELEASE_BIN)/kube: $(RELEASE_COMPILED)
	cd $(RELEASE_MOD) && $(GO_RUN_INSTALL) -ldflags '$(call k8s_ldflags,$(KUBERNETES_VERSION))' \
		github.com/kubernix/kubernix/bundle/cmd/kube $@

$(RELEASE_BIN)/kubectl: $(RELEASE_COMPILED)
	cd $(RELEASE_MOD) && $(GO_RUN_INSTALL) -ldflags '$(call k8s_ldflags,$(KUBERNETES_VERSION))' \
		k8s.io/kubernetes/cmd/kubectl $@

$(addprefix $(RELEASE_BIN)/,$(KUBE_NAMES)): $(RELEASE_BIN)/kube
	ln -sf kube $@
else
release-bins:
	@echo 'name the release: make release-bins KUBERNETES_VERSION=<one of $(KUBERNETES_RELEASES)>' >&2; exit 2
endif

# Go commands run side by side each compile every package the build cache
# lacks, so on a cold machine two of them building programs of the bundle
# compile client-go, k8s.io/api and the standard library twice. One go
# command therefore compiles the packages of all the bundle's programs
# first (its own -p jobs keep the cores busy), and each program is then
# only linked. (local-path-provisioner imports github.com/Sirupsen/logrus,
# which one go command cannot load beside github.com/sirupsen/logrus; it
# is small and built on its own.) `go list -export` compiles without
# linking, where `go build` of several programs links each and throws it
# away (25 s on a warm cache, against 3).
BUNDLE_PROGRAMS := ./cmd/kube ./cmd/coredns k8s.io/kubernetes/cmd/kubectl \
	k8s.io/kubernetes/test/images/agnhost sigs.k8s.io/metrics-server/cmd/metrics-server
BUNDLE_SRC := $(BUNDLE_DEPS) $(wildcard bundle/cmd/*/*.go)
BUNDLE_COMPILED := $(OUT)/.bundle-compiled
$(BUNDLE_COMPILED): $(BUNDLE_SRC)
	cd bundle && $(GO) list -export -f '' $(BUNDLE_PROGRAMS) >/dev/null
	@mkdir -p $(@D) && touch $@

$(BIN)/kube: $(BUNDLE_COMPILED)
	cd bundle && $(GO_RUN_INSTALL) -ldflags '$(K8S_LDFLAGS)' ./cmd/kube $@

$(addprefix $(BIN)/,$(KUBE_NAMES)): $(BIN)/kube
	ln -sf kube $@

$(BIN)/kubectl: $(BUNDLE_COMPILED)
	cd bundle && $(GO_RUN_INSTALL) -ldflags '$(K8S_LDFLAGS)' k8s.io/kubernetes/cmd/kubectl $@

$(BIN)/agnhost: $(BUNDLE_COMPILED)
	cd bundle && $(GO_RUN_INSTALL) -ldflags '-s -w' k8s.io/kubernetes/test/images/agnhost $@

CONTAINERD_PKG := github.com/containerd/containerd/v2
CONTAINERD_LDFLAGS := -s -w -X $(CONTAINERD_PKG)/version.Version=$(CONTAINERD_VERSION) \
	-X $(CONTAINERD_PKG)/version.Revision=$(CONTAINERD_VERSION)
$(BIN)/containerd $(BIN)/containerd-shim-runc-v2: $(BIN)/%: assets/versions.env
	$(GO_RUN_INSTALL) -ldflags '$(CONTAINERD_LDFLAGS)' $(CONTAINERD_PKG)/cmd/$*@$(CONTAINERD_VERSION) $@
# After containerd, whose packages the shim's are nearly all (see above).
$(BIN)/containerd-shim-runc-v2: | $(BIN)/containerd

CRICTL_LDFLAGS := -s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$(CRICTL_VERSION)
$(BIN)/crictl: assets/versions.env
	$(GO_RUN_INSTALL) -ldflags '$(CRICTL_LDFLAGS)' sigs.k8s.io/cri-tools/cmd/crictl@$(CRICTL_VERSION) $@

# CoreDNS, local-path-provisioner and metrics-server are built in the
# bundle module (bundle/go.mod, at the versions of assets/versions.env; a
# unit test holds the two equal): their Kubernetes libraries are the
# bundle's v1.37.2, so a cold build compiles client-go, k8s.io/api and
# k8s.io/apiserver once rather than once per component. CoreDNS comes from
# the bundle's cmd/coredns: upstream's plugins less the six that link a
# cloud or tracing SDK.
$(BIN)/coredns: $(BUNDLE_COMPILED)
	cd bundle && $(GO_RUN_INSTALL) -ldflags '-s -w' ./cmd/coredns $@

$(BIN)/local-path-provisioner: $(BUNDLE_COMPILED)
	cd bundle && $(GO_RUN_INSTALL) -ldflags '-s -w -X main.VERSION=$(LOCAL_PATH_PROVISIONER_VERSION)' \
		github.com/rancher/local-path-provisioner $@

REGISTRY_PKG := github.com/distribution/distribution/v3
$(BIN)/registry: assets/versions.env
	$(GO_RUN_INSTALL) -ldflags '-s -w -X $(REGISTRY_PKG)/version.version=$(REGISTRY_VERSION)' \
		$(REGISTRY_PKG)/cmd/registry@$(REGISTRY_VERSION) $@

# Its version where upstream's Makefile puts it (client-go's pkg/version).
METRICS_SERVER_LDFLAGS := -s -w -X k8s.io/client-go/pkg/version.gitVersion=$(METRICS_SERVER_VERSION)
$(BIN)/metrics-server: $(BUNDLE_COMPILED)
	cd bundle && $(GO_RUN_INSTALL) -ldflags '$(METRICS_SERVER_LDFLAGS)' \
		sigs.k8s.io/metrics-server/cmd/metrics-server $@

# traefik (the ingress addon) is built in its own module, bundle/traefik,
# whose go.mod says what stands in for the modules traefik's own go.mod
# replaces: copies of lego and gorilla/mux with files of ours, and of
# traefik with our patch (bundle/traefik/_add), made from Go's module
# cache by hack/modcopy.sh.
TRAEFIK_MOD := bundle/traefik
mod_version = $(shell sed -n 's/^[[:space:]]*$(subst /,\/,$(1)) \(v[^ ]*\).*/\1/p' $(TRAEFIK_MOD)/go.mod)
TRAEFIK_COPIES := $(addprefix $(TRAEFIK_MOD)/_mod/,traefik/.made lego/.made mux/.made go-http-auth/.made)
$(TRAEFIK_MOD)/_mod/traefik/.made: $(TRAEFIK_MOD)/go.mod hack/modcopy.sh $(shell find $(TRAEFIK_MOD)/_add/traefik -type f)
	GO=$(GO) hack/modcopy.sh github.com/traefik/traefik/v3 $(TRAEFIK_VERSION) $(@D) $(TRAEFIK_MOD)/_add/traefik
	touch $@
$(TRAEFIK_MOD)/_mod/lego/.made: $(TRAEFIK_MOD)/go.mod hack/modcopy.sh $(shell find $(TRAEFIK_MOD)/_add/lego -type f)
	GO=$(GO) hack/modcopy.sh github.com/go-acme/lego/v5 $(call mod_version,github.com/go-acme/lego/v5) \
		$(@D) $(TRAEFIK_MOD)/_add/lego 'providers/dns/*'
	touch $@
$(TRAEFIK_MOD)/_mod/mux/.made: $(TRAEFIK_MOD)/go.mod hack/modcopy.sh $(shell find $(TRAEFIK_MOD)/_add/mux -type f)
	GO=$(GO) hack/modcopy.sh github.com/gorilla/mux $(call mod_version,github.com/gorilla/mux) $(@D) $(TRAEFIK_MOD)/_add/mux
	touch $@
$(TRAEFIK_MOD)/_mod/go-http-auth/.made: $(TRAEFIK_MOD)/go.mod hack/modcopy.sh $(shell find $(TRAEFIK_MOD)/_add/go-http-auth -type f)
	GO=$(GO) hack/modcopy.sh github.com/abbot/go-http-auth v0.4.0 $(@D) $(TRAEFIK_MOD)/_add/go-http-auth
	touch $@

$(BIN)/traefik: $(TRAEFIK_COPIES) $(TRAEFIK_MOD)/go.sum $(wildcard $(TRAEFIK_MOD)/ext/*.go)
	cd $(TRAEFIK_MOD) && $(GO_RUN_INSTALL) -ldflags '-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$(TRAEFIK_VERSION)' \
		github.com/traefik/traefik/v3/cmd/traefik $@

$(BIN)/pause: $(wildcard images/pause/*.go)
	$(GO_RUN_INSTALL) -trimpath -ldflags '-s -w' ./images/pause $@

images: bins
	$(GO) run ./hack/mkimage -bin-dir $(BIN) -out $(IMAGES)

build: $(BIN)/kubernix

# kubernix's own version: the git tag or commit it is built from.
KUBERNIX_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
$(BIN)/kubernix: $(KUBERNIX_SRC)
	$(GO_RUN_INSTALL) -ldflags '-X github.com/kubernix/kubernix/pkg/cli/version.Version=$(KUBERNIX_VERSION)' ./cmd/kubernix $@

# `make install [PREFIX=/usr/local] [DESTDIR=]` puts kubernix into
# PREFIX/bin and its bundle into PREFIX/lib/kubernix: every component binary
# (bin/, the multi-call binary's names as links to it) and the built-in
# images (images/). kubernix finds the bundle from its own path, so a copy
# of PREFIX elsewhere keeps working. `make uninstall` removes exactly these.
PREFIX      ?= /usr/local
INSTALL_BIN := $(DESTDIR)$(PREFIX)/bin
INSTALL_LIB := $(DESTDIR)$(PREFIX)/lib/kubernix
# The built-in images (pkg/images Builtins), as `make images` writes them.
IMAGE_TARS  := $(addsuffix .tar,pause coredns agnhost local-path-provisioner busybox metrics-server traefik)

# install also installs every other release that was built (`make bins
# KUBERNETES_VERSION=...`) into $(INSTALL_LIB)/releases/<version>/bin.
install: bins images build
	install -d $(INSTALL_BIN) $(INSTALL_LIB)/bin $(INSTALL_LIB)/images
	install -m 0755 $(BIN)/kubernix $(INSTALL_BIN)/kubernix
	install -m 0755 $(UPSTREAM) $(INSTALL_LIB)/bin/
	for n in $(KUBE_NAMES); do ln -sfn kube $(INSTALL_LIB)/bin/$$n || exit 1; done
	install -m 0644 $(addprefix $(IMAGES)/,$(IMAGE_TARS)) $(INSTALL_LIB)/images/
	for v in $(KUBERNETES_RELEASES); do \
		[ -x $(OUT)/releases/$$v/bin/kube ] || continue; \
		install -d $(INSTALL_LIB)/releases/$$v/bin || exit 1; \
		install -m 0755 $(OUT)/releases/$$v/bin/kube $(OUT)/releases/$$v/bin/kubectl $(INSTALL_LIB)/releases/$$v/bin/ || exit 1; \
		for n in $(KUBE_NAMES); do ln -sfn kube $(INSTALL_LIB)/releases/$$v/bin/$$n || exit 1; done; \
	done

uninstall:
	rm -f $(INSTALL_BIN)/kubernix $(addprefix $(INSTALL_LIB)/bin/,$(notdir $(UPSTREAM)) $(KUBE_NAMES)) \
		$(addprefix $(INSTALL_LIB)/images/,$(IMAGE_TARS)) \
		$(foreach v,$(KUBERNETES_RELEASES),$(addprefix $(INSTALL_LIB)/releases/$(v)/bin/,kube kubectl $(KUBE_NAMES)))
	for d in $(foreach v,$(KUBERNETES_RELEASES),$(INSTALL_LIB)/releases/$(v)/bin $(INSTALL_LIB)/releases/$(v)) \
		$(INSTALL_LIB)/releases $(INSTALL_LIB)/bin $(INSTALL_LIB)/images $(INSTALL_LIB); do \
		if [ -d $$d ]; then rmdir --ignore-fail-on-non-empty $$d || exit 1; fi; \
	done

doctor: build
	$(BIN)/kubernix doctor

# `make up` prepares the machine and starts (or keeps) the default cluster;
# kubectl then works through the merged context kubernix-kubernix.
up: deps bins images build
	$(BIN)/kubernix doctor >/dev/null || $(BIN)/kubernix doctor
	@if $(BIN)/kubernix status >/dev/null 2>&1; then \
		echo "cluster kubernix is already running"; \
	else \
		$(BIN)/kubernix up --detach; \
	fi
	@echo 'next: eval "$$($(BIN)/kubernix env)"; kubectl get nodes'

down: build
	$(BIN)/kubernix down

fmt:
	gofmt -l -w cmd pkg assets images hack bundle/cmd

vet:
	$(GO) vet ./...

# Vetting the bundle analyses all of Kubernetes for facts (long when cold);
# it is not part of `make test`.
vet-bundle:
	cd bundle && $(GO) vet ./...

# Unit tests: no cluster, no built binaries, no root (tests that need root
# skip without it; the integration tests skip with -short).
unit:
	$(GO) test -short -count=1 ./...
	cd test/conformance && $(GO) test -short -count=1 ./cmd/...

# Integration tests start real clusters: they need root and the built
# binaries. E2E_PARALLEL is how many of the tests that may share the
# machine run at once, the longest first (KUBERNIX_E2E_PARALLEL; see
# test/e2e/schedule_test.go): on 2 cores, 3 (4 overloads it). go
# test's own -parallel is left high so that the tests' scheduler decides.
# gotestsum prints a line per test as it ends (with its time) and the
# output of the failed ones at the end; the run's events stay in
# $(OUT)/e2e.json, and the slowest tests are listed after it.
E2E_PARALLEL ?= 3
E2E_PACKAGES := ./test/e2e ./pkg/components/containerd
GOTESTSUM_VERSION := v1.13.0
GOTESTSUM := $(OUT)/tools/gotestsum
$(GOTESTSUM):
	$(GO_RUN_INSTALL) gotest.tools/gotestsum@$(GOTESTSUM_VERSION) $@
# The e2e tests also run the release before the default (TestOlderRelease;
# `make e2e E2E_RELEASE=v1.35.4` another): `make e2e-release` builds it
# beside the default bundle.
E2E_RELEASE ?= $(firstword $(KUBERNETES_RELEASES))
e2e-release:
	$(MAKE) release-bins KUBERNETES_VERSION=$(E2E_RELEASE)

e2e: deps bins images build e2e-release $(GOTESTSUM)
	KUBERNIX_BIN_DIR=$(BIN) KUBERNIX_IMAGES_DIR=$(IMAGES) KUBERNIX_E2E_PARALLEL=$(E2E_PARALLEL) \
		KUBERNIX_E2E_RELEASE=$(E2E_RELEASE) \
		$(GOTESTSUM) --format testname --format-icons text --jsonfile $(OUT)/e2e.json -- \
		-count=1 -timeout 40m -parallel 64 $(E2E_PACKAGES); \
	rc=$$?; echo "slowest tests:"; $(GOTESTSUM) tool slowest --jsonfile $(OUT)/e2e.json --threshold 20s; exit $$rc

# Every test: vet, the unit tests, then the integration tests.
test: vet unit e2e

# `make soak [CYCLES=10]`: TestDownLeavesNothing's up and down cycles
# (three in `make test`) CYCLES times for each size, for the leaks that
# show only now and then. Not part of `make test`: about 15 minutes.
CYCLES ?= 10
soak: deps bins images build $(GOTESTSUM)
	KUBERNIX_BIN_DIR=$(BIN) KUBERNIX_IMAGES_DIR=$(IMAGES) KUBERNIX_E2E_CYCLES=$(CYCLES) \
		$(GOTESTSUM) --format testname --format-icons text -- \
		-count=1 -timeout 60m -run '^TestDownLeavesNothing$$' ./test/e2e

# `make conformance [FOCUS=regex] [SKIP=regex] [PROCS=8]` (issue #16) runs
# upstream's [Conformance] specs offline on a 3-node cluster and writes the
# reports and summary.md under $(OUT)/conformance: see hack/conformance.sh.
# Not part of `make test`: it takes about an hour. e2e.test, ginkgo and the
# summary command are built from the test/conformance module. With
# KUBERNETES_VERSION=<another release>, that release's specs run on a
# cluster of it; reports under $(OUT)/conformance/<version>.
CONFORMANCE_OUT  ?= $(OUT)/conformance
CONFORMANCE_BIN  := $(CONFORMANCE_OUT)/bin
CONFORMANCE_DEPS := test/conformance/go.mod test/conformance/go.sum
PROCS ?= 8
export FOCUS SKIP PROCS CONFORMANCE_NAME CONFORMANCE_STATE_DIR CONFORMANCE_FLAGS

conformance-bins: $(addprefix $(CONFORMANCE_BIN)/,e2e.test ginkgo summary)

# Stamped with the Kubernetes version as the server binaries are: the
# framework picks the Pod Security fixtures of its own version. Another
# release's is built in its module (bundle/releases/<minor>, whose suite
# package holds what it needs).
ifeq ($(KUBERNETES_VERSION),$(DEFAULT_KUBERNETES_VERSION))
$(CONFORMANCE_BIN)/e2e.test: $(CONFORMANCE_DEPS) assets/versions.env
	cd test/conformance && $(GO) test -c -ldflags '$(K8S_LDFLAGS)' -o $@ k8s.io/kubernetes/test/e2e
else
$(CONFORMANCE_BIN)/e2e.test: $(RELEASE_MOD)/go.mod $(RELEASE_MOD)/go.sum
	cd $(RELEASE_MOD) && $(GO) test -c -ldflags '$(call k8s_ldflags,$(KUBERNETES_VERSION))' -o $@ k8s.io/kubernetes/test/e2e
endif

$(CONFORMANCE_BIN)/ginkgo: $(CONFORMANCE_DEPS)
	cd test/conformance && $(GO_RUN_INSTALL) github.com/onsi/ginkgo/v2/ginkgo $@

$(CONFORMANCE_BIN)/summary: $(CONFORMANCE_DEPS) $(wildcard test/conformance/cmd/summary/*.go)
	cd test/conformance && $(GO_RUN_INSTALL) ./cmd/summary $@

conformance: deps bins images build
	OUT=$(OUT) BIN=$(BIN) IMAGES=$(IMAGES) GO=$(GO) CONF=$(CONFORMANCE_OUT) \
		KUBERNETES_VERSION=$(KUBERNETES_VERSION) RELEASE_MODULE=$(RELEASE_MOD) hack/conformance.sh

# `make netpol [FOCUS=regex] [SKIP=regex] [PROCS=8]` (issue #26) runs
# upstream's NetworkPolicy e2e specs (`[Feature:NetworkPolicy]` and the
# Netpol API specs of test/e2e/network/netpol; not the SCTP-socket ones)
# offline on a 3-node cluster, the same way: reports and summary.md under
# $(OUT)/conformance.
netpol: deps bins images build
	SUITE=netpol OUT=$(OUT) BIN=$(BIN) IMAGES=$(IMAGES) GO=$(GO) CONF=$(CONFORMANCE_OUT) \
		KUBERNETES_VERSION=$(KUBERNETES_VERSION) RELEASE_MODULE=$(RELEASE_MOD) hack/conformance.sh

# `make dualstack [FOCUS=regex] [SKIP=regex] [PROCS=8]` (issue #28) runs
# upstream's dual-stack e2e specs (`[Feature:IPv6DualStack]`, not the
# SCTP-socket one) offline on a 3-node --ip-family dual cluster, the same
# way: reports and summary.md under $(OUT)/conformance.
dualstack: deps bins images build
	SUITE=dualstack OUT=$(OUT) BIN=$(BIN) IMAGES=$(IMAGES) GO=$(GO) CONF=$(CONFORMANCE_OUT) \
		KUBERNETES_VERSION=$(KUBERNETES_VERSION) RELEASE_MODULE=$(RELEASE_MOD) hack/conformance.sh

# `make conformance-ipv6` (issue #28) runs the [Conformance] specs on a
# 3-node --ip-family ipv6 cluster of its own (conformance-ipv6): reports
# and summary.md under $(OUT)/conformance/ipv6, e2e.test shared with
# `make conformance`.
conformance-ipv6: deps bins images build
	OUT=$(OUT) BIN=$(BIN) IMAGES=$(IMAGES) GO=$(GO) CONF=$(CONFORMANCE_OUT)/ipv6 CONF_BIN=$(CONFORMANCE_BIN) \
		CONFORMANCE_NAME=conformance-ipv6 CONFORMANCE_FLAGS="--ip-family ipv6 $(CONFORMANCE_FLAGS)" \
		KUBERNETES_VERSION=$(KUBERNETES_VERSION) RELEASE_MODULE=$(RELEASE_MOD) hack/conformance.sh

# `make gateway-conformance [RUN_TEST=name] [SKIP_TESTS=a,b]` (issue #29)
# runs upstream's Gateway API conformance suite (GATEWAY-HTTP profile)
# offline against the ingress addon of a 2-node cluster of its own:
# hack/gateway-conformance.sh; report and summary.md under
# $(OUT)/gateway. Not part of `make test`.
GATEWAY_OUT := $(OUT)/gateway
export RUN_TEST SKIP_TESTS
$(GATEWAY_OUT)/bin/conformance.test: test/gateway/go.mod test/gateway/go.sum $(wildcard test/gateway/*.go)
	cd test/gateway && $(GO) test -c -o $@ .
gateway-conformance: deps bins images build $(GATEWAY_OUT)/bin/conformance.test
	OUT=$(OUT) BIN=$(BIN) GO=$(GO) GW=$(GATEWAY_OUT) hack/gateway-conformance.sh

# Benchmark (issue #7): up/down real clusters of each size, several runs,
# and report time to Ready, boot phases, memory, teardown and image import
# under $(OUT)/bench (latest.md). Needs root. Quick: BENCH_FLAGS='-nodes 1 -runs 1'.
BENCH_FLAGS ?= -nodes 1,3,5,10 -runs 5 -cold 3
bench: bins images build
	$(GO) run ./hack/bench -bin-dir $(BIN) -out $(OUT)/bench $(BENCH_FLAGS)

clean:
	rm -rf $(OUT)
