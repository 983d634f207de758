package status

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/plan"
)

// Status is what `kubernix status` reports (-o json|yaml), and what its
// table shows (Table): the same struct, so the two cannot disagree.
type Status struct {
	// Cluster is the cluster's name (--name).
	Cluster string `json:"cluster"`
	// StateDir is the cluster's state directory, absolute.
	StateDir string `json:"stateDir"`
	// KubernetesVersion is the Kubernetes release the cluster runs (or
	// last ran), as its record names it, e.g. "v1.36.3"; absent when the
	// record is damaged. Each Node's KubeletVersion is what it reports.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// IPFamily is the cluster's IP family (ip_family): "ipv4", "ipv6" or
	// "dual" (IPv4 first); absent when the record is damaged.
	IPFamily string `json:"ipFamily,omitempty"`
	// Ephemeral is true for an ephemeral cluster (ephemeral = true), which
	// `kubernix down` deletes.
	Ephemeral bool `json:"ephemeral,omitempty"`
	// Time is when the status was taken (RFC 3339); expiry warnings count
	// from it.
	Time time.Time `json:"time"`
	// Damaged says why the cluster's record (its kubernix.toml) cannot
	// be read (state.DamagedError); "" when it can. A damaged cluster's
	// Components are the processes its run records name, and it is
	// never Healthy: `kubernix down` brings it down.
	Damaged string `json:"damaged,omitempty"`
	// Supervisor is the cluster's supervisor process.
	Supervisor Supervisor `json:"supervisor"`
	// Components are the cluster's processes in start order.
	Components []Component `json:"components"`
	// NetworkPolicies is "enforced" when every node runs a NetworkPolicy
	// agent (network_policy, the default) and "off" when NetworkPolicies
	// are accepted but not enforced; "" when the record is damaged.
	NetworkPolicies string `json:"networkPolicies,omitempty"`
	// Ports are the ports the nodes publish on the host ([[nodes]] ports).
	Ports []plan.Published `json:"ports,omitempty"`
	// FailedNodes are the nodes the supervisor gave up on, with why.
	FailedNodes []FailedNode `json:"failedNodes,omitempty"`
	// ExpiringCertificates are the cluster's certificates that expire
	// within pki.RenewBefore or have expired: warnings, not unhealthy.
	ExpiringCertificates []Certificate `json:"expiringCertificates,omitempty"`
	// CertificatesError says why the certificates could not all be
	// checked; "" when they were.
	CertificatesError string `json:"certificatesError,omitempty"`
	// APIServer says whether the apiserver runs and answers.
	APIServer APIServer `json:"apiserver"`
	// Nodes are the Kubernetes Nodes as the apiserver lists them; null
	// when it does not answer.
	Nodes []Node `json:"nodes"`
	// Addons are the enabled addons' health; null when the apiserver does
	// not answer.
	Addons []Addon `json:"addons"`
	// Healthy is true when the record is not Damaged, the supervisor and every component run, no node
	// failed, the apiserver answers, every Node is Ready and every addon
	// healthy or still installing (Addon.Installing). `kubernix status`
	// exits 1 when it is false.
	Healthy bool `json:"healthy"`
}

// Values of Status.NetworkPolicies.
const (
	NetworkPoliciesEnforced = "enforced"
	NetworkPoliciesOff      = "off"
)

// Supervisor is the cluster's supervisor process.
type Supervisor struct {
	// PID is its process id, 0 when none runs.
	PID int `json:"pid,omitempty"`
	// Running reports whether it runs.
	Running bool `json:"running"`
}

