package main

import (
	"strings"
	"testing"
)

func TestSelector(t *testing.T) {
	labels := map[string]string{"app": "web", "tier": "frontend", "team": "a"}
	for _, tc := range []struct {
		sel  string
		want bool
		err  string
	}{
		{"", true, ""},
		{"app=web", true, ""},
		{"app==web,tier=frontend", true, ""},
		{"app=api", false, ""},
		{"app!=api", true, ""},
		{"app!=web", false, ""},
		{"missing!=x", true, ""},
		{"team", true, ""},
		{"!team", false, ""},
		{"!owner", true, ""},
		{"tier in (frontend, backend)", true, ""},
		{"tier notin (frontend)", false, ""},
		{"owner notin (x)", true, ""},
		{"app=web, tier in (backend)", false, ""},
		{"tier in frontend", false, "want  in (value, ...)"},
		{"tier in ()", false, "in needs at least one value"},
		{"a=b=c", false, "invalid value"},
		{"=x", false, "invalid label key"},
	} {
		t.Run(tc.sel, func(t *testing.T) {
			s, err := parseSelector(tc.sel)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.matches(labels); got != tc.want {
				t.Fatalf("matches = %t, want %t", got, tc.want)
			}
		})
	}
}

func FuzzSelector(f *testing.F) {
	for _, s := range []string{"a=b", "a in (x,y),!c", "x notin (y)", "k!=v"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := parseSelector(s)
		if err == nil {
			_ = sel.matches(map[string]string{"a": "b"})
		}
	})
}
