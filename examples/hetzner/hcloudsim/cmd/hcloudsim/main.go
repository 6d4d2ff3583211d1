// Command hcloudsim serves the Hetzner Cloud API simulator on 127.0.0.1.
//
//	go run ./examples/hetzner/hcloudsim/cmd/hcloudsim -port 8080 -token secret
//	curl -H 'Authorization: Bearer secret' http://127.0.0.1:8080/v1/locations
//
// Point a client at http://127.0.0.1:PORT/v1. GET /_sim/state shows the
// simulated cloud; POST /_sim/faults injects a fault (see hcloudsim.Fault),
// DELETE /_sim/faults removes them. It only ever listens on loopback.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
)

func main() {
	port := flag.Int("port", 0, "port on 127.0.0.1 (0 picks a free one)")
	token := flag.String("token", "sim-token", "API token clients must send as a bearer token")
	boot := flag.Duration("boot", 2*time.Second, "how long a new server stays initializing")
	actions := flag.Duration("action", 500*time.Millisecond, "how long an action runs")
	deleteDelay := flag.Duration("delete", 0, "how long a deleted server stays deleting (0: as -action, negative: none)")
	rate := flag.Int("rate-limit", 3600, "requests per hour before 429s")
	flag.Parse()
	s, err := hcloudsim.Start(hcloudsim.Options{Token: *token, BootDuration: *boot, ActionDuration: *actions,
		DeleteDelay: *deleteDelay, RateLimit: *rate}, *port)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("hcloudsim serving %s (token %q)\n", s.URL, *token)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	_ = s.Close()
}
