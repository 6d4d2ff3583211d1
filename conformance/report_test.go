package conformance_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/conformance"
)

func warnReport() *conformance.Report {
	return &conformance.Report{Provider: "p", Profile: conformance.ProfileStateful, Cloud: "none", Results: []conformance.Result{
		{ID: "abi.module", Title: "loads", Level: conformance.Must, Status: conformance.Pass},
		{ID: "metrics.size-label", Title: "size", Level: conformance.Should, Status: conformance.Warn,
			Message: "no size label", Why: "metrics by size miss it"},
		{ID: "get.unknown-not-found", Title: "nf", Level: conformance.Must, Status: conformance.Skip, Message: "stateless"},
	}}
}

// A warning is reported in every format, counted on its own, and does not
// fail the run.
func TestReportWarnings(t *testing.T) {
	rep := warnReport()
	if !rep.Passed() {
		t.Error("a report with only a warning did not pass")
	}
	if c := rep.Counts(); c != (conformance.Counts{Pass: 1, Warn: 1, Skip: 1}) || c.Total() != 3 {
		t.Errorf("Counts() = %+v", c)
	}
	if got := rep.Warned(); len(got) != 1 || got[0] != "metrics.size-label" {
		t.Errorf("Warned() = %v", got)
	}

	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"WARN  metrics.size-label", "no size label", "why it matters: metrics by size miss it",
		"PASS: 1 passed, 1 warnings, 0 failed, 1 skipped"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}

	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		conformance.Report
		Counts conformance.Counts `json:"counts"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Counts.Warn != 1 || back.Results[1].Status != conformance.Warn || back.Results[1].Level != conformance.Should {
		t.Errorf("JSON report lost the warning:\n%s", js.String())
	}

	var junit bytes.Buffer
	if err := rep.WriteJUnit(&junit); err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Suites []struct {
			Tests      int `xml:"tests,attr"`
			Failures   int `xml:"failures,attr"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name      string    `xml:"name,attr"`
				Failure   *struct{} `xml:"failure"`
				SystemErr string    `xml:"system-err"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(junit.Bytes(), &suites); err != nil || len(suites.Suites) != 1 {
		t.Fatalf("JUnit does not parse: %v\n%s", err, junit.String())
	}
	s := suites.Suites[0]
	warnings := ""
	for _, p := range s.Properties {
		if p.Name == "warnings" {
			warnings = p.Value
		}
	}
	if s.Tests != 3 || s.Failures != 0 || warnings != "1" || s.Cases[1].Failure != nil ||
		!strings.Contains(s.Cases[1].SystemErr, "warning (SHOULD): no size label") {
		t.Errorf("JUnit report mishandles the warning:\n%s", junit.String())
	}
}
