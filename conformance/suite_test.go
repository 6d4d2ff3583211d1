package conformance

import (
	"strings"
	"testing"
)

func TestSelectsWholeDottedSegments(t *testing.T) {
	for _, tc := range []struct {
		sel, id string
		want    bool
	}{
		{"validate.accepts-valid", "validate.accepts-valid", true},
		{"validate.", "validate.accepts-valid", true},
		{"validate", "validate.accepts-valid", true},
		{"valid", "validate.accepts-valid", false},
		{"create.get", "create.get-same-id", false},
		{"abi.capabilities", "abi.capabilities", true},
		{"abi.capabilities", "abi.no-unused-capabilities", false},
	} {
		if got := selects(tc.sel, tc.id); got != tc.want {
			t.Errorf("selects(%q, %q) = %v, want %v", tc.sel, tc.id, got, tc.want)
		}
	}
}

func TestCheckSelectionRefusesWhatMatchesNothing(t *testing.T) {
	for _, ok := range [][]string{nil, {"validate."}, {"validate"}, {"abi.module", "robustness"}} {
		if err := checkSelection(ok); err != nil {
			t.Errorf("checkSelection(%q): %v", ok, err)
		}
	}
	err := checkSelection([]string{"validate.", "nosuchcheck", "create.get"})
	if err == nil {
		t.Fatal("no error for selectors that match no check")
	}
	for _, want := range append([]string{`"nosuchcheck"`, `"create.get"`}, CheckIDs()...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	if unknown, _, _ := strings.Cut(err.Error(), ":"); strings.Contains(unknown, `"validate."`) {
		t.Errorf("error names a valid selector: %v", err)
	}
}

func TestCheckIDsAreUniqueAndLevelled(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Checks {
		if seen[c.ID] {
			t.Errorf("duplicate check ID %s", c.ID)
		}
		seen[c.ID] = true
		if c.Level != Must && c.Level != Should {
			t.Errorf("check %s has level %q", c.ID, c.Level)
		}
	}
	if got := CheckIDs(); len(got) != len(Checks) || got[0] != Checks[0].ID {
		t.Errorf("CheckIDs() = %v", got)
	}
}
