package host

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// TCPListeners returns the local addresses of the sockets listening on TCP
// port in this network namespace, from /proc/net/tcp and /proc/net/tcp6.
func TCPListeners(port int) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// sl local_address rem_address st ...; st 0A is LISTEN.
			if len(fields) < 4 || fields[3] != "0A" {
				continue
			}
			addr, p, err := parseProcAddr(fields[1])
			if err == nil && p == port {
				out = append(out, addr)
			}
		}
		f.Close()
	}
	return out, nil
}

// parseProcAddr parses /proc/net/tcp's "0100007F:1A0B" (little-endian words).
func parseProcAddr(s string) (netip.Addr, int, error) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return netip.Addr{}, 0, fmt.Errorf("bad address %q", s)
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return netip.Addr{}, 0, err
	}
	raw, err := hex.DecodeString(hexIP)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.Addr{}, 0, fmt.Errorf("bad address %q", s)
	}
	for i := 0; i < len(raw); i += 4 { // each 32-bit word is in host (little-endian) order
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	addr, _ := netip.AddrFromSlice(raw)
	return addr.Unmap(), int(port), nil
}

// PortConflicts returns the listeners on port that keep a new listener on
// ip from binding it: one on ip itself or on the wildcard address.
func PortConflicts(ip netip.Addr, port int) ([]netip.Addr, error) {
	ls, err := TCPListeners(port)
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range ls {
		if a == ip || a.IsUnspecified() {
			out = append(out, a)
		}
	}
	return out, nil
}
