package runtime_test

import (
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/runtime"
)

func TestParsePolicyStrict(t *testing.T) {
	p, err := runtime.ParsePolicy([]byte(`
allowedHosts: ["api.example.com", "*.example.net"]
memoryLimitMiB: 64
poolSize: 2
callTimeout: 45s
idleTimeout: 5m
capabilities: [log, http]
sha256: abc
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.AllowedHosts) != 2 || p.MemoryLimitMiB != 64 || p.PoolSize != 2 ||
		time.Duration(p.CallTimeout) != 45*time.Second || len(p.Capabilities) != 2 || p.SHA256 != "abc" ||
		time.Duration(p.IdleTimeout) != 5*time.Minute {
		t.Fatalf("parsed %+v", p)
	}
	if p, err := runtime.ParsePolicy([]byte("# nothing set\n")); err != nil || p.PoolSize != 0 {
		t.Fatalf("empty policy file: %+v, %v", p, err)
	}
	for _, bad := range []string{
		"poolsize: 2\n",            // wrong case is an unknown field
		"callTimeout: 30\n",        // not a duration string
		"capabilities: [teleport]", // unknown capability
		"poolSize: -1\n",
		"idleTimeout: -1s\n",
		"httpRequestsPerSecond: -1\n",
		"httpBurst: 20000\n", // past MaxHTTPBurst
		"poolSize: [\n",
		"poolSize: 1\npoolSize: 2\n", // duplicate key
	} {
		if _, err := runtime.ParsePolicy([]byte(bad)); err == nil {
			t.Errorf("runtime.ParsePolicy(%q) succeeded", bad)
		}
	}
}
