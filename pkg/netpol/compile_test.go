package netpol

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/knftables"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Builders of the inputs, shaped after upstream's netpol e2e model:
// namespaces x, y, z labelled ns=<name>, pods a, b, c labelled pod=<name>
// serving named ports serve-80-tcp and serve-81-udp.

func ns(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"ns": name}}}
}

func testPod(namespace, name, node, ip string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"pod": name}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
			{Name: "serve-80-tcp", ContainerPort: 80},
			{Name: "serve-81-udp", ContainerPort: 81, Protocol: corev1.ProtocolUDP},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: ip}}},
	}
}

func policy(namespace, name string, spec networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: spec}
}

func podSel(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"pod": name}}
}

func nsSel(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"ns": name}}
}

func port(p intstr.IntOrString, proto corev1.Protocol, end int32) networkingv1.NetworkPolicyPort {
	np := networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &p}
	if end != 0 {
		np.EndPort = &end
	}
	return np
}

// cluster is two nodes' pods in x, y and z, a hostNetwork pod and a
// finished one (neither can be selected).
func cluster(policies ...*networkingv1.NetworkPolicy) Input {
	host := testPod("x", "host", "n0", "10.0.0.2")
	host.Spec.HostNetwork = true
	done := testPod("x", "done", "n0", "10.1.0.99")
	done.Status.Phase = corev1.PodSucceeded
	return Input{
		Node:       "n0",
		Namespaces: []*corev1.Namespace{ns("x"), ns("y"), ns("z")},
		Pods: []*corev1.Pod{
			testPod("x", "a", "n0", "10.1.0.10"), testPod("x", "b", "n1", "10.1.1.10"), testPod("x", "c", "n0", "10.1.0.11"),
			testPod("y", "a", "n1", "10.1.1.20"), testPod("y", "b", "n0", "10.1.0.20"),
			testPod("z", "a", "n0", "10.1.0.30"), host, done,
		},
		Policies: policies,
	}
}

var ingress = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}

// compileCases are the golden cases: testdata/<name>.nft is the
// transaction Compile writes for the node n0.
var compileCases = []struct {
	name string
	in   Input
}{
	{"no-policy", cluster()},
	{"deny-all-ingress", cluster(policy("x", "deny", networkingv1.NetworkPolicySpec{PolicyTypes: ingress}))},
	{"allow-by-pod-and-namespace", cluster(policy("x", "allow", networkingv1.NetworkPolicySpec{
		PodSelector: *podSel("a"), PolicyTypes: ingress,
		Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
			{PodSelector: podSel("b")},
			{NamespaceSelector: nsSel("y"), PodSelector: podSel("a")},
			{NamespaceSelector: nsSel("z")},
		}}},
	}))},
	{"ipblock-except-and-ports", cluster(policy("x", "ports", networkingv1.NetworkPolicySpec{
		PodSelector: *podSel("a"), PolicyTypes: ingress,
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.1.0.0/16", Except: []string{"10.1.1.0/24"}}}},
			Ports: []networkingv1.NetworkPolicyPort{
				port(intstr.FromInt32(80), corev1.ProtocolTCP, 90),
				port(intstr.FromString("serve-81-udp"), corev1.ProtocolUDP, 0),
				{Protocol: func() *corev1.Protocol { p := corev1.ProtocolSCTP; return &p }()},
			},
		}},
	}))},
	{"egress-named-port-any-peer", cluster(policy("x", "egress", networkingv1.NetworkPolicySpec{
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		Egress: []networkingv1.NetworkPolicyEgressRule{
			{Ports: []networkingv1.NetworkPolicyPort{port(intstr.FromString("serve-80-tcp"), corev1.ProtocolTCP, 0)}},
			{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{"y"}}},
			}}}},
		},
	}))},
	{"policy-types-defaulted", cluster(policy("y", "both", networkingv1.NetworkPolicySpec{
		Egress: []networkingv1.NetworkPolicyEgressRule{{}},
	}))},
}

// TestCompile compares each case's transaction with its golden file and
// checks that knftables' fake, which checks every reference, applies it
// twice in a row (the second replaces the first).
func TestCompile(t *testing.T) {
	for _, tc := range compileCases {
		t.Run(tc.name, func(t *testing.T) {
			fake := knftables.NewFake(knftables.InetFamily, "kubernix-netpol")
			for range 2 {
				tx := fake.NewTransaction()
				Compile(tx, tc.in)
				if err := fake.Run(t.Context(), tx); err != nil {
					t.Fatalf("apply: %v\n%s", err, tx)
				}
			}
			tx := fake.NewTransaction()
			Compile(tx, tc.in)
			golden(t, filepath.Join("testdata", tc.name+".nft"), tx.String())
		})
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./pkg/netpol -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./pkg/netpol -update rewrites it); got:\n%s", path, got)
	}
}

// TestCompileLoads loads each golden table into the kernel, in a network
// namespace of its own (unshare -n): nft checks what the fake cannot
// (set types, interval elements, fib and reject in their hooks).
func TestCompileLoads(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (a network namespace of its own)")
	}
	nft, err := exec.LookPath("nft")
	if err != nil {
		t.Skip("nft is not installed (apt-get install nftables)")
	}
	for _, tc := range compileCases {
		t.Run(tc.name, func(t *testing.T) {
			fake := knftables.NewFake(knftables.InetFamily, "kubernix-netpol")
			tx := fake.NewTransaction()
			Compile(tx, tc.in)
			cmd := exec.Command("unshare", "-n", nft, "-f", "-")
			cmd.Stdin = strings.NewReader(tx.String())
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("nft -f: %v\n%s\n%s", err, out.String(), tx)
			}
		})
	}
}
