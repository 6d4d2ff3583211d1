package conformance

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteText writes the report for people: one line per check, with the
// explanation under each failure.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "wasmprov conformance: %s", r.Provider)
	if r.SHA256 != "" {
		fmt.Fprintf(&b, " (sha256 %s…)", r.SHA256[:12])
	}
	fmt.Fprintf(&b, "\n  profile %s, cloud: %s, capabilities: %s\n\n", r.Profile, r.Cloud, strings.Join(r.Capabilities, ","))
	width := 0
	for _, res := range r.Results {
		width = max(width, len(res.ID))
	}
	for _, res := range r.Results {
		fmt.Fprintf(&b, "%-4s  %-*s  %s", strings.ToUpper(string(res.Status)), width, res.ID, res.Title)
		if res.Status != Skip {
			fmt.Fprintf(&b, " (%s)", res.Duration.Round(time.Millisecond))
		}
		b.WriteString("\n")
		indent := "      " + strings.Repeat(" ", width+2)
		if res.Message != "" {
			for _, line := range strings.Split(res.Message, "\n") {
				b.WriteString(indent + line + "\n")
			}
		}
		if (res.Status == Fail || res.Status == Warn) && res.Why != "" {
			b.WriteString(indent + "why it matters: " + res.Why + "\n")
		}
		for _, n := range res.Notes {
			b.WriteString(indent + "note: " + n + "\n")
		}
	}
	if len(r.Swept) > 0 {
		fmt.Fprintf(&b, "swept %d Machine(s) of earlier runs:\n", len(r.Swept))
		for _, l := range r.Swept {
			fmt.Fprintf(&b, "  %s (uid %s, check %s): deleted\n", l.Machine, l.UID, l.Check)
		}
	}
	if len(r.Leftovers) > 0 {
		fmt.Fprintf(&b, "\n%d Machine(s) may still have instances in the cloud (delete them with --sweep, Config.Sweep):\n", len(r.Leftovers))
		for _, l := range r.Leftovers {
			why := "left by an earlier run"
			if l.Error != "" {
				why = "not deleted: " + l.Error
			}
			fmt.Fprintf(&b, "  %s (uid %s, check %s): %s\n", l.Machine, l.UID, l.Check, why)
		}
	}
	c := r.Counts()
	verdict := "PASS"
	if !r.Passed() {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "\n%s: %d passed, %d warnings, %d failed, %d skipped in %s\n", verdict, c.Pass, c.Warn, c.Fail, c.Skip, r.Duration.Round(time.Millisecond))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as indented JSON, with the counts of each
// outcome under "counts".
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		*Report
		Counts Counts `json:"counts"`
	}{r, r.Counts()})
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure"`
	Skipped   *junitMessage `xml:"skipped"`
	SystemOut string        `xml:"system-out,omitempty"`
	SystemErr string        `xml:"system-err,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// WriteJUnit writes the report as JUnit XML, one testcase per check.
func (r *Report) WriteJUnit(w io.Writer) error {
	n := r.Counts()
	// JUnit has no warning: a warned check is a passed testcase whose
	// system-err says why, and the suite's "warnings" property counts them.
	s := junitSuite{
		Name: "wasmprov-conformance/" + r.Provider, Tests: n.Total(), Failures: n.Fail, Skipped: n.Skip,
		Time: seconds(r.Duration),
		Properties: []junitProperty{{"sha256", r.SHA256}, {"profile", string(r.Profile)}, {"cloud", r.Cloud},
			{"capabilities", strings.Join(r.Capabilities, ",")}, {"warnings", fmt.Sprint(n.Warn)}},
	}
	for _, res := range r.Results {
		c := junitCase{Name: res.ID + ": " + res.Title, Classname: "conformance." + r.Provider, Time: seconds(res.Duration)}
		switch res.Status {
		case Fail:
			first, _, _ := strings.Cut(res.Message, "\n")
			c.Failure = &junitMessage{Message: first, Body: res.Message + "\n\nwhy it matters: " + res.Why}
		case Warn:
			c.SystemErr = "warning (SHOULD): " + res.Message + "\n\nwhy it matters: " + res.Why
		case Skip:
			c.Skipped = &junitMessage{Message: res.Message}
		}
		if len(res.Notes) > 0 {
			c.SystemOut = strings.Join(res.Notes, "\n")
		}
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
