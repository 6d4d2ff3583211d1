// Command goguest is a Go guest for the package's benchmark and tests: the
// work of a provider's Validate (JSON decoding and encoding, maps, sorting,
// strings), many small calls and loops, as the Go compiler emits them.
// Built with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared (see goGuest).
package main

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

type machine struct {
	Name   string            `json:"name"`
	Tags   []string          `json:"tags"`
	Size   int               `json:"size"`
	Labels map[string]string `json:"labels"`
}

// work encodes, decodes and sorts n machines and returns a checksum.
//
//go:wasmexport work
func work(n int32) int32 {
	total := 0
	for i := range int(n) {
		m := machine{
			Name:   "machine-" + strconv.Itoa(i),
			Tags:   []string{"worker", "fsn1", "cx22", strconv.Itoa(i % 7)},
			Size:   i,
			Labels: map[string]string{"zone": "fsn1-dc14", "type": "cx22", "pool": "workers-" + strconv.Itoa(i%3)},
		}
		b, err := json.Marshal(m)
		if err != nil {
			return -1
		}
		var back machine
		if err := json.Unmarshal(b, &back); err != nil {
			return -2
		}
		keys := make([]string, 0, len(back.Labels))
		for k := range back.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		sort.Sort(sort.Reverse(sort.StringSlice(back.Tags)))
		total += len(b) + len(strings.Join(keys, ",")) + back.Size + len(strings.ToUpper(back.Tags[0]))
	}
	return int32(total)
}

// spin never returns: a Go loop that calls no host function.
//
//go:wasmexport spin
func spin() int32 {
	x := uint64(1)
	for {
		x = x*6364136223846793005 + 1442695040888963407
		if x == 0 {
			return int32(x)
		}
	}
}

func main() {}
