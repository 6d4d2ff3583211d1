// Command dosim serves the DigitalOcean API simulator on 127.0.0.1.
//
//	cd examples/digitalocean && go run ./dosim/cmd/dosim -port 8080 -token secret
//	curl -H 'Authorization: Bearer secret' http://127.0.0.1:8080/v2/regions
//
// A provider that calls https://api.digitalocean.com reaches it through a
// host alias (the policy's hostAliases, or the CLI's
// --alias api.digitalocean.com=http://127.0.0.1:8080). It only ever
// listens on loopback.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wasmprov/wasmprov/examples/digitalocean/dosim"
)

func main() {
	port := flag.Int("port", 0, "port on 127.0.0.1 (0 picks a free one)")
	token := flag.String("token", "sim-token", "API token clients must send as a bearer token")
	boot := flag.Duration("boot", 2*time.Second, "how long a new droplet stays new")
	tagLag := flag.Bool("tag-lag", false, "apply a droplet's tags only once it is active")
	hourly := flag.Int("rate-limit", 5000, "requests per hour before 429s")
	burst := flag.Int("burst", 250, "requests per minute before 429s")
	flag.Parse()
	s, err := dosim.Start(dosim.Options{Token: *token, BootDuration: *boot, TagLag: *tagLag, HourlyLimit: *hourly, BurstLimit: *burst}, *port)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("dosim serving %s (token %q)\n", s.URL, *token)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	_ = s.Close()
}
