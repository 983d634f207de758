// Command kube is a multi-call binary holding the pinned upstream server
// components kubernix runs: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kubelet and kube-proxy, all from k8s.io/kubernetes v1.37.2
// and go.etcd.io/etcd/server/v3 as required by it.
//
// It picks the component from the name it was invoked under (argv[0], as
// through the symlinks `make bins` creates) or, failing that, from its first
// argument: `kube kube-apiserver --version`.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	_ "time/tzdata" // for CronJob time zone support, as upstream's mains do

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as upstream's mains do
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream's mains do
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as upstream's mains do
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

// cobraMains maps each Kubernetes component name to its upstream command constructor.
var cobraMains = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
	"kube-proxy":              proxy.NewProxyCommand,
}

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args
	if !known(name) && len(os.Args) > 1 && known(os.Args[1]) {
		name, args = os.Args[1], os.Args[1:]
	}
	if name == "etcd" {
		// etcdmain.Main reads os.Args itself and exits on its own.
		os.Args = args
		etcdmain.Main(args)
		return
	}
	newCommand, ok := cobraMains[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "kube: unknown component %q; invoke as, or pass first, one of: %v\n", name, names())
		os.Exit(2)
	}
	command := newCommand()
	command.SetArgs(args[1:])
	os.Exit(cli.Run(command))
}

func known(name string) bool {
	_, ok := cobraMains[name]
	return ok || name == "etcd"
}

func names() []string {
	out := []string{"etcd"}
	for n := range cobraMains {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
