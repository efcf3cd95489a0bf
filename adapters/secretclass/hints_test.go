package secretclass

import (
	"slices"
	"testing"
)

func TestHints(t *testing.T) {
	var h Hints[string]
	classes := []string{"tls", "pk", "ca"}
	if got := h.Order("ns", "a", classes); !slices.Equal(got, classes) {
		t.Fatalf("no hint: %v", got)
	}
	h.Remember("ns", "a", "ca")
	if got := h.Order("ns", "a", classes); !slices.Equal(got, []string{"ca", "tls", "pk"}) {
		t.Fatalf("hint ca: %v", got)
	}
	if got := h.Order("ns", "a", []string{"tls", "pk"}); !slices.Equal(got, []string{"tls", "pk"}) {
		t.Fatalf("hint outside the classes: %v", got)
	}
	h.Forget("ns", "a")
	if got := h.Order("ns", "a", classes); !slices.Equal(got, classes) {
		t.Fatalf("forgotten: %v", got)
	}
	for i := range MaxHints + 1 {
		h.Remember("ns", string(rune('a'+i%26))+string(rune(i)), "pk")
	}
	if n := len(h.where); n > MaxHints {
		t.Fatalf("%d hints kept, at most %d", n, MaxHints)
	}
}
