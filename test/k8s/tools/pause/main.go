// The pod sandbox's process (what registry.k8s.io/pause provides): it holds the pod's
// namespaces, reaps the zombies it inherits as the pod's init, and exits 0 on SIGINT or
// SIGTERM. Built static, into an image of its own (test/k8s/cluster/images.sh).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
