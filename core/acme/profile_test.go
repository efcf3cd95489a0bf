package acme

import "testing"

func TestProfileProblem(t *testing.T) {
	offered := map[string]string{"shortlived": "7 days", "classic": "90 days"}
	for _, tc := range []struct {
		profile  string
		profiles map[string]string
		want     string
	}{
		{"classic", offered, ""},
		{"nope", offered, `spec.acme.profile "nope": the ACME server offers only the profiles classic, shortlived`},
		{"classic", nil, `spec.acme.profile "classic": the ACME server offers no profiles (remove spec.acme.profile)`},
	} {
		if got := ProfileProblem(tc.profile, tc.profiles); got != tc.want {
			t.Errorf("ProfileProblem(%q): %q, want %q", tc.profile, got, tc.want)
		}
	}
}
