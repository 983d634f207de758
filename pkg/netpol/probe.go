package netpol

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/knftables"
)

// probeTable is the table name of Probe's check.
const probeTable = "kubernix-netpol-probe"

// ProbeRuleset is a table as Compile writes it for a policy that uses
// every kind of set, match and verdict the agent can need (interval and
// concatenated sets, ct, fib, reject): the text of an `nft -f` batch.
func ProbeRuleset() string {
	sctp, udp := corev1.ProtocolSCTP, corev1.ProtocolUDP
	p80, named := intstr.FromInt32(80), intstr.FromString("http")
	end := int32(90)
	in := Input{
		Node:       "node",
		Namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}},
		Pods: []*corev1.Pod{{
			ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns"},
			Spec: corev1.PodSpec{NodeName: "node", Containers: []corev1.Container{{Name: "c",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: "10.1.0.2"}, {IP: "fd00::2"}}},
		}},
		Policies: []*networkingv1.NetworkPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "ns"},
			Spec: networkingv1.NetworkPolicySpec{
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From:  []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}},
					Ports: []networkingv1.NetworkPolicyPort{{Port: &p80, EndPort: &end}, {Protocol: &udp, Port: &p80}, {Protocol: &sctp}, {Port: &named}},
				}},
				Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}},
			}}},
	}
	tx := knftables.NewFake(knftables.InetFamily, probeTable).NewTransaction()
	Compile(tx, in)
	return tx.String()
}

// Probe checks that the kernel and nft at path take what the agent
// writes: ProbeRuleset, checked by the kernel (`nft --check`) in a new
// network namespace (`unshare -n`), so nothing is left anywhere. It
// returns nil when they do, and an error holding nft's message when not.
func Probe(ctx context.Context, nft string) error {
	cmd := exec.CommandContext(ctx, "unshare", "-n", nft, "--check", "-f", "-")
	cmd.Stdin = strings.NewReader(ProbeRuleset())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("unshare -n %s --check: %w: %s", nft, err, firstLines(out.String(), 3))
	}
	return nil
}

// firstLines returns the first n lines of s, trimmed.
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " / ")
}
