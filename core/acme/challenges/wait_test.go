package challenges_test

import (
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/acmetest"
	"github.com/certfn/certfn/core/acme/challenges"
	"github.com/certfn/certfn/core/api"
)

// waitInsteadOfSelfCheck (cert-manager's solver field): no self-check; the
// challenge is accepted once the wait since it was presented has passed.
// The wait is the record's nextRunAt on the injected clock, never a sleep.
// (The step does not depend on the challenge type; DNS-01 adds only the
// issuer's solver check, covered elsewhere.)
func TestWaitInsteadOfSelfCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration
		typ  api.ACMEChallengeType
	}{
		{"HTTP-01 waits 30s", 30 * time.Second, api.ACMEChallengeTypeHTTP01},
		{"HTTP-01 waits 2m", 2 * time.Minute, api.ACMEChallengeTypeHTTP01},
		{"zero: accepted at once", 0, api.ACMEChallengeTypeHTTP01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ck := &checker{} // would never pass
			r := acmetest.NewRig(t, nil, challenges.Config{HTTP01: ck})
			c := challenge("c", "www.example.com", tc.typ, 0)
			c.Spec.Solver = api.ACMEChallengeSolver{HTTP01: &api.ACMEChallengeSolverHTTP01{}, WaitInsteadOfSelfCheck: api.NewDuration(tc.wait)}
			acme.StampSpec(&c.ObjectMeta, c.Spec)
			r.Create(c)
			r.MustReconcile(key("c")) // schedule
			r.MustReconcile(key("c")) // present
			presented := get(r, "c").Status.PresentedAt
			if presented == nil {
				t.Fatalf("not presented: %+v", get(r, "c").Status)
			}
			r.MustReconcile(key("c"))
			if tc.wait > 0 {
				got := get(r, "c")
				if got.Status.Accepted || !strings.Contains(got.Status.Reason, "without self-check") {
					t.Fatalf("before the wait: %+v", got.Status)
				}
				if next := r.Record(key("c")).NextRunAt; !next.Equal(presented.Add(tc.wait)) {
					t.Fatalf("looks again at %s, want presentedAt+%s = %s", next, tc.wait, presented.Add(tc.wait))
				}
				if len(r.Client.Calls()) != 0 {
					t.Fatalf("accepted before the wait: %v", r.Client.Calls())
				}
				r.Clock.Advance(tc.wait - time.Second)
				r.MustReconcile(key("c")) // still early
				if len(r.Client.Calls()) != 0 {
					t.Fatalf("accepted before the wait: %v", r.Client.Calls())
				}
				r.Clock.Advance(time.Second)
				r.MustReconcile(key("c"))
			}
			got := get(r, "c")
			if !got.Status.Accepted {
				t.Fatalf("not accepted after the wait: %+v", got.Status)
			}
			if ck.calls != 0 {
				t.Errorf("self-checked %d times, want none", ck.calls)
			}
			if calls := r.Client.Calls(); len(calls) != 1 || !strings.HasPrefix(calls[0], "AcceptChallenge") {
				t.Errorf("calls %v, want one AcceptChallenge", calls)
			}
		})
	}
}
