#!/usr/bin/env bash
# `make conformance`: run upstream's [Conformance] specs (k8s.io/kubernetes
# test/e2e, as pinned by test/conformance/go.mod) offline against a 3-node
# kubernix cluster, and summarise them. Each part is timed:
#
#   build       e2e.test and ginkgo (make conformance-bins; skipped when up to date)
#   images      the extra test images (go run ./hack/mkimage -set conformance)
#   up          a new 3-node cluster (the last run's deleted first), the
#               local registry mirroring registry.k8s.io
#   load        every image tarball: `kubernix image load` into the nodes, and
#               pushed to the local registry under its path (the mirror serves it
#               to specs that pull with imagePullPolicy: Always)
#   non-serial  the non-[Serial] specs, PROCS ginkgo processes in parallel
#   serial      the [Serial] and [Disruptive] specs, one process (two
#               conformance specs are both: the NoExecuteTaintManager ones)
#   down        always, also after a failure or Ctrl-C; the state (logs)
#               stays for inspection until the next run
#
# Everything lands in $OUT/conformance: bin/, images/, state/ (the cluster's),
# kubeconfig, <run>/report.json and junit.xml of each ginkgo run, and
# summary.md (also printed). It exits non-zero when a spec failed or a part
# did. Settings (environment, as make passes them): FOCUS and SKIP (regexes
# on the spec text, narrowing the conformance specs), PROCS (default 8),
# CONFORMANCE_NAME (cluster name, default conformance), CONFORMANCE_STATE_DIR
# (default $OUT/conformance/state), CONFORMANCE_FLAGS (more `kubernix up`
# flags, e.g. --cidr 10.160.0.0/16), CONF (where it all lands, default
# $OUT/conformance), KUBERNETES_VERSION (the release the cluster runs;
# e2e.test must be that release's: make conformance KUBERNETES_VERSION=...
# builds it) and RELEASE_MODULE (that release's module, unless it is the
# default: the images' etcd, nonewprivs and sample-apiserver are built in
# it, mkimage -module).
#
# SUITE=netpol (`make netpol`) runs upstream's NetworkPolicy specs instead
# (test/e2e/network/netpol, in the same e2e.test: FOCUS defaults to
# `\[Feature:NetworkPolicy\]|Netpol API`, SKIP to SCTPConnectivity, the
# specs that need SCTP sockets, which this kernel lacks): one run,
# "netpol", PROCS processes, no extra images (they use agnhost alone).
# SUITE=dualstack (`make dualstack`) runs the dual-stack specs
# (test/e2e/network/dual_stack.go, `\[Feature:IPv6DualStack\]`, SKIP
# SCTPConnectivity) the same way on a cluster of --ip-family dual.
# CONF_BIN is where e2e.test, ginkgo and summary are (default $CONF/bin).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-$PWD/_output}
BIN=${BIN:-$OUT/bin}
IMAGES=${IMAGES:-$OUT/images}
GO=${GO:-go}
MAKE=${MAKE:-make}
CONF=${CONF:-$OUT/conformance}
CONF_BIN=${CONF_BIN:-$CONF/bin}
E2E_TEST=$CONF_BIN/e2e.test
GINKGO=$CONF_BIN/ginkgo
NAME=${CONFORMANCE_NAME:-conformance}
STATE=${CONFORMANCE_STATE_DIR:-$CONF/state}
PROCS=${PROCS:-8}
SUITE=${SUITE:-conformance}
case $SUITE in
conformance)
	FOCUS=${FOCUS:-}
	SKIP=${SKIP:-}
	RUNS=(non-serial serial)
	;;
netpol)
	FOCUS=${FOCUS:-'\[Feature:NetworkPolicy\]|Netpol API'}
	SKIP=${SKIP:-SCTPConnectivity}
	RUNS=(netpol)
	;;
