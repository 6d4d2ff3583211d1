package conformance_test

import (
	"os"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/conformance"
)

// specRow is a row of abi/SPEC.md §11.4.
type specRow struct{ level, profile string }

// specChecks parses the check table of abi/SPEC.md §11.4.
func specChecks(t *testing.T) map[string]specRow {
	t.Helper()
	raw, err := os.ReadFile("../abi/SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n### 11.4 The checks\n")
	if !ok {
		t.Fatal("abi/SPEC.md has no section \"11.4 The checks\"")
	}
	if i := strings.Index(section, "\n#"); i >= 0 {
		section = section[:i]
	}
	rows := map[string]specRow{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 7 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		id := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if _, dup := rows[id]; dup {
			t.Errorf("SPEC §11.4 lists %s twice", id)
		}
		rows[id] = specRow{level: strings.TrimSpace(cells[2]), profile: strings.TrimSpace(cells[3])}
	}
	if len(rows) == 0 {
		t.Fatal("no rows parsed from SPEC §11.4")
	}
	return rows
}

// The SPEC's table of checks and the suite agree both ways: every check is
// specified with its level and profile, and every specified check exists.
func TestSpecListsEveryCheck(t *testing.T) {
	rows := specChecks(t)
	for _, c := range conformance.Checks {
		row, ok := rows[c.ID]
		if !ok {
			t.Errorf("check %s is not in abi/SPEC.md §11.4", c.ID)
			continue
		}
		if row.level != string(c.Level) {
			t.Errorf("SPEC §11.4 says %s is %s, the suite runs it as %s", c.ID, row.level, c.Level)
		}
		profile := "both"
		switch {
		case c.Faults:
			profile = "faults"
		case c.Stateful:
			profile = "stateful"
		}
		if row.profile != profile {
			t.Errorf("SPEC §11.4 gives %s the profile %q, the suite %q", c.ID, row.profile, profile)
		}
		delete(rows, c.ID)
	}
	for id := range rows {
		t.Errorf("abi/SPEC.md §11.4 lists %s, which the suite does not have", id)
	}
}
