package kernel

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEventMessage(t *testing.T) {
	short := "failed"
	if eventMessage(short) != short {
		t.Fatal("a short message was changed")
	}
	long := strings.Repeat("a", maxEventMessage-1) + "é" + strings.Repeat("b", 10) // é straddles the limit
	got := eventMessage(long)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) > maxEventMessage+len("…") {
		t.Fatalf("cut %q… (%d bytes, valid %v)", got[:10], len(got), utf8.ValidString(got))
	}
	if eventMessage(long) != got {
		t.Fatal("not deterministic")
	}
}
