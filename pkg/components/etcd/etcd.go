// Package etcd builds the command line of the cluster's etcd: a single
// member serving clients and peers over TLS on the cluster bridge address.
// Clients and peers must present a certificate of the etcd CA
// (pki.Bundle.EtcdCA), which signs nothing but etcd's own certificates and
// the apiserver's etcd client: no certificate of the cluster CA (a
// kubelet's, kube-proxy's, the admin's, an approved CSR's) opens etcd.
package etcd

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/process"
)

// Name is the component's name.
const Name = "etcd"

// Ports etcd listens on (TCP, on Spec.IP).
const (
	ClientPort = 2379
	PeerPort   = 2380
)

// Spec is what the etcd command line is built from.
type Spec struct {
	Binary  string
	Name    string // member name
	DataDir string
	IP      netip.Addr // listen and advertise address
	PKI     *pki.Bundle
	// NoFsync runs etcd with --unsafe-no-fsync: it writes its WAL and
	// database without fsync, so a machine crash (not a crash of etcd
	// alone: the page cache survives that) may lose or corrupt its
	// data. Only for an ephemeral cluster (config.Config.Ephemeral).
	NoFsync bool
}

// ClientURL is etcd's client endpoint, as the apiserver dials it.
func (s Spec) ClientURL() string {
	return "https://" + net.JoinHostPort(s.IP.String(), strconv.Itoa(ClientPort))
}

// Describe returns etcd as a component of the control plane's first
// phase, ready once its /health answers to the apiserver's client
// certificate.
func Describe(s Spec) components.Description {
	return components.Description{
		Name: Name, Scope: config.ControlPlaneScope, Kind: components.KindProcess, Phase: boot.Infrastructure,
		Binary: Name, Command: Command(s),
		Ports: []components.Port{{Name: "client", IP: s.IP, Port: ClientPort}, {Name: "peer", IP: s.IP, Port: PeerPort}},
		Probe: components.Probe{HTTPGet: s.ClientURL() + "/health", CAFile: s.PKI.EtcdCA.Cert, Client: s.PKI.APIServerEtcdClient},
	}
}

// Command returns etcd's process.
func Command(s Spec) process.Command {
	peer := "https://" + net.JoinHostPort(s.IP.String(), strconv.Itoa(PeerPort))
	cmd := process.Command{
		Path: s.Binary,
		Args: []string{
			"--name=" + s.Name,
			"--data-dir=" + s.DataDir,
			"--listen-client-urls=" + s.ClientURL(),
			"--advertise-client-urls=" + s.ClientURL(),
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			fmt.Sprintf("--initial-cluster=%s=%s", s.Name, peer),
			"--initial-cluster-state=new",
			"--initial-cluster-token=" + s.Name,
			"--cert-file=" + s.PKI.EtcdServer.Cert,
			"--key-file=" + s.PKI.EtcdServer.Key,
			"--trusted-ca-file=" + s.PKI.EtcdCA.Cert,
			"--client-cert-auth=true",
			"--peer-cert-file=" + s.PKI.EtcdPeer.Cert,
			"--peer-key-file=" + s.PKI.EtcdPeer.Key,
			"--peer-trusted-ca-file=" + s.PKI.EtcdCA.Cert,
			"--peer-client-cert-auth=true",
			"--snapshot-count=10000",
			"--log-level=warn",
		},
	}
	if s.NoFsync {
		cmd.Args = append(cmd.Args, "--unsafe-no-fsync")
	}
	return cmd
}
