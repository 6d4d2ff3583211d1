package abi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestHTTPFrameRoundTrip(t *testing.T) {
	req := &HTTPRequest{Method: "POST", URL: "https://api.example.com/v1/servers?name=a",
		Header: map[string][]string{"Authorization": {"Bearer x"}, "Accept": {"a", "b"}, "X-Empty": {""}},
		Body:   []byte("{\"name\":\"m\"}\x00\xff")}
	b := AppendHTTPRequestFrame(nil, req)
	if len(b) != HTTPRequestFrameSize(req) {
		t.Errorf("frame of %d bytes, HTTPRequestFrameSize says %d", len(b), HTTPRequestFrameSize(req))
	}
	got, err := ParseHTTPRequestFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, req) {
		t.Errorf("got %+v, want %+v", got, req)
	}

	resp := &HTTPResponse{Status: 201, Header: map[string][]string{"Set-Cookie": {"a=1", "b=2"}}, Body: bytes.Repeat([]byte{7}, 70000)}
	b = AppendHTTPResponseFrame([]byte("prefix"), resp)
	if len(b)-len("prefix") != HTTPResponseFrameSize(resp) {
		t.Errorf("frame of %d bytes, HTTPResponseFrameSize says %d", len(b)-len("prefix"), HTTPResponseFrameSize(resp))
	}
	gotResp, err := ParseHTTPResponseFrame(b[len("prefix"):])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotResp, resp) {
		t.Errorf("got status %d header %v body %d bytes", gotResp.Status, gotResp.Header, len(gotResp.Body))
	}

	// Empty parts: no header, no body.
	got, err = ParseHTTPRequestFrame(AppendHTTPRequestFrame(nil, &HTTPRequest{Method: "GET", URL: "u"}))
	if err != nil || got.Method != "GET" || got.URL != "u" || got.Header != nil || len(got.Body) != 0 {
		t.Errorf("got %+v, %v", got, err)
	}
}

// TestHTTPFrameLayout pins the bytes SPEC.md §6.3 documents.
func TestHTTPFrameLayout(t *testing.T) {
	b := AppendHTTPRequestFrame(nil, &HTTPRequest{Method: "GET", URL: "u", Header: map[string][]string{"K": {"v"}}, Body: []byte("xy")})
	want := "\x03\x00\x00\x00GET" + "\x01\x00\x00\x00u" + "\x01\x00\x00\x00" + "\x01\x00\x00\x00K\x01\x00\x00\x00v" + "\x02\x00\x00\x00xy"
	if string(b) != want {
		t.Errorf("request frame %q, want %q", b, want)
	}
	b = AppendHTTPResponseFrame(nil, &HTTPResponse{Status: 404, Body: []byte("z")})
	if want := "\x94\x01\x00\x00" + "\x00\x00\x00\x00" + "\x01\x00\x00\x00z"; string(b) != want {
		t.Errorf("response frame %q, want %q", b, want)
	}
}

func TestHTTPFrameMalformed(t *testing.T) {
	le := binary.LittleEndian.AppendUint32
	good := AppendHTTPRequestFrame(nil, &HTTPRequest{Method: "GET", URL: "https://a/", Header: map[string][]string{"K": {"v"}}, Body: []byte("b")})
	for _, c := range []struct {
		name  string
		frame []byte
		want  string
	}{
		{"empty", nil, "method length: want 4 bytes, 0 left"},
		{"short length", []byte{1, 0}, "method length: want 4 bytes, 2 left"},
		{"method past the end", le(nil, 10), "method of 10 bytes, 0 left"},
		{"length 2^32-1", le(nil, 0xffffffff), "method of 4294967295 bytes"},
		{"no body", good[:len(good)-5], "body length"},
		{"truncated body", good[:len(good)-1], "body of 1 bytes, 0 left"},
		{"trailing byte", append(bytes.Clone(good), 0), "1 bytes after the body"},
		{"header count beyond the frame", le(le(le(nil, 0), 0), 1000), "1000 header fields cannot fit in the 0 bytes left"},
		{"header value missing", le(le(le(le(le(nil, 0), 0), 1), 1), 'K'), "header value length"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseHTTPRequestFrame(c.frame)
			if !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want ErrFrame with %q", err, c.want)
			}
		})
	}
	if _, err := ParseHTTPResponseFrame(le(le(le(nil, 1000), 0), 0)); !errors.Is(err, ErrFrame) {
		t.Errorf("status 1000: got %v", err)
	}
	if _, err := ParseHTTPResponseFrame(le(le(le(nil, 99), 0), 0)); !errors.Is(err, ErrFrame) {
		t.Errorf("status 99: got %v", err)
	}
	if _, err := ParseHTTPResponseFrame(le(le(nil, 200), 0)); !errors.Is(err, ErrFrame) {
		t.Errorf("response without body length: got %v", err)
	}
}

// FuzzHTTPFrame: whatever the bytes, the parsers return a frame or
// ErrFrame without panicking, and a frame they accept re-encodes to the
// same length (nothing read past its end, nothing skipped).
func FuzzHTTPFrame(f *testing.F) {
	f.Add(AppendHTTPRequestFrame(nil, &HTTPRequest{Method: "GET", URL: "https://a/", Header: map[string][]string{"K": {"v", "w"}}, Body: []byte("b")}))
	f.Add(AppendHTTPResponseFrame(nil, &HTTPResponse{Status: 200, Header: map[string][]string{"K": {"v"}}, Body: []byte("b")}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := ParseHTTPRequestFrame(b); err != nil {
			if !errors.Is(err, ErrFrame) {
				t.Fatalf("request: %v is not ErrFrame", err)
			}
		} else if n := HTTPRequestFrameSize(r); n != len(b) {
			t.Fatalf("request frame of %d bytes accepted, re-encodes to %d", len(b), n)
		}
		if r, err := ParseHTTPResponseFrame(b); err != nil {
			if !errors.Is(err, ErrFrame) {
				t.Fatalf("response: %v is not ErrFrame", err)
			}
		} else if n := HTTPResponseFrameSize(r); n != len(b) {
			t.Fatalf("response frame of %d bytes accepted, re-encodes to %d", len(b), n)
		}
	})
}

// TestHTTPFrameRepeatedNames: repeats of a name apart from each other keep
// their order, and collecting them does not disturb the other fields.
func TestHTTPFrameRepeatedNames(t *testing.T) {
	le := binary.LittleEndian.AppendUint32
	str := func(b []byte, s string) []byte { return append(le(b, uint32(len(s))), s...) }
	b := le(nil, 200)
	b = le(b, 4)
	for _, kv := range [][2]string{{"K", "a"}, {"J", "b"}, {"K", "c"}, {"I", "d"}} {
		b = str(str(b, kv[0]), kv[1])
	}
	b = str(b, "")
	r, err := ParseHTTPResponseFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"K": {"a", "c"}, "J": {"b"}, "I": {"d"}}
	if !reflect.DeepEqual(r.Header, want) {
		t.Errorf("header %v, want %v", r.Header, want)
	}
}
