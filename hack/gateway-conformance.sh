#!/usr/bin/env bash
# gateway-conformance.sh: runs upstream's Gateway API conformance suite
# (sigs.k8s.io/gateway-api/conformance, GATEWAY_API_VERSION) offline
# against the ingress addon (traefik) of a 2-node cluster of its own
# (`make gateway-conformance`, which builds what it runs first):
#   images  the suite's backend images (go run ./hack/mkimage -set
#           gateway: echo-basic under each tag the suite's manifests name,
#           CoreDNS under the tag its UDP backend names);
#   up      a 2-node cluster with the ingress addon, and traefik rolled out;
#   load    those images into every node (`kubernix image load`);
#   suite   conformance.test with the GATEWAY-HTTP profile (the features
#           traefik supports read from its GatewayClass's status), its
#           report in $GW/report.yaml, its output in $GW/suite.log;
#   down    the cluster, kept (not deleted) for inspection.
# Then $GW/summary.md: the report's counts per profile and part, and the
# parts' wall times. Environment: OUT, BIN, GO, GW (default $OUT/gateway),
# RUN_TEST (one test of the suite by its short name), SKIP_TESTS
# (comma-separated short names).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-$PWD/_output}
BIN=${BIN:-$OUT/bin}
GO=${GO:-go}
GW=${GW:-$OUT/gateway}
NAME=gateway-conformance
CLUSTER=(--name "$NAME" --state-dir "$GW/state")
TIMES=()

# part NAME CMD...: runs CMD, records its wall time; exits on failure
# (the EXIT trap brings the cluster down and writes the summary).
part() {
	local name=$1 start rc=0
	shift
	start=$(date +%s)
	printf '\n=== %s\n' "$name"
	"$@" || rc=$?
	TIMES+=("| $name | $(($(date +%s) - start))s$( ((rc == 0)) || echo " (failed, exit $rc)") |")
	return "$rc"
}

UP=
finish() {
	local rc=$?
	trap - EXIT
	if [[ -n $UP ]]; then "$BIN/kubernix" down "${CLUSTER[@]}" || rc=1; fi
	{
		echo "# Gateway API conformance summary"
		echo
		if [[ -s $GW/report.yaml ]]; then
			echo '```yaml'
			sed -n '/^profiles:/,$p' "$GW/report.yaml"
			echo '```'
		else
			echo "no report: the suite did not finish (see $GW/suite.log)"
		fi
		echo
		echo "| part | wall time |"
		echo "|---|---:|"
		printf '%s\n' "${TIMES[@]}"
	} >"$GW/summary.md"
	echo "summary in $GW/summary.md"
	exit "$rc"
}
trap finish EXIT

mkdir -p "$GW"
rm -f "$GW/report.yaml" "$GW/summary.md"
# The suite's own manifests name these (base/manifests.yaml, tests/).
printf '%s\n' registry.k8s.io/gateway-api/echo-basic:v1.5.1 registry.k8s.io/gateway-api/echo-basic:v1.6.0-dev.3 \
	registry.k8s.io/gateway-api/echo-basic:v1.6.0-dev.2 registry.k8s.io/coredns/coredns:v1.12.2 >"$GW/images.refs"
part images "$GO" run ./hack/mkimage -set gateway -bin-dir "$BIN" -work-dir "$GW/image-work" -out "$GW/images" -refs "$GW/images.refs"
up_cluster() {
	"$BIN/kubernix" delete "${CLUSTER[@]}"
	"$BIN/kubernix" up --detach "${CLUSTER[@]}" --nodes 2 \
		--addons coredns,local-path-storage,metrics-server,ingress,loadbalancer,registry
	"$BIN/kubernix" kubeconfig "${CLUSTER[@]}" >"$GW/kubeconfig"
	# The ingress addon is deployed once the cluster is Ready, after up
	# returned: wait for traefik (its CRDs come before it).
	"$BIN/kubectl" --kubeconfig "$GW/kubeconfig" -n kube-system wait --for=create deployment/traefik --timeout=5m
	"$BIN/kubectl" --kubeconfig "$GW/kubeconfig" -n kube-system rollout status deployment/traefik --timeout=5m
}
UP=1
part up up_cluster
part load "$BIN/kubernix" image load "${CLUSTER[@]}" "$GW"/images/*.tar
version=$(sed -n 's/^TRAEFIK_VERSION=//p' assets/versions.env)
args=(-test.run '^TestConformance$' -test.v -test.timeout 90m
	-gateway-class traefik -conformance-profiles GATEWAY-HTTP
	-cleanup-base-resources=true -report-output "$GW/report.yaml"
	-organization kubernix -project "kubernix ingress addon (traefik)" -url https://traefik.io/
	-version "$version" -contact "kubernix maintainers" -mode default)
if [[ -n ${RUN_TEST:-} ]]; then args+=(-run-test "$RUN_TEST"); fi
if [[ -n ${SKIP_TESTS:-} ]]; then args+=(-skip-tests "$SKIP_TESTS"); fi
run_suite() {
	echo "output in $GW/suite.log"
	(cd "$GW" && KUBECONFIG=$GW/kubeconfig "$GW/bin/conformance.test" "${args[@]}" >"$GW/suite.log" 2>&1)
}
part suite run_suite