// Component is one process of the cluster.
type Component struct {
	// Name is the component's name, e.g. "kube-apiserver", "kubelet".
	Name string `json:"name"`
	// Node is the node it runs on (its Kubernetes name), or
	// "control-plane" (config.ControlPlaneScope) for the control plane's.
	Node string `json:"node"`
	// PID is its process id, or its last one when it does not run; 0 when
	// it never started.
	PID int `json:"pid,omitempty"`
	// State is running or stopped, or what the supervisor recorded:
	// unhealthy, restarting, crash-looping or failed.
	State components.State `json:"state"`
	// Restarts counts the supervisor's restarts of it.
	Restarts int `json:"restarts"`
	// Since is when its process started (RFC 3339); absent when it never did.
	Since *time.Time `json:"since,omitempty"`
	// LastFailure is its last failure as the supervisor recorded it (may
	// span lines); "" for none.
	LastFailure string `json:"lastFailure,omitempty"`
	// LastFailureAt is when LastFailure happened (RFC 3339).
	LastFailureAt *time.Time `json:"lastFailureAt,omitempty"`
}

// FailedNode is a node the supervisor gave up on.
type FailedNode struct {
	// Node is the node's name.
	Node string `json:"node"`
	// Reason is what the supervisor recorded (state.FailedFile).
	Reason string `json:"reason"`
}

// Certificate is a certificate of the cluster close to expiry.
type Certificate struct {
	// Path is its PEM file.
	Path string `json:"path"`
	// CommonName is its subject's CN.
	CommonName string `json:"commonName"`
	// NotAfter is when it expires (RFC 3339).
	NotAfter time.Time `json:"notAfter"`
}

// APIServer is the apiserver's reachability.
type APIServer struct {
	// Running reports whether its process runs.
	Running bool `json:"running"`
	// Answering reports whether it answered the Node list.
	Answering bool `json:"answering"`
	// Error is why it did not answer; "" when it did or does not run.
	Error string `json:"error,omitempty"`
}

// Node is a Kubernetes Node of the cluster.
type Node struct {
	// Name is the Node's name.
	Name string `json:"name"`
	// Ready is the status of its Ready condition: "True", "False" or
	// "Unknown" (also when it has none).
	Ready string `json:"ready"`
	// InternalIP is its first InternalIP address (the primary family's);
	// "" when it has none.
	InternalIP string `json:"internalIP"`
	// InternalIPs are its InternalIP addresses, one per IP family of a
	// dual-stack cluster, in the Node's order (primary first).
	InternalIPs []string `json:"internalIPs,omitempty"`
	// KubeletVersion is the version its kubelet reports
	// (status.nodeInfo.kubeletVersion), e.g. "v1.36.3".
	KubeletVersion string `json:"kubeletVersion"`
	// PodCIDRs are its pod CIDRs (spec.podCIDRs).
	PodCIDRs []string `json:"podCIDRs"`
}

// Addon is the health of an enabled addon.
type Addon struct {
	// Name is the addon's name, e.g. "coredns".
	Name string `json:"name"`
	// Healthy is true when its Deployment, if any, has a ready replica
	// and its processes, if any, all run.
	Healthy bool `json:"healthy"`
	// Deployment is its Deployment's readiness; absent for an addon
	// without one.
	Deployment *Deployment `json:"deployment,omitempty"`
	// Processes are its processes run by the supervisor, if any.
	Processes []AddonProcess `json:"processes,omitempty"`
	// Installing is true while the supervisor deploys it, for an addon
	// deployed once the cluster is Ready (addons.Addon.AfterReady, e.g.
	// ingress): such an addon does not make the cluster unhealthy yet.
	Installing bool `json:"installing,omitempty"`
	// Error is why the supervisor failed to deploy such an addon; ""
	// when it did not fail.
	Error string `json:"error,omitempty"`
}

// Deployment is the readiness of an addon's Deployment.
type Deployment struct {
	// Name is "namespace/name".
	Name string `json:"name"`
	// ReadyReplicas and Replicas are its status' counts.
	ReadyReplicas int32 `json:"readyReplicas"`
	Replicas      int32 `json:"replicas"`
	// Error is why it could not be read; "" when it was.
	Error string `json:"error,omitempty"`
}

