package hcloudsim

import (
	"fmt"
	"regexp"
	"strings"
)

var labelKeyRE = regexp.MustCompile(`^([a-z0-9A-Z]([a-z0-9A-Z.-]*[a-z0-9A-Z])?/)?[a-z0-9A-Z]([a-z0-9A-Z._-]*[a-z0-9A-Z])?$`)

// parseSelector parses Hetzner's label selector syntax: comma-separated
// (AND) expressions "k==v", "k=v", "k!=v", "k", "!k", "k in (a,b)" and
// "k notin (a,b)". The empty selector matches everything.
func parseSelector(sel string) (func(map[string]string) bool, error) {
	var terms []func(map[string]string) bool
	for _, expr := range splitTop(sel) {
		expr = strings.TrimSpace(expr)
		if expr == "" {
			if sel == "" {
				continue
			}
			return nil, fmt.Errorf("empty expression in %q", sel)
		}
		t, err := parseTerm(expr)
		if err != nil {
			return nil, err
		}
		terms = append(terms, t)
	}
	return func(l map[string]string) bool {
		for _, t := range terms {
			if !t(l) {
				return false
			}
		}
		return true
	}, nil
}

func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func checkKey(k string) error {
	if !labelKeyRE.MatchString(k) {
		return fmt.Errorf("invalid label key %q", k)
	}
	return nil
}

func parseTerm(expr string) (func(map[string]string) bool, error) {
	for _, op := range []string{"!=", "==", "="} {
		if k, v, ok := strings.Cut(expr, op); ok {
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if err := checkKey(k); err != nil {
				return nil, err
			}
			if op == "!=" {
				return func(l map[string]string) bool { return l[k] != v }, nil
			}
			return func(l map[string]string) bool { x, ok := l[k]; return ok && x == v }, nil
		}
	}
	for _, op := range []string{" notin ", " in "} {
		if k, rest, ok := strings.Cut(expr, op); ok {
			k, rest = strings.TrimSpace(k), strings.TrimSpace(rest)
			if err := checkKey(k); err != nil {
				return nil, err
			}
			if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
				return nil, fmt.Errorf("set of %q must be in parentheses", k)
			}
			set := map[string]bool{}
			for _, v := range strings.Split(rest[1:len(rest)-1], ",") {
				set[strings.TrimSpace(v)] = true
			}
			if op == " in " {
				return func(l map[string]string) bool { x, ok := l[k]; return ok && set[x] }, nil
			}
			return func(l map[string]string) bool { x, ok := l[k]; return !ok || !set[x] }, nil
		}
	}
	if k, ok := strings.CutPrefix(expr, "!"); ok {
		k = strings.TrimSpace(k)
		if err := checkKey(k); err != nil {
			return nil, err
		}
		return func(l map[string]string) bool { _, ok := l[k]; return !ok }, nil
	}
	if err := checkKey(expr); err != nil {
		return nil, err
	}
	return func(l map[string]string) bool { _, ok := l[expr]; return ok }, nil
}
