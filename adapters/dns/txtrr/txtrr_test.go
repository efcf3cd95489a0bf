package txtrr

import (
	"strings"
	"testing"
)

func TestEscapes(t *testing.T) {
	for _, tc := range []struct {
		s    Syntax
		text string
		want string
	}{
		{Decimal, "a\x00\"\\\xff", `"a\000\"\\\255"`},
		{Octal, "a\x00\"\\\xff", `"a\000\"\\\377"`},
		{Decimal, "\n", `"\010"`},
		{Octal, "\n", `"\012"`},
		{Decimal, "", `""`},
	} {
		if got := tc.s.Encode(tc.text); got != tc.want {
			t.Errorf("%v.Encode(%q) = %s, want %s", tc.s, tc.text, got, tc.want)
		}
		if got := tc.s.Decode(tc.want); got != tc.text {
			t.Errorf("%v.Decode(%s) = %q, want %q", tc.s, tc.want, got, tc.text)
		}
	}
}

func TestRoundTripAndChunks(t *testing.T) {
	var all strings.Builder
	for i := range 600 {
		all.WriteByte(byte(i))
	}
	text := all.String()
	for _, s := range []Syntax{Decimal, Octal} {
		enc := s.Encode(text)
		if got := s.Decode(enc); got != text {
			t.Fatalf("%v: round trip changed the text", s)
		}
		parts := s.Split(enc)
		if len(parts) != 3 || len(parts[0]) != MaxString || len(parts[1]) != MaxString || len(parts[2]) != 600-2*MaxString {
			t.Errorf("%v: Split gave %d strings", s, len(parts))
		}
	}
	if got := Decimal.Split(`unquoted  "two words"`); len(got) != 2 || got[0] != "unquoted" || got[1] != "two words" {
		t.Errorf("Split = %q", got)
	}
}