// AddonProcess is a process of an addon.
type AddonProcess struct {
	// ID is the component's ID, "<name>" or "<name>/<node>" (components.ID).
	ID string `json:"id"`
	// Running reports whether it runs.
	Running bool `json:"running"`
}

// Table writes s as `kubernix status` prints it by default: the
// supervisor line, the damage (Damaged) if any, a row per component, a line per published port, the failed nodes and certificate
// warnings, the apiserver's state when it does not answer, then a row per
// Node and a line per addon.
func (s Status) Table(w io.Writer) error {
	name := fmt.Sprintf("%q", s.Cluster)
	var about []string
	if s.KubernetesVersion != "" {
		about = append(about, "Kubernetes "+s.KubernetesVersion)
	}
	if s.IPFamily != "" {
		about = append(about, s.IPFamily)
	}
	if s.Ephemeral {
		about = append(about, "ephemeral: down deletes it")
	}
	if len(about) > 0 {
		name += " (" + strings.Join(about, ", ") + ")"
	}
	if s.Supervisor.Running {
		common.Fprintf(w, "cluster %s: supervisor pid %d, state %s\n", name, s.Supervisor.PID, s.StateDir)
	} else {
		common.Fprintf(w, "cluster %s: no supervisor running (state %s)\n", name, s.StateDir)
	}
	if s.Damaged != "" {
		common.Fprintf(w, "DAMAGED: %s\n  `kubernix down` still brings the cluster down from its other records; `kubernix delete` also removes its state dir\n", s.Damaged)
	}
	common.Fprintf(w, "COMPONENT\tSCOPE\tPID\tSTATE\tRESTARTS\tSINCE\tLAST FAILURE\n")
	for _, c := range s.Components {
		since := "-"
		if c.Since != nil {
			since = c.Since.Local().Format(time.DateTime)
		}
		common.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", c.Name, c.Node, pidString(c.PID), c.State, c.Restarts, since, c.lastFailure())
	}
	if err := endColumns(w); err != nil {
		return err
	}
	if line := s.networkPoliciesLine(); line != "" {
		common.Fprintf(w, "%s\n", line)
	}
	for _, p := range s.Ports {
		common.Fprintf(w, "port %s\n", p)
	}
	for _, f := range s.FailedNodes {
		common.Fprintf(w, "node %s FAILED: %s\n", f.Node, f.Reason)
	}
	for _, line := range expiryWarnings(s.ExpiringCertificates, s.Time) {
		common.Fprintf(w, "%s\n", line)
	}
	if s.CertificatesError != "" {
		common.Fprintf(w, "WARNING: certificates not checked: %s\n", s.CertificatesError)
	}
	return s.apiTable(w)
}

// apiTable writes the part of Table the apiserver answers: its state
// when it does not, else a row per Node and a line per addon.
func (s Status) apiTable(w io.Writer) error {
	switch {
	case !s.APIServer.Running:
		common.Fprintf(w, "apiserver: not running\n")
		return nil
	case s.Damaged != "":
		common.Fprintf(w, "apiserver: running, not asked (%s)\n", s.APIServer.Error)
		return nil
	case !s.APIServer.Answering:
		common.Fprintf(w, "apiserver: not answering (%s)\n", s.APIServer.Error)
		return nil
	}
	common.Fprintf(w, "NODE\tREADY\tVERSION\tINTERNAL-IP\tPOD-CIDR\n")
	for _, n := range s.Nodes {
		common.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", n.Name, n.Ready, n.KubeletVersion, strings.Join(n.internalIPs(), ","), strings.Join(n.PodCIDRs, ","))
	}
	if err := endColumns(w); err != nil {
		return err
	}
	for _, a := range s.Addons {
		common.Fprintf(w, "addon %s: %s\n", a.Name, a.health())
	}
	return nil
}

