package validation

import (
	"sort"
	"strings"
	"testing"
)

// The upstream_*_test.go files transcribe cert-manager's own validation
// tests (internal/apis/certmanager/validation/*_test.go at commit
// upstreamCommit) case by case: each case names its upstream test function
// and case name, builds the same object, and asserts the field paths
// cert-manager reports, as cert-manager renders them (messages are
// certfn's own wording of the same rule). Where certfn deliberately
// differs, the case says so (certfn field) and asserts certfn's result; the
// reasons are in docs/guide/migrating.md. Cases that only make sense inside
// Kubernetes (feature gates certfn has one fixed setting of; issuer types
// certfn does not implement) are listed in the notTranscribed tables with
// the reason.
const upstreamCommit = "2d0d7f7f74241a9cbf79f0e2a7bb247238ee09fd"

// upstreamCase is one transcribed case.
type upstreamCase struct {
	// test is the upstream test function, name the case name (map key).
	test, name string
	// run validates the case's object and returns certfn's errors.
	run func() ErrorList
	// paths are the field paths cert-manager reports (nil: valid).
	paths []string
	// certfn, when set, is certfn's deliberately different result (the
	// paths it reports) and why; paths then documents upstream only.
	certfn *divergence
}

// divergence is a case where certfn deliberately differs.
type divergence struct {
	paths []string
	why   string
}

// runUpstream runs the cases, comparing the set of reported paths.
// prefix is stripped from certfn's paths when the upstream test validated
// a sub-object (cert-manager's nil or "test" field path).
func runUpstream(t *testing.T, file, prefix string, cases []upstreamCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.test+"/"+c.name, func(t *testing.T) {
			want := c.paths
			if c.certfn != nil {
				want = c.certfn.paths
			}
			errs := c.run()
			got := pathSet(errs, prefix)
			if strings.Join(got, "\n") != strings.Join(uniqueSorted(want), "\n") {
				t.Errorf("%s: %s %q (cert-manager %s)\npaths %q, want %q\nerrors:\n%v",
					file, c.test, c.name, upstreamCommit[:12], got, uniqueSorted(want), errs)
			}
		})
	}
}

func pathSet(errs ErrorList, prefix string) []string {
	var out []string
	for _, e := range errs {
		p := strings.TrimPrefix(e.Path, prefix)
		p = strings.TrimPrefix(p, ".")
		out = append(out, p)
	}
	return uniqueSorted(out)
}

func uniqueSorted(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// notTranscribed is an upstream case left out, with the reason.
type notTranscribed struct{ test, name, why string }

// countCases reports how many cases a file transcribes (for the log).
func countCases(t *testing.T, file string, cases []upstreamCase, skipped []notTranscribed) {
	t.Helper()
	div := 0
	for _, c := range cases {
		if c.certfn != nil {
			div++
		}
	}
	t.Logf("%s: %d cases transcribed (%d where certfn deliberately differs), %d not transcribed", file, len(cases), div, len(skipped))
	for _, s := range skipped {
		if s.why == "" {
			t.Errorf("%s %q: no reason given for leaving it out", s.test, s.name)
		}
	}
}
