// Command hcloudsim serves the Hetzner Cloud API simulator on 127.0.0.1.
//
//	go run ./examples/hetzner/hcloudsim/cmd/hcloudsim -port 8080 -token secret
//	curl -H 'Authorization: Bearer secret' http://127.0.0.1:8080/v1/locations
//
// Point a client at http://127.0.0.1:PORT/v1. GET /_sim/state shows the
// simulated cloud, GET /_sim/stats what it counted of the requests
// (hcloudsim.RequestStats); POST /_sim/faults injects a fault (see
// hcloudsim.Fault), DELETE /_sim/faults removes them. It only ever listens
// on loopback.
//
// It can be a hostile cloud (see hcloudsim.Options): random latency, 5xx
// answers, dropped connections, answers lost after the request took effect,
// a request rate limit answering 429 with
// Retry-After, and actions and boots of random length:
//
//	hcloudsim -latency-p50 200ms -latency-p99 1s -error-rate 0.05 -drop-rate 0.02 -lost-answer-rate 0.01 -rps 10 -burst 10
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
)

func main() {
	opts, port, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	s, err := hcloudsim.Start(opts, port)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("hcloudsim serving %s (token %q)\n", s.URL, opts.Token)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	_ = s.Close()
}

// parse reads the command line into the simulator's options and port.
func parse(args []string, out io.Writer) (hcloudsim.Options, int, error) {
	fs := flag.NewFlagSet("hcloudsim", flag.ContinueOnError)
	fs.SetOutput(out)
	var o hcloudsim.Options
	port := fs.Int("port", 0, "port on 127.0.0.1 (0 picks a free one)")
	fs.StringVar(&o.Token, "token", "sim-token", "API token clients must send as a bearer token")
	fs.DurationVar(&o.BootDuration, "boot", 2*time.Second, "how long a new server stays initializing (asynchronous: the create answers at once)")
	fs.DurationVar(&o.ActionDuration, "action", 500*time.Millisecond, "how long an action runs")
	fs.DurationVar(&o.DeleteDelay, "delete", 0, "how long a deleted server stays deleting (0: as -action, negative: none)")
	fs.IntVar(&o.DeleteReads, "delete-reads", 0, "if positive, a deleted server stays deleting for this many reads of it instead of -delete")
	fs.IntVar(&o.RateLimit, "rate-limit", 3600, "requests per hour before 429s")
	// The hostile cloud.
	fs.DurationVar(&o.LatencyP50, "latency-p50", 0, "median of a random (log-normal) delay of every API request (0: none)")
	fs.DurationVar(&o.LatencyP99, "latency-p99", 0, "99th percentile of that delay (<= -latency-p50: a constant -latency-p50)")
	fs.Float64Var(&o.ErrorRate, "error-rate", 0, "fraction (0..1) of API requests answered 500/502/503 without effect")
	fs.Float64Var(&o.DropRate, "drop-rate", 0, "fraction (0..1) of API requests whose connection is closed without an answer or effect")
	fs.Float64Var(&o.LostAnswerRate, "lost-answer-rate", 0, "fraction (0..1) of API requests that take effect and whose connection is then closed without an answer")
	fs.Float64Var(&o.RequestsPerSecond, "rps", 0, "token bucket over all API requests, per second (0: none); past it 429 with Retry-After")
	fs.IntVar(&o.Burst, "burst", 0, "size of the -rps bucket (0: -rps rounded up)")
	fs.DurationVar(&o.ActionDurationP99, "action-p99", 0, "if above -action, actions last a random (log-normal) time with median -action and this 99th percentile")
	fs.DurationVar(&o.BootDurationP99, "boot-p99", 0, "if above -boot, boots last a random time with median -boot and this 99th percentile")
	fs.Int64Var(&o.Seed, "seed", 0, "seed of the random choices, for a reproducible run (0: random)")
	if err := fs.Parse(args); err != nil {
		return o, 0, err
	}
	if fs.NArg() > 0 {
		return o, 0, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case o.LatencyP99 > 0 && o.LatencyP50 <= 0:
		return o, 0, errors.New("-latency-p99 needs -latency-p50")
	case o.ErrorRate < 0 || o.ErrorRate > 1:
		return o, 0, fmt.Errorf("-error-rate %v is not in 0..1", o.ErrorRate)
	case o.DropRate < 0 || o.DropRate > 1:
		return o, 0, fmt.Errorf("-drop-rate %v is not in 0..1", o.DropRate)
	case o.LostAnswerRate < 0 || o.LostAnswerRate > 1:
		return o, 0, fmt.Errorf("-lost-answer-rate %v is not in 0..1", o.LostAnswerRate)
	case o.RequestsPerSecond < 0 || o.Burst < 0:
		return o, 0, errors.New("-rps and -burst cannot be negative")
	}
	return o, *port, nil
}
