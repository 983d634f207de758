package components

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/process"
)

// Kind says what runs a component.
type Kind string

// The kinds of component.
const (
	// KindProcess is an upstream process the supervisor starts, probes,
	// restarts and stops (Proc).
	KindProcess Kind = "process"
	// KindGate has no process: it is ready once its probe passes (Gate).
	KindGate Kind = "gate"
	// KindTask is work the supervisor does once, in its own process, such
	// as applying RBAC bindings or an addon's manifest; the cluster
	// package supplies what it does, by the component's name.
	KindTask Kind = "task"
)

// SelfBinary is the Binary of a component that runs this kubernix binary
// (os.Executable), such as the cloud controller: found by being run, not
// by the doctor.
const SelfBinary = "kubernix"

// Description is one component of a cluster as data: everything `up`
// starts it from, `up --dry-run` prints, and `down` (also after the
// supervisor was killed), `status` and `logs` list. The per-component
// packages build one from a typed spec, as a pure function; the cluster
// package only maps its plan to specs and the descriptions to the
// registry (with the few behaviours that need the live cluster, e.g.
// registering a Node).
type Description struct {
	// Name is the component, e.g. "kubelet": its log is <Name>.log and
	// its run dir <Name> in Scope (config.Paths.Log, Run).
	Name string
	// Scope is config.ControlPlaneScope or the node's name.
	Scope string
	Kind  Kind
	Phase boot.Phase
	// Needs are the IDs (see ID) of the components it waits for, of its
	// own phase or earlier ones; empty for none.
	Needs []string
	// AfterEarlierPhases makes it wait, besides Needs, for every
	// component of the earlier phases (an addon's readiness).
	AfterEarlierPhases bool
	// Binary is the name of the binary Command runs, as the doctor finds
	// it (bins.Required), e.g. "kube-apiserver"; "" without a process.
	Binary string
	// Command is the process (KindProcess). Its Name, Scope, LogFile and
	// RunDir are set by Locate. Its Env holds what the component asks
	// for (KEY=VALUE), on top of the defined environment; Environ gives
	// the whole.
	Command process.Command
	// InSandbox marks a node process that runs inside its node's
	// sandbox: the node's executor wraps its command at every start.
	InSandbox bool
	// Files are rendered before every start, in order.
	Files []File
	// Dirs are created (config.StateDirMode) before every start.
	Dirs []string
	// Probe decides readiness (and liveness, unless Liveness is set).
	Probe Probe
	// Liveness, if set, is the check for a running process instead of
	// Probe: for a process whose readiness also waits for others.
	Liveness *Probe
	// Ports are the TCP ports it listens on, in the network namespace it
	// runs in: the caller's (the host's; rootless, rootlesskit's), or its
	// node sandbox's when InSandbox and the node has one. Preflight checks
	// those in the caller's namespace before anything starts.
	Ports []Port
	// DrainCRI is the CRI socket (containerd's) through which every pod
	// and container is removed before the process is stopped, also by a
	// cleanup after a crash; "" for none.
	DrainCRI string
	// Summary says in a line what a task does, for the plan.
	Summary string
	// Manifest is the YAML an addon task applies; Available the
	// "namespace/name" of the Deployment whose availability an addon's
	// readiness task waits for.
	Manifest  []byte `json:"-"`
	Available string
}

// Port is a TCP port a component listens on.
type Port struct {
	// Name says which of the component's listeners it is, e.g. "client"
	// for etcd's; "" for its only one.
	Name string
	// IP is the address it binds.
	IP netip.Addr
	// Port is the TCP port, 1-65535.
	Port int
	// Flag is the kubernix flag that moves it, e.g. "--apiserver-port";
	// "" for a port kubernix fixes (most are the upstream component's
	// default).
	Flag string
}

// File is a file a component renders before it starts.
type File struct {
	// Path is absolute.
	Path    string
	Content []byte
	// Link, if set, makes Path a symbolic link to Link instead of a file
	// holding Content.
	Link string
	// Mode is its permission bits; 0 means config.StateFileMode (0600),
	// as a rendered file may hold secrets (config_patches, registry
	// credentials). See FileMode.
	Mode os.FileMode
}

// FileMode is the mode f is written with: Mode, else config.StateFileMode.
func (f File) FileMode() os.FileMode {
	if f.Mode == 0 {
		return config.StateFileMode
	}
	return f.Mode
}

// Probe is a readiness or liveness check as data. Exactly one of HTTPGet
// and CRI is set, or none for a component whose check the cluster
// package supplies (Hooks.Probe).
type Probe struct {
	// HTTPGet is a URL that answers 2xx once ready (process.HTTPGet).
	HTTPGet string
	// CAFile verifies an https HTTPGet; Client is the certificate
	// presented, if any.
	CAFile string
	Client pki.Pair
	// CRI is a containerd socket whose CRI Version call answers once ready.
	CRI string
	// Then describes, for the plan, the check the cluster package adds
	// after these (Hooks.Ready), or makes alone; "" for none.
	Then string
}

// String shows the probe's own check for the plan, e.g. "GET https://10.0.0.1:6443/livez".
func (p Probe) String() string {
	switch {
	case p.HTTPGet != "":
		s := "GET " + p.HTTPGet
		if p.CAFile != "" {
			s += " (CA " + p.CAFile
			if p.Client.Cert != "" {
				s += ", client " + p.Client.Cert
			}
			s += ")"
		}
		return s
	case p.CRI != "":
		return "CRI Version on " + p.CRI
	}
	return ""
}