dualstack)
	FOCUS=${FOCUS:-'\[Feature:IPv6DualStack\]'}
	SKIP=${SKIP:-SCTPConnectivity}
	RUNS=(dualstack)
	;;
*)
	echo "SUITE=$SUITE: want conformance, netpol or dualstack" >&2
	exit 2
	;;
esac
read -r -a UP_FLAGS <<<"${CONFORMANCE_FLAGS:-}"
if [[ $SUITE == dualstack ]]; then UP_FLAGS+=(--ip-family dual); fi
if [[ -n ${KUBERNETES_VERSION:-} ]]; then UP_FLAGS+=(--kubernetes-version "$KUBERNETES_VERSION"); fi
CLUSTER=(--name "$NAME" --state-dir "$STATE")
KUBECONFIG_FILE=$CONF/kubeconfig
# NODES is the cluster's size, which e2e.test is told (--num-nodes): specs
# that need several nodes (the dual-stack Granular Checks among them)
# skip when the framework does not know it.
NODES=3

# part NAME CMD...: runs CMD (with errexit, in a subshell), prints and
# records its wall time for the summary, and leaves its exit code in RC.
# CURRENT and START are the part running, for cleanup after a signal.
PARTS=()
SPEC_TMP= # the running ginkgo run's TMPDIR (run_specs)
RC=0
CURRENT=
START=
part() {
	CURRENT=$1 START=$(date +%s%N)
	shift
	printf '\n=== %s\n' "$CURRENT"
	set +e
	(
		set -e
		"$@"
	)
	RC=$?
	set -e
	record "$CURRENT"
	printf '=== %s: %s in %ss\n' "$CURRENT" "$([[ $RC == 0 ]] && echo ok || echo "failed (exit $RC)")" "$((MS / 1000))"
	CURRENT=
}

# record NAME: adds NAME's wall time since START to PARTS; MS is it in ms.
MS=0
record() {
	MS=$((($(date +%s%N) - START) / 1000000))
	PARTS+=(-part "$1=${MS}ms")
}

# need: exit (through cleanup) when the last part failed.
need() { return "$RC"; }

# build_images makes the conformance images; for the specs of e2e.test's
# release, also those it names under other tags than the default
# release's (mkimage -refs: the same content under its tags), and its
# programs of the Kubernetes tree from that release's module.
build_images() {
	"$E2E_TEST" --list-images >"$CONF/images.refs"
	"$GO" run ./hack/mkimage -bin-dir "$BIN" -set conformance -out "$CONF/images" -refs "$CONF/images.refs" \
		-work-dir "$CONF/image-work" ${RELEASE_MODULE:+-module "$RELEASE_MODULE"} |
		tee "$CONF/images.out"
	# The tarballs of this run (mkimage's last field), not what an older
	# run left in the directory.
	awk '{print $NF}' "$CONF/images.out" >"$CONF/images.list"
}

# up_cluster starts a new cluster: the previous run's, kept down for
# inspection, is deleted first.
up_cluster() {
	"$BIN/kubernix" delete "${CLUSTER[@]}"
	"$BIN/kubernix" up --detach "${CLUSTER[@]}" --nodes "$NODES" --timeout 10m \
		--addons coredns,local-path-storage,metrics-server,loadbalancer,registry \
		--registry-mirrors registry.k8s.io "${UP_FLAGS[@]}"
	"$BIN/kubernix" kubeconfig "${CLUSTER[@]}" >"$KUBECONFIG_FILE"
}

