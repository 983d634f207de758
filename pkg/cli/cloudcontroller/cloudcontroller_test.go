package cloudcontroller

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubernix/kubernix/pkg/config"
)

func TestOptionsPools(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    string // the pools, as fmt prints them
		wantErr string
	}{
		{name: "one IPv4", args: []string{"--pool=10.10.32.0/20"}, want: "[10.10.32.0/20]"},
		{name: "comma-separated", args: []string{"--pool=10.10.32.0/20,fd12:3456:789a:2::/112"}, want: "[10.10.32.0/20 fd12:3456:789a:2::/112]"},
		{name: "repeated, IPv6 first", args: []string{"--pool=fd12:3456:789a:2::/112", "--pool=10.10.32.0/20"}, want: "[fd12:3456:789a:2::/112 10.10.32.0/20]"},
		{name: "host bits dropped", args: []string{"--pool=10.10.32.7/20"}, want: "[10.10.32.0/20]"},
		{name: "two IPv4", args: []string{"--pool=10.10.32.0/20,10.10.64.0/20"}, wantErr: "both IPv4"},
		{name: "not a prefix", args: []string{"--pool=10.10.32.0"}, wantErr: `LoadBalancer pool "10.10.32.0"`},
		{name: "IPv6 too small", args: []string{"--pool=fd12::/127"}, wantErr: "/64 to /126"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f flags
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			f.bind(fs)
			if err := fs.Parse(append(tt.args, "--healthz=10.10.0.1:10258")); err != nil {
				t.Fatal(err)
			}
			opts, err := f.options()
			if tt.wantErr != "" {
				if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("options() error %v, want ErrInvalid and %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(opts.Pools); got != tt.want {
				t.Errorf("pools %s, want %s", got, tt.want)
			}
		})
	}
}

// TestGatewayTemplate checks --gateway-template: absent is off, else
// namespace/name or an ErrInvalid naming the flag.
func TestGatewayTemplate(t *testing.T) {
	for _, tt := range []struct {
		arg, want string
		bad       bool
	}{
		{arg: "", want: "/"},
		{arg: "kube-system/traefik", want: "kube-system/traefik"},
		{arg: "traefik", bad: true},
		{arg: "/traefik", bad: true},
		{arg: "a/b/c", bad: true},
	} {
		f := flags{gateways: tt.arg}
		got, err := f.gatewayTemplate()
		if tt.bad {
			if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "--gateway-template") {
				t.Errorf("%q: error %v, want ErrInvalid naming --gateway-template", tt.arg, err)
			}
			continue
		}
		if err != nil || got.String() != tt.want {
			t.Errorf("%q: %v, %v; want %s", tt.arg, got, err, tt.want)
		}
	}
}
