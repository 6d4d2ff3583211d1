package conformance_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/conformance"
)

// aliasSpec names the mini cloud by a public-looking URL, as a provider's
// users would name the real API: only the host alias sends it to
// 127.0.0.1.
const aliasSpec = `{"cloudProvider":"minicloud","operatingSystem":"ubuntu",
 "cloudProviderSpec":{"endpoint":"https://minicloud.example.com","token":"` + refToken + `"}}`

// Host aliases are the testing route: live through the alias, recorded
// through it into a cassette that keeps the real URL, and replayed
// offline with no alias and no cloud.
func TestRefcloudThroughHostAlias(t *testing.T) {
	cloud, url := startCloud(t)
	cfg := refConfig(t, "conformance/testdata/refcloud")
	cfg.ProviderSpec = []byte(aliasSpec)
	cfg.Policy.HostAliases = map[string]string{"minicloud.example.com": url}
	rep := conformance.RunT(t, cfg)
	if !strings.Contains(rep.Cloud, "minicloud.example.com → "+url) {
		t.Errorf("the report's cloud is %q; want the alias", rep.Cloud)
	}
	if left := cloud.Instances(); len(left) != 0 {
		t.Errorf("the run left %d instances in the cloud", len(left))
	}

	path := filepath.Join(t.TempDir(), "alias.cassette.json")
	cfg.Cassette, cfg.Record = path, true
	conformance.RunT(t, cfg)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"https://minicloud.example.com/v1/instances`)) || bytes.Contains(raw, []byte("127.0.0.1")) {
		t.Fatalf("the cassette does not keep the URL the provider asked for:\n%.600s", raw)
	}

	cfg.Record, cfg.Policy.HostAliases = false, nil
	cfg.Policy.AllowedHosts = []string{"minicloud.example.com"}
	conformance.RunT(t, cfg)
}