# load_images imports the conformance images into every node and pushes
# them, with the built-in ones, to the local registry.
load_images() {
	local extra=()
	if [[ -s $CONF/images.list ]]; then mapfile -t extra <"$CONF/images.list"; fi
	if ((${#extra[@]})); then
		"$BIN/kubernix" image load "${CLUSTER[@]}" "${extra[@]}"
	fi
	"$GO" run ./hack/pushimages -state-dir "$STATE" "$IMAGES"/*.tar "${extra[@]}"
}

# run_specs NAME PROCS LABEL-FILTER: one ginkgo run of e2e.test, its
# reports in $CONF/NAME.
run_specs() {
	local name=$1 procs=$2 labels=$3 dir=$CONF/$1
	rm -rf "$dir"
	mkdir -p "$dir"
	local args=(--timeout=24h --no-color --silence-skips
		--output-dir="$dir" --json-report=report.json --junit-report=junit.xml)
	if [[ -n $labels ]]; then args+=(--label-filter="$labels"); fi
	if ((procs > 1)); then args+=(--procs="$procs"); fi
	if [[ -n $FOCUS ]]; then args+=(--focus="$FOCUS"); fi
	if [[ -n $SKIP ]]; then args+=(--skip="$SKIP"); fi
	local rc=0
	# The specs' temporary files (kubectl's kuberc and proxy sockets, among
	# others, which some specs leave) go to a directory of this run's own,
	# removed after it (or by cleanup): short, for the sockets' paths.
	SPEC_TMP=$(mktemp -d /tmp/kx-conformance-XXXXXX)
	TMPDIR=$SPEC_TMP "$GINKGO" run "${args[@]}" "$E2E_TEST" -- \
		--kubeconfig="$KUBECONFIG_FILE" --provider=skeleton --report-dir="$dir" \
		--num-nodes="$NODES" --disable-log-dump || rc=$?
	rm -rf "$SPEC_TMP"
	SPEC_TMP=
	# ginkgo catches Ctrl-C, stops the specs and exits 1, so the shell,
	# seeing no child killed by SIGINT, runs no INT trap: its report says it.
	if ((rc != 0)) && grep -q '"Interrupted by User"' "$dir/report.json" 2>/dev/null; then
		return 130
	fi
	return "$rc"
}

# cleanup brings the cluster down (when up was tried), writes the summary
# and exits non-zero if anything failed.
UP_TRIED=
cleanup() {
	local rc=$?
	# A signal now would leave the cluster up: bring it down first.
	trap - EXIT
	trap '' INT TERM
	if [[ -n $CURRENT ]]; then record "$CURRENT (interrupted)"; fi
	if [[ -n $SPEC_TMP ]]; then rm -rf "$SPEC_TMP"; fi
	if [[ -n $UP_TRIED ]]; then
		part down "$BIN/kubernix" down "${CLUSTER[@]}"
		if [[ $RC != 0 ]]; then rc=1; fi
	fi
	# Both runs, also those that never started: the summary lists a
	# missing report as such, with the parts' times.
	if [[ -x $CONF_BIN/summary ]]; then
		local runs=()
		for r in "${RUNS[@]}"; do runs+=(-run "$r=$CONF/$r/report.json"); done
		"$CONF_BIN/summary" -out "$CONF/summary.md" "${PARTS[@]}" "${runs[@]}" || rc=1
		echo "reports and summary in $CONF"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$CONF"
rm -rf "$CONF/non-serial" "$CONF/serial" "$CONF/netpol" "$CONF/dualstack" "$CONF/summary.md"
part build "$MAKE" --no-print-directory conformance-bins
need
if [[ $SUITE == conformance ]]; then
	part images build_images
	need
fi
UP_TRIED=1
part up up_cluster
need
part load load_images
need
failed=0
if [[ $SUITE != conformance ]]; then
	part "$SUITE" run_specs "$SUITE" "$PROCS" ''
	if [[ $RC == 130 ]]; then exit 130; fi
	if [[ $RC != 0 ]]; then failed=1; fi
	exit "$failed"
fi
part non-serial run_specs non-serial "$PROCS" 'Conformance && !Serial && !Disruptive'
if [[ $RC == 130 ]]; then exit 130; fi
if [[ $RC != 0 ]]; then failed=1; fi
part serial run_specs serial 1 'Conformance && (Serial || Disruptive)'
if [[ $RC != 0 ]]; then failed=1; fi
exit "$failed"
