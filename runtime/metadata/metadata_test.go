package metadata

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// sections returns the module's sections other than the metadata, as raw
// bytes (id, size and body) in order.
func otherSections(t *testing.T, wasm []byte) [][]byte {
	t.Helper()
	it, err := wasmbin.NewSections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	var s wasmbin.Section
	for {
		ok, err := it.Next(&s)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		if s.ID == wasmbin.SectionIDCustom {
			if name, _, _ := s.CustomName(); string(name) == SectionName {
				continue
			}
		}
		out = append(out, wasm[s.Offset:s.End()])
	}
}

func sample() *Metadata {
	return &Metadata{
		Name: "fake", Version: "1.2.3", Description: "the fake provider",
		Source: "https://example.com/wasmprov", License: "Apache-2.0",
		ABIVersion: abi.Version, MinHostVersion: "0.1.0",
		Capabilities: []string{"log", "http"},
		Policy:       &SuggestedPolicy{AllowedHosts: []string{"api.example.com"}},
	}
}

// TestWriteKeepsEverythingElse: on a real guest, writing metadata (and
// rewriting it, shorter and longer) leaves every other section
// byte-identical and in order, and reads back equal.
func TestWriteKeepsEverythingElse(t *testing.T) {
	wasm, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	if md, err := Read(wasm); err != nil || md != nil {
		t.Fatalf("unannotated module: Read = %v, %v; want nil, nil", md, err)
	}
	want := otherSections(t, wasm)
	md := sample()
	out, err := Write(wasm, md)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out[:len(wasm)], wasm) {
		t.Fatal("appending the section changed bytes of the module")
	}
	for i, desc := range []string{"short", strings.Repeat("a much longer description ", 40), ""} {
		md.Description = desc
		if out, err = Write(out, md); err != nil {
			t.Fatal(err)
		}
		got := otherSections(t, out)
		if len(got) != len(want) {
			t.Fatalf("rewrite %d: %d other sections, want %d", i, len(got), len(want))
		}
		for j := range want {
			if !bytes.Equal(got[j], want[j]) {
				t.Fatalf("rewrite %d: section %d changed", i, j)
			}
		}
		back, err := Read(out)
		if err != nil {
			t.Fatal(err)
		}
		if back.Description != desc || back.Name != "fake" || back.Policy.AllowedHosts[0] != "api.example.com" {
			t.Fatalf("rewrite %d: read back %+v", i, back)
		}
		if n := bytes.Count(out, []byte(SectionName)); n != 1 {
			t.Fatalf("rewrite %d: %d metadata sections", i, n)
		}
	}
}

// minimal is a module of one type section, so the tests below can place
// custom sections exactly.
var minimal = []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00")

func TestReadRefuses(t *testing.T) {
	custom := func(payload string) []byte { return encodeCustom(SectionName, []byte(payload)) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for name, tc := range map[string]struct {
		wasm []byte
		want string
	}{
		"not JSON":         {cat(minimal, custom("name: fake")), "not a JSON object"},
		"JSON, not object": {cat(minimal, custom(`["fake"]`)), "not a JSON object"},
		"trailing":         {cat(minimal, custom(`{"name":"a"}{}`)), "trailing data"},
		"no name":          {cat(minimal, custom(`{"version":"1"}`)), "no name"},
		"bad semver":       {cat(minimal, custom(`{"name":"a","minHostVersion":"soon"}`)), "not a semantic version"},
		"bad capability":   {cat(minimal, custom(`{"name":"a","capabilities":["sockets"]}`)), `unknown capability "sockets"`},
		"two sections":     {cat(minimal, custom(`{"name":"a"}`), custom(`{"name":"b"}`)), "a second"},
	} {
		_, err := Read(tc.wasm)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Read = %v; want ErrInvalid naming %q", name, err, tc.want)
		}
	}
	if _, err := Read([]byte("not wasm")); !errors.Is(err, wasmbin.ErrMalformed) {
		t.Errorf("not a module: %v", err)
	}
	// Unknown fields (a newer annotator) are ignored.
	md, err := Read(cat(minimal, custom(`{"name":"a","signedBy":"x"}`)))
	if err != nil || md.Name != "a" {
		t.Errorf("unknown field: %v, %v", md, err)
	}
}

// TestWriteReplacesAndDropsDuplicates: the first metadata section is
// replaced where it stood, a second is dropped, other custom sections stay.
func TestWriteReplacesAndDropsDuplicates(t *testing.T) {
	other := encodeCustom("producers", []byte("x"))
	in := bytes.Join([][]byte{minimal, encodeCustom(SectionName, []byte("junk")), other, encodeCustom(SectionName, []byte("{}"))}, nil)
	out, err := Write(in, &Metadata{Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Join([][]byte{minimal, encodeCustom(SectionName, []byte(`{"name":"n"}`)), other}, nil)
	if !bytes.Equal(out, want) {
		t.Fatalf("Write =\n%x\nwant\n%x", out, want)
	}
	if _, err := Write(minimal, &Metadata{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Write of metadata without a name: %v", err)
	}
}

func TestCheckHost(t *testing.T) {
	for _, tc := range []struct {
		md   Metadata
		host string
		ok   bool
		want string
	}{
		{Metadata{Name: "a"}, "0.1.0", true, ""},
		{Metadata{Name: "a", MinHostVersion: "0.1.0"}, "0.1.0", true, ""},
		{Metadata{Name: "a", MinHostVersion: "v0.1.0"}, "0.2.0", true, ""},
		{Metadata{Name: "a", MinHostVersion: "0.10.0"}, "0.9.0", false, "needs host version 0.10.0 or newer, this host is 0.9.0"},
		{Metadata{Name: "a", ABIVersion: abi.Version}, "0.1.0", true, ""},
		{Metadata{Name: "a", ABIVersion: abi.Version + 1}, "0.1.0", false, "built for ABI version"},
	} {
		err := tc.md.CheckHost(tc.host, abi.Version)
		if tc.ok != (err == nil) || (err != nil && (!errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), tc.want))) {
			t.Errorf("%+v on %s: %v", tc.md, tc.host, err)
		}
	}
}

// TestOversizedSectionIsRefused: the host reads metadata before its load
// limits; a huge section is refused by size, not parsed.
func TestOversizedSectionIsRefused(t *testing.T) {
	payload := []byte(`{"name":"x","description":"` + strings.Repeat("a", MaxBytes) + `"}`)
	if _, err := Parse(payload); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "more than 65536") {
		t.Fatalf("Parse of %d bytes: %v", len(payload), err)
	}
	if _, err := Parse([]byte(`{"name":"x","description":"` + strings.Repeat("a", 1000) + `"}`)); err != nil {
		t.Fatalf("a 1 KB section: %v", err)
	}
}
