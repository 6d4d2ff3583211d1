//go:build wasip1

// Command extism is benchprov as an Extism plugin, built with the standard
// Go toolchain (the Extism Go PDK is not on the module proxy, so its few
// imports are declared here by hand):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o benchprov-extism.wasm .
//
// Exports: empty (does nothing), validate (input: MachineSpec JSON),
// create (input: Machine JSON; output: Instance JSON). Each returns 0 on
// success, 1 after error_set.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/wasmprov/wasmprov/bench/benchprov"
)

func main() {}

//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env input_load_u64
func inputLoadU64(off uint64) uint64

//go:wasmimport extism:host/env input_load_u8
func inputLoadU8(off uint64) uint32

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env free
func free(off uint64)

//go:wasmimport extism:host/env length
func length(off uint64) uint64

//go:wasmimport extism:host/env load_u64
func loadU64(off uint64) uint64

//go:wasmimport extism:host/env load_u8
func loadU8(off uint64) uint32

//go:wasmimport extism:host/env store_u64
func storeU64(off uint64, v uint64)

//go:wasmimport extism:host/env store_u8
func storeU8(off uint64, v uint32)

//go:wasmimport extism:host/env output_set
func outputSet(off, n uint64)

//go:wasmimport extism:host/env error_set
func errorSet(off uint64)

//go:wasmimport extism:host/env http_request
func httpRequest(req, body uint64) uint64

//go:wasmimport extism:host/env http_status_code
func httpStatusCode() int32

// input copies the call's input out of the Extism kernel's memory, 8 bytes
// per host call as the Extism PDKs do.
func input() []byte {
	n := inputLength()
	b := make([]byte, n)
	var i uint64
	for ; i+8 <= n; i += 8 {
		v := inputLoadU64(i)
		for j := uint64(0); j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for ; i < n; i++ {
		b[i] = byte(inputLoadU8(i))
	}
	return b
}

// store copies b into a new block of kernel memory.
func store(b []byte) uint64 {
	off := alloc(uint64(len(b)))
	n := uint64(len(b))
	var i uint64
	for ; i+8 <= n; i += 8 {
		var v uint64
		for j := uint64(0); j < 8; j++ {
			v |= uint64(b[i+j]) << (8 * j)
		}
		storeU64(off+i, v)
	}
	for ; i < n; i++ {
		storeU8(off+i, uint32(b[i]))
	}
	return off
}

// load copies a block of kernel memory.
func load(off uint64) []byte {
	n := length(off)
	b := make([]byte, n)
	var i uint64
	for ; i+8 <= n; i += 8 {
		v := loadU64(off + i)
		for j := uint64(0); j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for ; i < n; i++ {
		b[i] = byte(loadU8(off + i))
	}
	return b
}

func fail(err error) int32 {
	errorSet(store([]byte(err.Error())))
	return 1
}

//go:wasmexport empty
func empty() int32 { return 0 }

//go:wasmexport validate
func validate() int32 {
	var spec benchprov.MachineSpec
	if err := json.Unmarshal(input(), &spec); err != nil {
		return fail(err)
	}
	if err := benchprov.Validate(spec.ProviderSpec.Value); err != nil {
		return fail(err)
	}
	return 0
}

//go:wasmexport create
func create() int32 {
	var m benchprov.Machine
	if err := json.Unmarshal(input(), &m); err != nil {
		return fail(err)
	}
	client := &http.Client{Transport: transport{}}
	inst, err := benchprov.Create(context.Background(), client, m.ObjectMeta.Name, m.ObjectMeta.UID, m.Spec.ProviderSpec.Value)
	if err != nil {
		return fail(err)
	}
	out, _ := json.Marshal(inst)
	outputSet(store(out), uint64(len(out)))
	return 0
}

// transport sends requests through Extism's http_request.
type transport struct{}

func (transport) RoundTrip(r *http.Request) (*http.Response, error) {
	headers := map[string]string{}
	for k, v := range r.Header {
		if len(v) > 0 {
			headers[k] = v[0]
		}
	}
	req, _ := json.Marshal(map[string]any{"url": r.URL.String(), "method": r.Method, "headers": headers})
	var body uint64
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		if len(b) > 0 {
			body = store(b)
		}
	}
	reqOff := store(req)
	respOff := httpRequest(reqOff, body)
	status := int(httpStatusCode())
	if status == 0 {
		return nil, errors.New("http_request failed")
	}
	var respBody []byte
	if respOff != 0 {
		respBody = load(respOff)
		free(respOff)
	}
	return &http.Response{
		Status: strconv.Itoa(status) + " " + http.StatusText(status), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
		Body: io.NopCloser(bytes.NewReader(respBody)), ContentLength: int64(len(respBody)), Request: r,
	}, nil
}
