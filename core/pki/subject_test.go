package pki

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"strings"
	"testing"
)

// atv is a compact expectation: OID in dotted form and string value.
type atv struct{ oid, val string }

func flatten(seq pkix.RDNSequence) [][]atv {
	var out [][]atv
	for _, rdn := range seq {
		var r []atv
		for _, a := range rdn {
			v, ok := a.Value.(string)
			if !ok {
				raw := a.Value.(asn1.RawValue)
				v = "raw:" + string(raw.Bytes)
			}
			r = append(r, atv{a.Type.String(), v})
		}
		out = append(out, r)
	}
	return out
}

func TestParseLiteralSubject(t *testing.T) {
	const cn, o, ou, c, dc = "2.5.4.3", "2.5.4.10", "2.5.4.11", "2.5.4.6", "0.9.2342.19200300.100.1.25"
	tests := []struct {
		name    string
		in      string
		want    [][]atv // in ASN.1 order (reverse of the string)
		wantErr string
	}{
		{name: "empty", in: "  ", want: nil},
		{name: "order is reversed", in: "CN=web,O=Acme,C=GB", want: [][]atv{{{c, "GB"}}, {{o, "Acme"}}, {{cn, "web"}}}},
		{name: "case-insensitive types and spaces around", in: " cn = web , o=Acme", want: [][]atv{{{o, "Acme"}}, {{cn, "web"}}}},
		{name: "semicolon separator", in: "CN=a;O=b", want: [][]atv{{{o, "b"}}, {{cn, "a"}}}},
		{name: "multi-valued RDN", in: "CN=a+OU=b,O=c", want: [][]atv{{{o, "c"}}, {{cn, "a"}, {ou, "b"}}}},
		{name: "escaped specials", in: `CN=a\,b\+c\=d\\e\"f`, want: [][]atv{{{cn, `a,b+c=d\e"f`}}}},
		{name: "hex escapes form UTF-8", in: `CN=caf\C3\A9`, want: [][]atv{{{cn, "café"}}}},
		{name: "escaped trailing space kept", in: `CN=a\ `, want: [][]atv{{{cn, "a "}}}},
		{name: "escaped leading space kept", in: `CN=\ a`, want: [][]atv{{{cn, " a"}}}},
		{name: "inner spaces kept", in: "O=Acme  Corp  ,C=GB", want: [][]atv{{{c, "GB"}}, {{o, "Acme  Corp"}}}},
		{name: "dotted OID type", in: "1.2.3.4=x,DC=example", want: [][]atv{{{dc, "example"}}, {{"1.2.3.4", "x"}}}},
		{name: "hex DER value", in: "CN=#0c03616263", want: [][]atv{{{cn, "raw:abc"}}}},
		{name: "empty value", in: "CN=", want: [][]atv{{{cn, ""}}}},
		{name: "hex DER value then more RDNs", in: "CN=#0c0161 ,O=b;C=GB", want: [][]atv{{{c, "GB"}}, {{o, "b"}}, {{cn, "raw:a"}}}},
		{name: "hex DER value in a multi-valued RDN", in: "CN=#0c0161+O=b", want: [][]atv{{{cn, "raw:a"}, {o, "b"}}}},
		{name: "missing =", in: "CN", wantErr: "want type=value"},
		{name: "empty RDN", in: "CN=a,,O=b", wantErr: "unknown attribute type"},
		{name: "unknown type", in: "FOO=bar", wantErr: `unknown attribute type "FOO"`},
		{name: "bad OID", in: "1.x=y", wantErr: "not a dotted OID"},
		{name: "lone backslash", in: `CN=a\`, wantErr: "lone backslash"},
		{name: "bad escape", in: `CN=a\zz`, wantErr: "invalid escape"},
		{name: "bad hex value", in: "CN=#zz", wantErr: "not valid hex"},
		{name: "hex value is not DER", in: "CN=#0c05ab", wantErr: "not one DER-encoded"},
		{name: "unescaped quote", in: `CN=a"b`, wantErr: `unescaped '"'`},
		{name: "escape yields invalid UTF-8", in: `CN=\FF`, wantErr: "not valid UTF-8"},
		{name: "too long", in: "CN=" + strings.Repeat("a", MaxLiteralSubjectLength), wantErr: "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq, err := ParseLiteralSubject(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseLiteralSubject(%q) error = %v, want containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLiteralSubject(%q) error = %v", tt.in, err)
			}
			got := flatten(seq)
			if len(got) != len(tt.want) {
				t.Fatalf("ParseLiteralSubject(%q) = %v, want %v", tt.in, got, tt.want)
			}
			for i := range got {
				if len(got[i]) != len(tt.want[i]) {
					t.Fatalf("RDN %d = %v, want %v", i, got[i], tt.want[i])
				}
				for j := range got[i] {
					if got[i][j] != tt.want[i][j] {
						t.Errorf("RDN %d attribute %d = %v, want %v", i, j, got[i][j], tt.want[i][j])
					}
				}
			}
			if _, err := asn1.Marshal(seq); err != nil {
				t.Errorf("result does not encode: %v", err)
			}
		})
	}
}

func TestCanonicalSubjectIgnoresStringType(t *testing.T) {
	printable, _ := asn1.Marshal(pkix.RDNSequence{{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "abc"}}})
	utf8 := mustMarshal(t, pkix.RDNSequence{{{Type: asn1.ObjectIdentifier{2, 5, 4, 3},
		Value: asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagUTF8String, Bytes: []byte("abc")}}}})
	other := mustMarshal(t, pkix.RDNSequence{{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "abd"}}})
	a, err1 := canonicalSubject(printable)
	b, err2 := canonicalSubject(utf8)
	c, err3 := canonicalSubject(other)
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatalf("canonicalSubject errors: %v %v %v", err1, err2, err3)
	}
	if a != b {
		t.Errorf("PrintableString and UTF8String of the same text differ: %q vs %q", a, b)
	}
	if a == c {
		t.Errorf("different values compare equal: %q", a)
	}
	if _, err := canonicalSubject([]byte{0x30, 0x05}); err == nil {
		t.Error("truncated DER: want an error")
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := asn1.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
