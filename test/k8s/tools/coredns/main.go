// The test cluster's DNS: CoreDNS as a library with only the plugins the one-node cluster's
// Corefile uses (test/k8s/cluster/coredns.yaml), so that the build stays a few CPU-minutes
// instead of CoreDNS's full plugin set with every cloud provider's SDK. It answers cluster names
// only: no forward plugin, so no query leaves the machine.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The order the plugins run in, as CoreDNS's own plugin.cfg orders them.
func init() {
	dnsserver.Directives = []string{"ready", "health", "errors", "cache", "kubernetes"}
}

func main() { coremain.Run() }
