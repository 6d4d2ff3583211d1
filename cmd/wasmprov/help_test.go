package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/conformance"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
)

// runCLI runs wasmprov with args as main does and returns the exit status
// and what went to stdout and to stderr.
func runCLI(t *testing.T, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	saveOut, saveErr := stdout, stderr
	stdout, stderr = &o, &e
	defer func() { stdout, stderr = saveOut, saveErr }()
	code = runMain(context.Background(), args)
	return code, o.String(), e.String()
}

// Help that was asked for is a result: exit status 0 and the usage on
// stdout, for wasmprov itself and every command, however it is spelled.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, "commands:") || errOut != "" {
			t.Errorf("wasmprov %s: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", strings.Join(args, " "), code, out, errOut)
		}
	}
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) < 7 {
		t.Fatalf("only %d commands registered: %v", len(names), names)
	}
	for _, name := range names {
		for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {"help", name}} {
			code, out, errOut := runCLI(t, args...)
			if code != 0 || !strings.Contains(strings.ToLower(out), "usage") || errOut != "" {
				t.Errorf("wasmprov %s: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", strings.Join(args, " "), code, out, errOut)
			}
		}
	}
}

// A command line that is wrong is not help: a non-zero status, and the
// usage on stderr, not mixed into the results on stdout.
func TestUsageErrorsExitNonZero(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{nil, 2},
		{[]string{"nosuchcommand"}, 2},
		{[]string{"inspect"}, 1},
		{[]string{"inspect", "-nosuchflag", "x.wasm"}, 1},
		{[]string{"call", "x.wasm"}, 1},
		{[]string{"demo", "-nosuchflag"}, 1},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != tc.code || out != "" || !strings.Contains(strings.ToLower(errOut), "usage") {
			t.Errorf("wasmprov %s: exit %d, stdout %q, stderr %q; want %d and the usage on stderr", strings.Join(tc.args, " "), code, out, errOut, tc.code)
		}
	}
}

// A -check that selects nothing (a typo, or a bare prefix of an ID) fails
// before anything runs, naming the valid IDs: it must not turn CI green.
func TestConformanceUnknownCheck(t *testing.T) {
	for _, sel := range []string{"nosuchcheck", "create.get", "creat"} {
		code, out, errOut := runCLI(t, "conformance", "-check", "validate", "-check", sel, "-spec", "{}", "nosuch.wasm")
		if code == 0 || out != "" {
			t.Errorf("-check %s: exit %d, stdout %q; want a failure before any check runs", sel, code, out)
		}
		for _, want := range []string{`"` + sel + `"`, "the checks are", "create.get-same-id", "abi.module"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("-check %s: stderr lacks %q:\n%s", sel, want, errOut)
			}
		}
		if strings.Contains(errOut, `"validate"`) {
			t.Errorf("-check validate is a valid group, but it is reported:\n%s", errOut)
		}
	}
	if err := conformance.CheckSelection([]string{"create", "create.", "abi.module", "validate.rejects-empty"}); err != nil {
		t.Errorf("valid selections refused: %v", err)
	}
}

// A valid selection runs what it selects, and the report is the command's
// stdout.
func TestConformanceSelectedCheck(t *testing.T) {
	fake := testguest.Build(t, "examples/fake")
	code, out, errOut := runCLI(t, "conformance", "-profile", "stateless", "-spec", `{"cloudProviderSpec":{"passValidation":true}}`,
		"-check", "abi.module", "-cache", testguest.CompilationCacheDir(t), fake)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !regexp.MustCompile(`(?m)^PASS +abi\.module `).MatchString(out) || !regexp.MustCompile(`(?m)^SKIP +abi\.capabilities `).MatchString(out) {
		t.Errorf("want abi.module run and passed, abi.capabilities skipped:\n%s", out)
	}
}

// --journal defaults to a file per provider in the user's cache; '-' is
// none; --sweep of a journal with nothing in it deletes nothing and
// passes; a sweep cannot replay a cassette.
func TestConformanceJournalFlags(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/cache")
	if got, _ := journalPath("", "build/guests/hetzner.wasm"); got != "/cache/wasmprov/conformance/hetzner.journal.json" {
		t.Errorf("default journal %q", got)
	}
	if got, _ := journalPath("-", "x.wasm"); got != "" {
		t.Errorf("--journal - gave %q", got)
	}
	fake := testguest.Build(t, "examples/fake")
	journal := filepath.Join(t.TempDir(), "j.json")
	code, out, errOut := runCLI(t, "conformance", "-profile", "stateless", "-spec", `{"cloudProviderSpec":{"passValidation":true}}`,
		"--journal", journal, "--sweep", "-cache", testguest.CompilationCacheDir(t), fake)
	if code != 0 || !strings.Contains(out, "PASS: 0 passed") {
		t.Fatalf("sweep of an empty journal: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "conformance", "-spec", "{}", "--sweep", "--cassette", journal, fake)
	if code == 0 || !strings.Contains(errOut, "sweeping needs") {
		t.Fatalf("sweep with a cassette: exit %d, %s", code, errOut)
	}
}
