package conformance

import "time"

// Status is the outcome of a check.
type Status string

// Outcomes. A check of a SHOULD rule (Level Should) that is not met is a
// Warn: reported with its explanation, but the run still passes.
const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is the outcome of one check.
type Result struct {
	ID       string        `json:"id"`
	Title    string        `json:"title"`
	Level    Level         `json:"level"`
	Status   Status        `json:"status"`
	Message  string        `json:"message,omitempty"`
	Why      string        `json:"why,omitempty"`
	Notes    []string      `json:"notes,omitempty"`
	Duration time.Duration `json:"durationNs"`
}

// Report is the outcome of a run.
type Report struct {
	Provider     string   `json:"provider"`
	SHA256       string   `json:"sha256,omitempty"`
	Profile      Profile  `json:"profile"`
	Cloud        string   `json:"cloud"`
	Capabilities []string `json:"capabilities"`
	Results      []Result `json:"results"`
	// Swept are the Machines of earlier runs a sweep (Config.Sweep)
	// deleted.
	Swept []Leftover `json:"swept,omitempty"`
	// Leftovers are the Machines that may still have instances in the
	// cloud: this run's that it could not delete (Error says why), and an
	// earlier run's not swept yet (no Error).
	Leftovers []Leftover    `json:"leftovers,omitempty"`
	Duration  time.Duration `json:"durationNs"`
}

// Passed reports whether no check failed (warnings do not count) and the
// run deleted every instance it made.
func (r *Report) Passed() bool {
	for _, res := range r.Results {
		if res.Status == Fail {
			return false
		}
	}
	for _, l := range r.Leftovers {
		if l.Error != "" {
			return false
		}
	}
	return true
}

// Counts is how many checks had each outcome.
type Counts struct {
	Pass int `json:"pass"`
	Warn int `json:"warn"`
	Fail int `json:"fail"`
	Skip int `json:"skip"`
}

// Total is the number of checks counted.
func (c Counts) Total() int { return c.Pass + c.Warn + c.Fail + c.Skip }

// Counts returns how many checks passed, warned, failed and were skipped.
func (r *Report) Counts() Counts {
	var c Counts
	for _, res := range r.Results {
		switch res.Status {
		case Pass:
			c.Pass++
		case Warn:
			c.Warn++
		case Fail:
			c.Fail++
		case Skip:
			c.Skip++
		}
	}
	return c
}

// Result returns the result of check id, or nil.
func (r *Report) Result(id string) *Result {
	for i := range r.Results {
		if r.Results[i].ID == id {
			return &r.Results[i]
		}
	}
	return nil
}

// Failed lists the IDs of failed checks.
func (r *Report) Failed() []string { return r.withStatus(Fail) }

// Warned lists the IDs of checks that warned.
func (r *Report) Warned() []string { return r.withStatus(Warn) }

func (r *Report) withStatus(s Status) []string {
	var ids []string
	for _, res := range r.Results {
		if res.Status == s {
			ids = append(ids, res.ID)
		}
	}
	return ids
}
