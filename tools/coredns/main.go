// Command coredns is CoreDNS built from its module with the few plugins
// the real node's cluster DNS needs: Services and pods by name, from the
// API server. The full build (every cloud's DNS, tracing, ...) compiles
// several times longer for nothing the tests use.
package main

import (
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"

	"github.com/coredns/coredns/coremain"
)

func main() { coremain.Run() }
