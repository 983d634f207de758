package network

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/prometheus/procfs"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Listener is a TCP socket listening, or a bound UDP socket, in this
// network namespace.
type Listener struct {
	// Addr is the local address; 0.0.0.0 or :: for a wildcard listener.
	Addr netip.Addr
	// Port is the local TCP or UDP port.
	Port int
	// Inode is the socket's inode number, which SocketOwner looks up.
	Inode uint32
}

// String renders l as "<addr>:<port>" ("[::]:6443" for IPv6).
func (l Listener) String() string { return netip.AddrPortFrom(l.Addr, uint16(l.Port)).String() }

// TCPListeners returns the IPv4 and IPv6 sockets listening on TCP port in
// the calling thread's network namespace, from the kernel's sock_diag
// netlink interface (needs no privileges). Errors name the family whose
// dump failed.
func TCPListeners(port int) ([]Listener, error) {
	return sockets("TCP", port, func(s *netlink.Socket) bool { return s.State == netlink.TCP_LISTEN })
}

// UDPSockets returns the IPv4 and IPv6 UDP sockets bound to port in the
// calling thread's network namespace, as TCPListeners does for TCP.
func UDPSockets(port int) ([]Listener, error) {
	return sockets("UDP", port, func(*netlink.Socket) bool { return true })
}

// sockets returns the sockets of proto ("TCP" or "UDP") on local port that
// keep, from sock_diag's dump of each family.
func sockets(proto string, port int, keep func(*netlink.Socket) bool) ([]Listener, error) {
	diag := netlink.SocketDiagTCP
	if proto == "UDP" {
		diag = netlink.SocketDiagUDP
	}
	var out []Listener
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		var socks []*netlink.Socket
		var err error
		for range 5 { // a dump the kernel interrupted (the table changed) is retried
			if socks, err = diag(family); !errors.Is(err, netlink.ErrDumpInterrupted) {
				break
			}
		}
		if errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.ENOENT) {
			continue // no IPv6 in this kernel
		}
		if err != nil {
			return nil, fmt.Errorf("list %s sockets (family %d): %w", proto, family, err)
		}
		for _, s := range socks {
			if !keep(s) || int(s.ID.SourcePort) != port {
				continue
			}
			addr, ok := netip.AddrFromSlice(s.ID.Source)
			if !ok {
				continue
			}
			out = append(out, Listener{Addr: addr.Unmap(), Port: port, Inode: s.INode})
		}
	}
	return out, nil
}

// PortConflicts returns the TCP listeners on port that keep a new listener
// on ip from binding it: one on ip itself or on the wildcard address (on
// any address, when ip is the wildcard).
func PortConflicts(ip netip.Addr, port int) ([]Listener, error) {
	return Conflicts("TCP", ip, port)
}

// Conflicts is PortConflicts for proto: "TCP" (listeners) or "UDP" (bound
// sockets). It errors as TCPListeners does.
func Conflicts(proto string, ip netip.Addr, port int) ([]Listener, error) {
	list := TCPListeners
	if proto == "UDP" {
		list = UDPSockets
	}
	ls, err := list(port)
	if err != nil {
		return nil, err
	}
	return conflicting(ls, ip), nil
}

// conflicting filters ls to the listeners on ip or on a wildcard address
// (all of them, when ip is a wildcard address). An IPv6 wildcard counts
// even if it is IPV6_V6ONLY (the dump does not say): most are dual-stack,
// and a false alarm is cheaper than a component that cannot bind.
func conflicting(ls []Listener, ip netip.Addr) []Listener {
	var out []Listener
	for _, l := range ls {
		if l.Addr == ip || l.Addr.IsUnspecified() || ip.IsUnspecified() {
			out = append(out, l)
		}
	}
	return out
}

// SocketOwner returns the pid and command name (comm) of a process that
// holds the socket with inode open, from /proc/<pid>/fd (prometheus/procfs);
// ok is false when none is found, e.g. when the processes of other users
// cannot be read.
func SocketOwner(inode uint32) (pid int, comm string, ok bool) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return 0, "", false
	}
	target := "socket:[" + strconv.FormatUint(uint64(inode), 10) + "]"
	for _, p := range procs {
		fds, err := p.FileDescriptorTargets()
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if fd == target {
				comm, _ := p.Comm()
				return p.PID, comm, true
			}
		}
	}
	return 0, "", false
}
