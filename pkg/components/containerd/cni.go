package containerd

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
)

// CNIVersion is the CNI spec version of the rendered network configuration.
const CNIVersion = "1.0.0"

// maxIfaceName is the longest Linux network interface name (IFNAMSIZ - 1).
const maxIfaceName = 15

// cniName is what libcni accepts as a network name.
var cniName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`)

// CNIConfig describes a node's pod network: a Linux bridge with host-local
// IPAM over the node's pod CIDR, and port mapping for hostPort.
type CNIConfig struct {
	// Name is the network name, e.g. "kubernix".
	Name string
	// Bridge is the bridge interface name, at most 15 bytes, e.g. "kbx0".
	Bridge string
	// PodCIDR is the node's pod subnet, e.g. "10.244.1.0/24"; the bridge
	// gets its first address when Gateway is set.
	PodCIDR string
	// PodCIDR6 is the node's second pod subnet in a dual-stack cluster,
	// of the other IP family (IPv6), e.g. "fd00:0:0:8000::/64"; "" for
	// a single-stack one. Each pod gets an address of each subnet.
	PodCIDR6 string
	// Gateway gives the bridge the gateway address, so pods route through
	// the host.
	Gateway bool
	// IPMasq masquerades traffic from pods that leaves the pod subnet.
	IPMasq bool
	// DataDir is where host-local records its allocations; absolute.
	DataDir string
	// MTU of the bridge and the pods' interfaces, in bytes; 0 lets the bridge
	// plugin choose.
	MTU int
}

// The conflist's JSON shape; see the CNI spec and the bridge, host-local and
// portmap plugins' documentation.
type (
	cniConfList struct {
		CNIVersion string `json:"cniVersion"`
		Name       string `json:"name"`
		Plugins    []any  `json:"plugins"`
	}
	cniBridge struct {
		Type        string  `json:"type"`
		Bridge      string  `json:"bridge"`
		IsGateway   bool    `json:"isGateway"`
		IPMasq      bool    `json:"ipMasq"`
		HairpinMode bool    `json:"hairpinMode"`
		MTU         int     `json:"mtu,omitempty"`
		IPAM        cniIPAM `json:"ipam"`
	}
	cniIPAM struct {
		Type    string       `json:"type"`
		Ranges  [][]cniRange `json:"ranges"`
		Routes  []cniRoute   `json:"routes"`
		DataDir string       `json:"dataDir"`
	}
	cniRange struct {
		Subnet string `json:"subnet"`
	}
	cniRoute struct {
		Dst string `json:"dst"`
	}
	cniPortmap struct {
		Type         string          `json:"type"`
		Capabilities map[string]bool `json:"capabilities"`
		SNAT         bool            `json:"snat"`
	}
)

// RenderCNI returns the network configuration list (conflist) for c, as
// indented JSON ending in a newline: a bridge plugin with host-local IPAM
// and a default route, then portmap. It returns every problem with c at
// once, joined, when c is invalid.
func RenderCNI(c CNIConfig) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var ranges [][]cniRange
	var routes []cniRoute
	for _, cidr := range []string{c.PodCIDR, c.PodCIDR6} {
		if cidr == "" {
			continue
		}
		prefix := netip.MustParsePrefix(cidr)
		ranges = append(ranges, []cniRange{{Subnet: prefix.String()}})
		defaultRoute := "0.0.0.0/0"
		if prefix.Addr().Is6() {
			defaultRoute = "::/0"
		}
		routes = append(routes, cniRoute{Dst: defaultRoute})
	}
	list := cniConfList{
		CNIVersion: CNIVersion,
		Name:       c.Name,
		Plugins: []any{
			cniBridge{
				Type:        "bridge",
				Bridge:      c.Bridge,
				IsGateway:   c.Gateway,
				IPMasq:      c.IPMasq,
				HairpinMode: true,
				MTU:         c.MTU,
				IPAM: cniIPAM{
					Type:    "host-local",
					Ranges:  ranges,
					Routes:  routes,
					DataDir: c.DataDir,
				},
			},
			cniPortmap{
				Type:         "portmap",
				Capabilities: map[string]bool{"portMappings": true},
				SNAT:         true,
			},
		},
	}
	out, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render CNI config: %w", err)
	}
	return append(out, '\n'), nil
}

// Validate reports every problem with c at once, joined.
func (c CNIConfig) Validate() error {
	var errs []error
	if !cniName.MatchString(c.Name) {
		errs = append(errs, fmt.Errorf("name %q: want letters, digits, '_', '.' or '-', starting with a letter or digit", c.Name))
	}
	if err := checkIfaceName(c.Bridge); err != nil {
		errs = append(errs, fmt.Errorf("bridge: %w", err))
	}
	p, err := netip.ParsePrefix(c.PodCIDR)
	if err != nil {
		errs = append(errs, fmt.Errorf("pod CIDR: %w", err))
	} else if p != p.Masked() {
		errs = append(errs, fmt.Errorf("pod CIDR %q: host bits set, want %s", c.PodCIDR, p.Masked()))
	}
	if c.PodCIDR6 != "" {
		p6, err6 := netip.ParsePrefix(c.PodCIDR6)
		switch {
		case err6 != nil:
			errs = append(errs, fmt.Errorf("second pod CIDR: %w", err6))
		case p6 != p6.Masked():
			errs = append(errs, fmt.Errorf("second pod CIDR %q: host bits set, want %s", c.PodCIDR6, p6.Masked()))
		case err == nil && p6.Addr().Is4() == p.Addr().Is4():
			errs = append(errs, fmt.Errorf("pod CIDRs %s and %s: of the same IP family", p, p6))
		}
	}
	if !filepath.IsAbs(c.DataDir) {
		errs = append(errs, fmt.Errorf("data dir %q: not an absolute path", c.DataDir))
	}
	if c.MTU != 0 && (c.MTU < 68 || c.MTU > 65535) {
		errs = append(errs, fmt.Errorf("MTU %d: want 0 or 68..65535", c.MTU))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid CNI config: %w", err)
	}
	return nil
}

// checkIfaceName checks that name is a valid Linux interface name.
func checkIfaceName(name string) error {
	switch {
	case name == "":
		return errors.New("empty interface name")
	case len(name) > maxIfaceName:
		return fmt.Errorf("interface name %q: longer than %d bytes", name, maxIfaceName)
	case name == "." || name == "..":
		return fmt.Errorf("interface name %q: not allowed", name)
	}
	for _, r := range name {
		if r == '/' || r == ':' || r <= ' ' || r > '~' {
			return fmt.Errorf("interface name %q: contains %q", name, r)
		}
	}
	return nil
}
