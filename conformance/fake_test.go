package conformance_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/conformance"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
)

const fakeSpec = `{"cloudProvider":"fake","cloudProviderSpec":{"passValidation":true},"operatingSystem":"ubuntu"}`

// The Go fake provider is stateless (its Get finds every Machine): it passes
// under ProfileStateless, and the checks that need state are skipped.
func TestGoFakeStateless(t *testing.T) {
	rep := conformance.RunT(t, conformance.Config{
		Module:              testguest.Build(t, "examples/fake"),
		ProviderSpec:        json.RawMessage(fakeSpec),
		Profile:             conformance.ProfileStateless,
		CompilationCacheDir: testguest.CompilationCacheDir(t),
		Engine:              testhost.Engine(),
	})
	var text, junit, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	if err := rep.WriteJUnit(&junit); err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Suites []struct {
			Tests   int `xml:"tests,attr"`
			Skipped int `xml:"skipped,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(junit.Bytes(), &suites); err != nil || len(suites.Suites) != 1 || suites.Suites[0].Tests != len(conformance.Checks) {
		t.Fatalf("JUnit report does not parse or miscounts (%v):\n%s", err, junit.String())
	}
	stateful := 0
	for _, c := range conformance.Checks {
		if c.Stateful {
			stateful++
		}
	}
	if suites.Suites[0].Skipped != stateful {
		t.Errorf("stateless profile skipped %d checks, want the %d stateful ones", suites.Suites[0].Skipped, stateful)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back conformance.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Results) != len(conformance.Checks) {
		t.Fatalf("JSON report does not round-trip: %v", err)
	}
	if !strings.Contains(text.String(), "PASS: ") {
		t.Errorf("text report has no verdict")
	}
}

// Under the stateful profile the same fake fails exactly the checks that
// need state, which is why ProfileStateless exists.
func TestGoFakeStatefulFails(t *testing.T) {
	rep, err := conformance.Run(t.Context(), conformance.Config{
		Module:              testguest.Build(t, "examples/fake"),
		ProviderSpec:        json.RawMessage(fakeSpec),
		CompilationCacheDir: testguest.CompilationCacheDir(t),
		Engine:              testhost.Engine(),
		Checks:              []string{"get.", "delete.removes"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rep.Failed(), ","); got != "get.unknown-not-found,delete.removes" {
		var b bytes.Buffer
		rep.WriteText(&b)
		t.Fatalf("failed checks %q, want get.unknown-not-found,delete.removes\n%s", got, b.String())
	}
}
