package kubeconfig

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Clientset returns a client of the API server and identity of the
// kubeconfig file path (its current context), which sends userAgent.
// kubernix's own supervised processes (the cloud controller, the
// NetworkPolicy agents) get their identity this way. It errors when the
// file cannot be read or holds no usable context.
func Clientset(path, userAgent string) (*kubernetes.Clientset, error) {
	rc, err := RESTConfig(path, userAgent)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(rc)
}

// RESTConfig is the client configuration Clientset makes its client of,
// for the clients of other API groups (e.g. the Gateway API's); it errors
// as Clientset does.
func RESTConfig(path, userAgent string) (*rest.Config, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	rc.UserAgent = userAgent
	return rc, nil
}