// networkPoliciesLine is the table's line on NetworkPolicies; "" when
// not known (a damaged record).
func (s Status) networkPoliciesLine() string {
	switch s.NetworkPolicies {
	case NetworkPoliciesEnforced:
		return "network policies: enforced"
	case NetworkPoliciesOff:
		return "network policies: off (network_policy = false): accepted, not enforced"
	}
	return ""
}

// endColumns ends a block of aligned columns on w (a tabwriter, see
// common.PrintOutput): the rows after it are aligned on their own.
func endColumns(w io.Writer) error {
	if f, ok := w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

func pidString(pid int) string {
	if pid <= 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

// lastFailure is the first line of the component's last failure, cut to
// 100 bytes, and when it happened, or "-".
func (c Component) lastFailure() string {
	if c.LastFailure == "" {
		return "-"
	}
	first, _, _ := strings.Cut(c.LastFailure, "\n")
	const max = 100
	if len(first) > max {
		first = first[:max-3] + "..."
	}
	at := time.Time{}
	if c.LastFailureAt != nil {
		at = *c.LastFailureAt
	}
	return fmt.Sprintf("%s: %s", at.Local().Format(time.TimeOnly), first)
}

// AddonsReady returns nil when s lists addons (the apiserver answered)
// and every one is healthy and none is still being deployed after Ready
// (Addon.Installing); else an error naming the first that is not, and
// how it stands. Scripts and tests that need every addon, the after-Ready
// ones included, poll `kubernix status -o json` for it.
func (s Status) AddonsReady() error {
	if s.Addons == nil {
		return errors.New("no addons listed: the apiserver does not answer")
	}
	for _, a := range s.Addons {
		if !a.Healthy || a.Installing {
			return fmt.Errorf("addon %s: %s", a.Name, a.health())
		}
	}
	return nil
}

// health words an addon's health: its Deployment's ready replicas (or why
// they could not be read) and whether each of its processes runs.
func (a Addon) health() string {
	var parts []string
	if a.Installing {
		parts = append(parts, "installing (deployed once the cluster is Ready)")
	}
	if a.Error != "" {
		parts = append(parts, "failed: "+a.Error)
	}
	if d := a.Deployment; d != nil {
		switch {
		case d.Error != "" && a.Installing:
			// Not applied yet, as a rule: nothing to report.
		case d.Error != "":
			parts = append(parts, d.Error)
		default:
			parts = append(parts, fmt.Sprintf("%d/%d ready", d.ReadyReplicas, d.Replicas))
		}
	}
	for _, p := range a.Processes {
		state := "running"
		if !p.Running {
			state = "not running"
		}
		parts = append(parts, p.ID+" "+state)
	}
	return strings.Join(parts, ", ")
}

// expiryWarnings words one line per expiring certificate: which file and
// identity, when (counted from now), and what to do.
func expiryWarnings(exp []Certificate, now time.Time) []string {
	var out []string
	for _, e := range exp {
		when := "expired"
		if left := e.NotAfter.Sub(now); left > 0 {
			when = "expires in " + duration.HumanDuration(left)
		}
		out = append(out, fmt.Sprintf("WARNING: certificate %s (%s) %s, at %s: `kubernix down` then `kubernix up` renews it",
			e.Path, e.CommonName, when, e.NotAfter.UTC().Format(time.RFC3339)))
	}
	return out
}

// certificates converts pki's expiries to the Status' records.
func certificates(exp []pki.Expiry) []Certificate {
	var out []Certificate
	for _, e := range exp {
		out = append(out, Certificate{Path: e.Path, CommonName: e.CommonName, NotAfter: e.NotAfter})
	}
	return out
}

// internalIPs are n's InternalIPs, or its InternalIP alone when a Status
// of before InternalIPs has only that.
func (n Node) internalIPs() []string {
	if len(n.InternalIPs) == 0 && n.InternalIP != "" {
		return []string{n.InternalIP}
	}
	return n.InternalIPs
}
