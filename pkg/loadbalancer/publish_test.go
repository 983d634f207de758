package loadbalancer

import (
	"context"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rootless-containers/rootlesskit/v2/pkg/port"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// fakePorts is rootlesskit's port manager as a list.
type fakePorts struct {
	next int
	have []port.Status
}

func (f *fakePorts) AddPort(_ context.Context, s port.Spec) (*port.Status, error) {
	f.next++
	f.have = append(f.have, port.Status{ID: f.next, Spec: s})
	return &f.have[len(f.have)-1], nil
}

func (f *fakePorts) ListPorts(context.Context) ([]port.Status, error) {
	return slices.Clone(f.have), nil
}

func (f *fakePorts) RemovePort(_ context.Context, id int) error {
	f.have = slices.DeleteFunc(f.have, func(s port.Status) bool { return s.ID == id })
	return nil
}

// forwards lists f's forwards as "parent->child/proto", sorted.
func (f *fakePorts) forwards() []string {
	var out []string
	for _, s := range f.have {
		out = append(out, s.Spec.ParentIP+":"+strconv.Itoa(s.Spec.ParentPort)+"->"+s.Spec.ChildIP+":"+strconv.Itoa(s.Spec.ChildPort)+"/"+s.Spec.Proto)
	}
	slices.Sort(out)
	return out
}

func ports(specs ...string) []v1.ServicePort {
	var out []v1.ServicePort
	for _, s := range specs {
		num, proto, _ := strings.Cut(s, "/")
		p, _ := strconv.Atoi(num)
		out = append(out, v1.ServicePort{Port: int32(p), Protocol: v1.Protocol(proto)})
	}
	return out
}

func TestRootlessPortsPublish(t *testing.T) {
	ip := netip.MustParseAddr("10.9.32.1")
	other := "10.9.32.2"
	tests := []struct {
		name    string
		have    []port.Spec
		ports   []v1.ServicePort
		want    []string
		wantErr string
	}{
		{name: "new ports", ports: ports("8080/TCP", "5353/UDP"),
			want: []string{"127.0.0.1:5353->10.9.32.1:5353/udp", "127.0.0.1:8080->10.9.32.1:8080/tcp"}},
		{name: "kept, stale removed, others untouched",
			have: []port.Spec{
				{Proto: "tcp", ParentIP: "127.0.0.1", ParentPort: 8080, ChildIP: ip.String(), ChildPort: 8080},
				{Proto: "tcp", ParentIP: "127.0.0.1", ParentPort: 9090, ChildIP: ip.String(), ChildPort: 9090},
				{Proto: "tcp", ParentIP: "127.0.0.1", ParentPort: 7070, ChildIP: other, ChildPort: 7070},
			},
			ports: ports("8080/TCP"),
			want:  []string{"127.0.0.1:7070->10.9.32.2:7070/tcp", "127.0.0.1:8080->10.9.32.1:8080/tcp"}},
		{name: "ports below 1024 8000 above", ports: ports("80/TCP", "443/TCP", "1023/UDP", "1024/TCP"),
			want: []string{"127.0.0.1:1024->10.9.32.1:1024/tcp", "127.0.0.1:8080->10.9.32.1:80/tcp", "127.0.0.1:8443->10.9.32.1:443/tcp", "127.0.0.1:9023->10.9.32.1:1023/udp"}},
		{name: "SCTP refused", ports: ports("8080/TCP", "9999/SCTP"),
			want: []string{"127.0.0.1:8080->10.9.32.1:8080/tcp"}, wantErr: "port 9999/SCTP: only TCP and UDP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakePorts{}
			for _, s := range tt.have {
				_, _ = f.AddPort(context.Background(), s)
			}
			r := &RootlessPorts{ports: f}
			_, err := r.Publish(context.Background(), ip, tt.ports)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Publish error %v, want %q", err, tt.wantErr)
			}
			if got := f.forwards(); !slices.Equal(got, tt.want) {
				t.Errorf("forwards %q, want %q", got, tt.want)
			}
			if err := r.Unpublish(context.Background(), ip); err != nil {
				t.Fatal(err)
			}
			for _, fw := range f.forwards() {
				if strings.Contains(fw, "->"+ip.String()+":") {
					t.Errorf("Unpublish left %s", fw)
				}
			}
		})
	}
}

// TestPoolPublishes checks that a publishing pool says where in the
// status and an Event, and unpublishes on delete.
func TestPoolPublishes(t *testing.T) {
	f := &fakePorts{}
	p, err := NewPool([]netip.Prefix{netip.MustParsePrefix("10.9.32.0/30")}, lister(t))
	if err != nil {
		t.Fatal(err)
	}
	events := record.NewFakeRecorder(10)
	p.PublishWith(&RootlessPorts{ports: f}, events)
	s := svc("a", "", "")
	s.Spec.Ports = ports("8080/TCP")
	st, err := p.EnsureLoadBalancer(context.Background(), "c", s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Ingress) != 2 || st.Ingress[0].IP != "10.9.32.1" || st.Ingress[1].Hostname != "localhost" {
		t.Errorf("status %+v, want the IP and hostname localhost", st.Ingress)
	}
	if ev := <-events.Events; !strings.Contains(ev, "Published LoadBalancer IP 10.9.32.1 published on the host at 127.0.0.1:8080/TCP") {
		t.Errorf("event %q", ev)
	}
	if err := p.EnsureLoadBalancerDeleted(context.Background(), "c", s); err != nil {
		t.Fatal(err)
	}
	if len(f.have) != 0 {
		t.Errorf("after delete the forwards %q remain", f.forwards())
	}
}
