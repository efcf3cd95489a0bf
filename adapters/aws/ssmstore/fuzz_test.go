package ssmstore

import (
	"strings"
	"testing"
)

// FuzzDecodeMain: a parameter's value comes from outside certfn (anyone
// with ssm:PutParameter on the path); decoding it never panics, and an
// error never quotes it.
func FuzzDecodeMain(f *testing.F) {
	for _, seed := range []string{
		`{"tls.crt":"c","tls.key":"k","..metadata":{}}`,
		`{"tls.crt":"c","..parameters":{"tls.key":3},"..metadata":{"base64":["x"]}}`,
		`{"..parameters":{"tls.key":-1}}`,
		`{"..parameters":null}`,
		`[1,2]`, `not json SECRETVALUE`, ``,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		sec, v, err := decodeMain(value)
		if err != nil {
			if len(value) > 12 && strings.Contains(err.Error(), value) {
				t.Fatalf("error quotes the value: %v", err)
			}
			return
		}
		if v < 0 {
			t.Fatalf("negative key version %d", v)
		}
		if _, ok := sec.Data[KeyPartMember]; ok {
			t.Fatal("the reference member came back as data")
		}
	})
}
