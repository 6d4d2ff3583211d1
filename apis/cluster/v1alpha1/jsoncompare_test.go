package v1alpha1_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"testing"
)

// decodeGeneric decodes JSON into map/slice/scalar form, keeping numbers as
// json.Number so that 1 and 1.0 or big integers are not conflated by a
// float64 conversion.
func decodeGeneric(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding JSON generically: %v\n%s", err, data)
	}
	return v
}

// jsonDiff lists the differences between two generically decoded JSON
// values: "-path" for a key only in want, "+path" for a key only in got,
// "~path: want != got" for a changed value. Empty means semantically equal.
func jsonDiff(want, got any) []string {
	var diffs []string
	var walk func(path string, w, g any)
	walk = func(path string, w, g any) {
		switch wv := w.(type) {
		case map[string]any:
			gv, ok := g.(map[string]any)
			if !ok {
				break
			}
			keys := map[string]bool{}
			for k := range wv {
				keys[k] = true
			}
			for k := range gv {
				keys[k] = true
			}
			for k := range keys {
				p := k
				if path != "" {
					p = path + "." + k
				}
				wc, inW := wv[k]
				gc, inG := gv[k]
				switch {
				case !inG:
					diffs = append(diffs, "-"+p)
				case !inW:
					diffs = append(diffs, "+"+p)
				default:
					walk(p, wc, gc)
				}
			}
			return
		case []any:
			gv, ok := g.([]any)
			if !ok || len(gv) != len(wv) {
				break
			}
			for i := range wv {
				walk(path+"["+strconv.Itoa(i)+"]", wv[i], gv[i])
			}
			return
		}
		if !reflect.DeepEqual(w, g) {
			diffs = append(diffs, fmt.Sprintf("~%s: %#v != %#v", path, w, g))
		}
	}
	walk("", want, got)
	sort.Strings(diffs)
	return diffs
}

// assertSameJSON fails unless want and got are semantically equal JSON
// documents (same keys, same values; key order and whitespace ignored).
func assertSameJSON(t *testing.T, want, got []byte) {
	t.Helper()
	if diffs := jsonDiff(decodeGeneric(t, want), decodeGeneric(t, got)); len(diffs) > 0 {
		t.Errorf("JSON differs after round trip (-lost +added ~changed):\n  %s\nwant: %s\ngot:  %s",
			joinLines(diffs), want, got)
	}
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(l)
	}
	return b.String()
}

// rawAt returns the exact bytes of the JSON value at path inside doc, or
// nil if the path does not exist. Path elements are object keys, or decimal
// indexes for arrays.
func rawAt(t *testing.T, doc []byte, path ...string) []byte {
	t.Helper()
	cur := json.RawMessage(doc)
	for _, elem := range path {
		cur = bytes.TrimSpace(cur)
		if len(cur) == 0 {
			return nil
		}
		switch cur[0] {
		case '{':
			var m map[string]json.RawMessage
			if err := json.Unmarshal(cur, &m); err != nil {
				t.Fatalf("rawAt %v: %v", path, err)
			}
			next, ok := m[elem]
			if !ok {
				return nil
			}
			cur = next
		case '[':
			var a []json.RawMessage
			if err := json.Unmarshal(cur, &a); err != nil {
				t.Fatalf("rawAt %v: %v", path, err)
			}
			i, err := strconv.Atoi(elem)
			if err != nil || i < 0 || i >= len(a) {
				return nil
			}
			cur = a[i]
		default:
			return nil
		}
	}
	return bytes.TrimSpace(cur)
}

func TestJSONDiffDetectsDifferences(t *testing.T) {
	// The round-trip tests are only as good as this comparison; make sure it
	// reports lost, added and changed fields, and number precision changes.
	want := []byte(`{"a":1,"b":{"c":[1,2],"d":"x"},"e":true,"n":12345678901234567890}`)
	got := []byte(`{"b":{"c":[1,3],"d":"x","f":null},"e":true,"n":12345678901234567000}`)
	diffs := jsonDiff(decodeGeneric(t, want), decodeGeneric(t, got))
	wantDiffs := []string{
		"+b.f",
		"-a",
		`~b.c[1]: "2" != "3"`,
		`~n: "12345678901234567890" != "12345678901234567000"`,
	}
	if !reflect.DeepEqual(diffs, wantDiffs) {
		t.Fatalf("jsonDiff = %q, want %q", diffs, wantDiffs)
	}
	if d := jsonDiff(decodeGeneric(t, want), decodeGeneric(t, []byte(` { "n":12345678901234567890, "e":true, "b":{"d":"x","c":[1,2]}, "a":1 } `))); len(d) != 0 {
		t.Fatalf("reordered document reported as different: %q", d)
	}
}
