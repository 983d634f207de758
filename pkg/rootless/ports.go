package rootless

import (
	"fmt"

	"github.com/rootless-containers/rootlesskit/v2/pkg/api/client"
	"github.com/rootless-containers/rootlesskit/v2/pkg/port"
)

// PortManager returns the port driver of the rootlesskit whose API socket
// is apiSocket (<rootlesskit state dir>/api.sock), through which ports of
// the namespaces are published on the host. It errors when the socket is
// not a rootlesskit API.
func PortManager(apiSocket string) (port.Manager, error) {
	c, err := client.New(apiSocket)
	if err != nil {
		return nil, fmt.Errorf("rootlesskit API %s: %w", apiSocket, err)
	}
	return c.PortManager(), nil
}
