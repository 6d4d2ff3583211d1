// Package jsonscan is a small, reflection-free JSON reader for the guest
// SDK. In a Go guest, encoding/json runs as WebAssembly and its reflection
// costs about ten times what it does natively; the SDK's own documents (a
// Machine, its spec, providerconfig.Config) have a fixed shape, so reading
// them member by member is several times cheaper.
//
// The reader trusts structure only as far as it must: values it does not
// decode are skipped with a scanner that checks brackets and strings, and a
// malformed document is an error, never a panic.
package jsonscan

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax reports malformed JSON.
var ErrSyntax = errors.New("jsonscan: malformed JSON")

func syntax(what string, at int) error {
	return &SyntaxError{What: what, Offset: at}
}

// SyntaxError says what was expected where.
type SyntaxError struct {
	What   string
	Offset int
}

func (e *SyntaxError) Error() string {
	return "jsonscan: " + e.What + " at offset " + strconv.Itoa(e.Offset)
}

func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\n' || d[i] == '\t' || d[i] == '\r') {
		i++
	}
	return i
}

// Skip returns the index just past the value starting at d[i] (after
// leading space).
func Skip(d []byte, i int) (int, error) {
	i = skipSpace(d, i)
	if i >= len(d) {
		return i, syntax("value expected", i)
	}
	switch c := d[i]; {
	case c == '"':
		return skipString(d, i)
	case c == '{' || c == '[':
		return skipNested(d, i)
	case c == 't':
		return literal(d, i, "true")
	case c == 'f':
		return literal(d, i, "false")
	case c == 'n':
		return literal(d, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		j := i + 1
		for j < len(d) && (d[j] >= '0' && d[j] <= '9' || d[j] == '.' || d[j] == 'e' || d[j] == 'E' || d[j] == '+' || d[j] == '-') {
			j++
		}
		return j, nil
	}
	return i, syntax("value expected", i)
}

func literal(d []byte, i int, lit string) (int, error) {
	if len(d)-i < len(lit) || string(d[i:i+len(lit)]) != lit {
		return i, syntax(lit+" expected", i)
	}
	return i + len(lit), nil
}

func skipString(d []byte, i int) (int, error) {
	for j := i + 1; j < len(d); j++ {
		switch d[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return len(d), syntax("unterminated string", i)
}

// skipNested skips an object or array by counting brackets outside strings.
func skipNested(d []byte, i int) (int, error) {
	depth := 0
	for j := i; j < len(d); j++ {
		switch d[j] {
		case '"':
			end, err := skipString(d, j)
			if err != nil {
				return end, err
			}
			j = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		}
	}
	return len(d), syntax("unterminated object or array", i)
}

// Object calls fn for every member of the object d, with the member's raw
// value. A null document is an empty object. The key aliases d when it has
// no escapes: compare it with switch string(key), which does not allocate,
// and copy it (string(key)) to keep it.
func Object(d []byte, fn func(key []byte, value []byte) error) error {
	i := skipSpace(d, 0)
	if i < len(d) && d[i] == 'n' {
		_, err := literal(d, i, "null")
		return err
	}
	if i >= len(d) || d[i] != '{' {
		return syntax("object expected", i)
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == '}' {
		return nil
	}
	for {
		i = skipSpace(d, i)
		key, next, err := readKey(d, i)
		if err != nil {
			return err
		}
		i = skipSpace(d, next)
		if i >= len(d) || d[i] != ':' {
			return syntax("':' expected", i)
		}
		start := skipSpace(d, i+1)
		end, err := Skip(d, start)
		if err != nil {
			return err
		}
		if err := fn(key, d[start:end]); err != nil {
			return err
		}
		i = skipSpace(d, end)
		if i >= len(d) {
			return syntax("'}' expected", i)
		}
		if d[i] == '}' {
			return nil
		}
		if d[i] != ',' {
			return syntax("',' or '}' expected", i)
		}
		i++
	}
}

// Array calls fn for every element of the array d. A null document is an
// empty array.
func Array(d []byte, fn func(value []byte) error) error {
	i := skipSpace(d, 0)
	if i < len(d) && d[i] == 'n' {
		_, err := literal(d, i, "null")
		return err
	}
	if i >= len(d) || d[i] != '[' {
		return syntax("array expected", i)
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == ']' {
		return nil
	}
	for {
		start := skipSpace(d, i)
		end, err := Skip(d, start)
		if err != nil {
			return err
		}
		if err := fn(d[start:end]); err != nil {
			return err
		}
		i = skipSpace(d, end)
		if i >= len(d) {
			return syntax("']' expected", i)
		}
		if d[i] == ']' {
			return nil
		}
		if d[i] != ',' {
			return syntax("',' or ']' expected", i)
		}
		i++
	}
}

// String decodes a JSON string value; null is "".
func String(d []byte) (string, error) {
	i := skipSpace(d, 0)
	if i < len(d) && d[i] == 'n' {
		_, err := literal(d, i, "null")
		return "", err
	}
	s, _, err := readString(d, i)
	return s, err
}

// readKey is readString without allocating for the common key with no
// escapes.
func readKey(d []byte, i int) ([]byte, int, error) {
	if i >= len(d) || d[i] != '"' {
		return nil, i, syntax("string expected", i)
	}
	j := i + 1
	for j < len(d) && d[j] != '"' && d[j] != '\\' && d[j] >= 0x20 && d[j] < 0x80 {
		j++
	}
	if j < len(d) && d[j] == '"' {
		return d[i+1 : j], j + 1, nil
	}
	s, next, err := readString(d, i)
	return []byte(s), next, err
}

// readString decodes the string starting at d[i] and returns it and the
// index past it.
func readString(d []byte, i int) (string, int, error) {
	if i >= len(d) || d[i] != '"' {
		return "", i, syntax("string expected", i)
	}
	j := i + 1
	for j < len(d) && d[j] != '"' && d[j] != '\\' && d[j] >= 0x20 {
		j++
	}
	if j < len(d) && d[j] == '"' { // fast path: no escapes
		s := d[i+1 : j]
		if !utf8.Valid(s) {
			return string([]rune(string(s))), j + 1, nil
		}
		return string(s), j + 1, nil
	}
	buf := append([]byte(nil), d[i+1:j]...)
	for j < len(d) {
		c := d[j]
		switch {
		case c == '"':
			return string([]rune(string(buf))), j + 1, nil
		case c < 0x20:
			return "", j, syntax("control character in string", j)
		case c != '\\':
			buf = append(buf, c)
			j++
			continue
		}
		if j+1 >= len(d) {
			break
		}
		j++
		switch d[j] {
		case '"', '\\', '/':
			buf = append(buf, d[j])
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, n, ok := readRune(d, j)
			if !ok {
				return "", j, syntax("invalid \\u escape", j)
			}
			buf = utf8.AppendRune(buf, r)
			j = n - 1
		default:
			return "", j, syntax("invalid escape", j)
		}
		j++
	}
	return "", j, syntax("unterminated string", i)
}

// readRune reads \uXXXX (and a following low surrogate) with d[j] == 'u';
// it returns the rune and the index past the escape.
func readRune(d []byte, j int) (rune, int, bool) {
	r, ok := hex4(d, j+1)
	if !ok {
		return 0, j, false
	}
	next := j + 5
	if utf16.IsSurrogate(r) {
		if next+6 <= len(d) && d[next] == '\\' && d[next+1] == 'u' {
			if r2, ok := hex4(d, next+2); ok {
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					return dec, next + 6, true
				}
			}
		}
		return utf8.RuneError, next, true
	}
	return r, next, true
}

func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Bool decodes true, false or null (false).
func Bool(d []byte) (bool, error) {
	i := skipSpace(d, 0)
	switch {
	case i < len(d) && d[i] == 't':
		_, err := literal(d, i, "true")
		return err == nil, err
	case i < len(d) && d[i] == 'f':
		_, err := literal(d, i, "false")
		return false, err
	case i < len(d) && d[i] == 'n':
		_, err := literal(d, i, "null")
		return false, err
	}
	return false, syntax("bool expected", i)
}

// Int64 decodes an integer; null is 0.
func Int64(d []byte) (int64, error) {
	i := skipSpace(d, 0)
	if i < len(d) && d[i] == 'n' {
		_, err := literal(d, i, "null")
		return 0, err
	}
	end, err := Skip(d, i)
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseInt(string(d[i:end]), 10, 64)
	if perr != nil {
		return 0, syntax("integer expected", i)
	}
	return v, nil
}

// Float64 decodes a number; null is 0.
func Float64(d []byte) (float64, error) {
	i := skipSpace(d, 0)
	if i < len(d) && d[i] == 'n' {
		_, err := literal(d, i, "null")
		return 0, err
	}
	end, err := Skip(d, i)
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseFloat(string(d[i:end]), 64)
	if perr != nil {
		return 0, syntax("number expected", i)
	}
	return v, nil
}

// StringSlice decodes an array of strings; null is nil.
func StringSlice(d []byte) ([]string, error) {
	var out []string
	err := Array(d, func(v []byte) error {
		s, err := String(v)
		out = append(out, s)
		return err
	})
	return out, err
}

// StringMap decodes an object of strings; null is nil.
func StringMap(d []byte) (map[string]string, error) {
	var out map[string]string
	err := Object(d, func(k []byte, v []byte) error {
		s, err := String(v)
		if out == nil {
			out = map[string]string{}
		}
		out[string(k)] = s
		return err
	})
	return out, err
}

// IsNull reports whether d is the literal null (or empty).
func IsNull(d []byte) bool {
	i := skipSpace(d, 0)
	return i == len(d) || (len(d)-i >= 4 && string(d[i:i+4]) == "null")
}