// Describe shows the whole readiness check: String, then Then.
func (p Probe) Describe() string {
	parts := slices.DeleteFunc([]string{p.String(), p.Then}, func(s string) bool { return s == "" })
	return strings.Join(parts, ", then ")
}

// ID is the component's name in the boot sequence (boot.Sequence): Name for the control
// plane, "<Name>@<node>" for a node's.
func (d Description) ID() string { return ID(d.Name, d.Scope) }

// ID is the boot-sequence name of component name in scope (see Description.ID).
func ID(name, scope string) string {
	if scope == config.ControlPlaneScope || scope == "" {
		return name
	}
	return name + "@" + scope
}

// Locate sets the paths of d's process in the cluster at paths: its log
// file, run dir and scope.
func (d *Description) Locate(paths config.Paths) {
	d.Command.Name = d.Name
	d.Command.Scope = d.Scope
	d.Command.LogFile = paths.Log(d.Scope, d.Name)
	d.Command.RunDir = paths.Run(d.Scope, d.Name)
}

// Environ is the whole environment of d's process: the defined one
// (process.Environ: the supervisor's PATH, HOME, TZ and proxies, nothing
// else of it), then Command.Env, whose entries replace those of the same
// key. A PATH taken from the supervisor gets /usr/sbin and /sbin appended
// where it lacks them (bins.SystemPath); one Command.Env sets is kept as
// is.
func (d Description) Environ() []string {
	return process.Environ(bins.SystemEnviron(os.Environ()), d.Command.Env...)
}

// Processes returns the descriptions of KindProcess, in order.
func Processes(ds []Description) []Description {
	return slices.DeleteFunc(slices.Clone(ds), func(d Description) bool { return d.Kind != KindProcess })
}

// ResolveNeeds returns ds with the Needs of each component that waits
// AfterEarlierPhases extended by the IDs of every component of the
// earlier phases, in order, each once.
func ResolveNeeds(ds []Description) []Description {
	out := slices.Clone(ds)
	for i, d := range out {
		if !d.AfterEarlierPhases {
			continue
		}
		needs := slices.Clone(d.Needs)
		for _, e := range ds {
			if e.Phase < d.Phase && !slices.Contains(needs, e.ID()) {
				needs = append(needs, e.ID())
			}
		}
		out[i].Needs = needs
	}
	return out
}

// StartOrder returns ds sorted so that each comes after what it waits
// for (its Needs, resolved by ResolveNeeds), phase by phase, ties kept in
// the given order. It errors on a need that is not in ds or on a cycle.
func StartOrder(ds []Description) ([]Description, error) {
	byID := map[string]Description{}
	needs := map[string][]string{}
	for _, d := range ResolveNeeds(ds) {
		needs[d.ID()] = d.Needs
	}
	var ids []string // by phase, ties in the given order
	for _, ph := range boot.Phases {
		for _, d := range ds {
			if d.Phase == ph {
				byID[d.ID()] = d
				ids = append(ids, d.ID())
			}
		}
	}
	for _, d := range ds {
		for _, n := range needs[d.ID()] {
			if _, ok := byID[n]; !ok {
				return nil, fmt.Errorf("component %s needs %s, which is not described", d.ID(), n)
			}
		}
	}
	order, err := boot.Order(ids, func(id string) []string { return needs[id] })
	if err != nil {
		return nil, err
	}
	out := make([]Description, len(order))
	for i, id := range order {
		out[i] = byID[id]
	}
	return out, nil
}

// StopOrder returns the processes of ds in the order a cleanup stops
// them: the start order reversed, so each stops after everything that
// needs it.
func StopOrder(ds []Description) ([]Description, error) {
	order, err := StartOrder(ds)
	if err != nil {
		return nil, err
	}
	slices.Reverse(order)
	return Processes(order), nil
}

// RenderYAML marshals a component's config object (a KubeletConfiguration,
// say) as YAML under a "generated by kubernix" line; what names it in the
// error.
func RenderYAML(obj any, what string) ([]byte, error) {
	b, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", what, err)
	}
	return append([]byte("# generated by kubernix, do not edit\n"), b...), nil
}

// ControllerArgs are the flags kube-controller-manager and kube-scheduler
// share: their kubeconfig (also for delegated authentication and
// authorization), and their secure port on ip with the serving pair,
// trusting clientCA for client certificates and requestHeaderCA alone
// for users asserted in request headers (the front-proxy CA).
func ControllerArgs(kubeconfig string, ip netip.Addr, port int, serving pki.Pair, clientCA, requestHeaderCA string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=" + ip.String(),
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + serving.Cert,
		"--tls-private-key-file=" + serving.Key,
		"--client-ca-file=" + clientCA,
		"--requestheader-client-ca-file=" + requestHeaderCA,
	}
}

// HealthURL is the /healthz endpoint a component serves on ip:port, over
// https when secure.
func HealthURL(ip netip.Addr, port int, secure bool) string {
	scheme := "http"
	if secure {
		scheme = "https"
	}
	return scheme + "://" + netip.AddrPortFrom(ip, uint16(port)).String() + "/healthz"
}
