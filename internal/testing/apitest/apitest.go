// Package apitest holds what the API types' tests share: a scheme with
// the types under test registered, and the strict JSON decoding the API
// machinery applies to what a client sends.
package apitest

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// Scheme returns a new scheme with add (an API group's AddToScheme)
// applied, failing t if it fails.
func Scheme(t testing.TB, add ...func(*runtime.Scheme) error) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, f := range add {
		if err := f(scheme); err != nil {
			t.Fatalf("AddToScheme: %v", err)
		}
	}
	return scheme
}

// StrictUnmarshal decodes JSON into obj the way the API machinery's strict
// mode does: case-sensitive field names, no unknown and no duplicate field.
func StrictUnmarshal(j []byte, obj any) error {
	strict, err := sigsjson.UnmarshalStrict(j, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}
