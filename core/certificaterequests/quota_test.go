package certificaterequests_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/signers"
)

// fakeQuota is a test double of certificaterequests.Quota over fixed issuance times
// per namespace.
type fakeQuota struct {
	issued map[string][]time.Time
	err    error
	calls  int
}

func (q *fakeQuota) IssuedSince(_ context.Context, ns string, since time.Time) (int, time.Time, error) {
	q.calls++
	if q.err != nil {
		return 0, time.Time{}, q.err
	}
	n, oldest := 0, time.Time{}
	for _, at := range q.issued[ns] {
		if at.After(since) {
			n++
			if oldest.IsZero() || at.Before(oldest) {
				oldest = at
			}
		}
	}
	return n, oldest, nil
}

// resumingSigner is a test double of a signer whose work, once begun,
// goes on elsewhere (signers.Resumer, as the ACME issuer's Order).
type resumingSigner struct {
	*fakeSigner
	begun bool
	err   error
	asked int
}

func (s *resumingSigner) Begun(context.Context, signers.Request) (bool, error) {
	s.asked++
	return s.begun, s.err
}

func TestSigningStepIssuanceQuota(t *testing.T) {
	ago := func(d time.Duration) time.Time { return ct.T0.Add(-d) }
	for _, tc := range []struct {
		name   string
		limit  int
		issued map[string][]time.Time
		// begun, when set, makes the signer a signers.Resumer answering it.
		begun *bool
		// wantHeld: the request stays pending until wantFree.
		wantHeld bool
		wantFree time.Time
		// wantCount: the quota is counted.
		wantCount bool
	}{
		{name: "off by default: nothing is counted", issued: map[string][]time.Time{ct.Namespace: {ago(time.Minute), ago(2 * time.Minute)}}},
		{name: "below the limit", limit: 3, issued: map[string][]time.Time{ct.Namespace: {ago(time.Minute), ago(2 * time.Minute)}}, wantCount: true},
		{name: "limit reached: pending until the oldest is an hour old", limit: 2,
			issued:   map[string][]time.Time{ct.Namespace: {ago(10 * time.Minute), ago(50 * time.Minute)}},
			wantHeld: true, wantFree: ct.T0.Add(10 * time.Minute), wantCount: true},
		{name: "over the limit (parallel signing): still pending", limit: 1,
			issued:   map[string][]time.Time{ct.Namespace: {ago(10 * time.Minute), ago(20 * time.Minute)}},
			wantHeld: true, wantFree: ct.T0.Add(40 * time.Minute), wantCount: true},
		{name: "issuances an hour old or older leave the window", limit: 2,
			issued:    map[string][]time.Time{ct.Namespace: {ago(10 * time.Minute), ago(time.Hour), ago(3 * time.Hour)}},
			wantCount: true},
		{name: "another namespace's issuances do not count", limit: 1,
			issued:    map[string][]time.Time{"other": {ago(time.Minute)}},
			wantCount: true},
		{name: "an ACME Order begun before the limit was reached is finished", limit: 1,
			issued: map[string][]time.Time{ct.Namespace: {ago(time.Minute)}}, begun: ptr(true), wantCount: true},
		{name: "no ACME Order is begun at the limit", limit: 1,
			issued: map[string][]time.Time{ct.Namespace: {ago(time.Minute)}}, begun: ptr(false),
			wantHeld: true, wantFree: ct.T0.Add(59 * time.Minute), wantCount: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			q := &fakeQuota{issued: tc.issued}
			f.env.IssuancesPerHour, f.env.Quota = tc.limit, q
			var rs *resumingSigner
			if tc.begun != nil {
				rs = &resumingSigner{fakeSigner: f.signer, begun: *tc.begun}
				f.env.Signers["ca"] = rs
			}
			out := f.step(t)
			if got := q.calls > 0; got != tc.wantCount {
				t.Errorf("quota counted %d times, want counted = %v", q.calls, tc.wantCount)
			}
			if !out.Wrote || len(f.w.Calls) != 1 {
				t.Fatalf("outcome %+v writer %v; want one write", out, f.w.Ops())
			}
			up := f.w.Calls[0]
			c := cond(up.Request, api.CertificateRequestConditionReady)
			if !tc.wantHeld {
				if f.signer.calls != 1 || !up.Request.IsIssued() {
					t.Fatalf("signer called %d times, Ready %+v; want signed", f.signer.calls, c)
				}
				return
			}
			if f.signer.calls != 0 {
				t.Fatal("the signer was called at the limit")
			}
			if rs != nil && rs.asked != 1 {
				t.Errorf("Begun asked %d times, want 1", rs.asked)
			}
			wantMsg := "Issuance quota of namespace default reached: "
			if c == nil || c.Status != api.ConditionFalse || c.Reason != api.CertificateRequestReasonPending ||
				!strings.HasPrefix(c.Message, wantMsg) || !strings.Contains(c.Message, "CERTFN_QUOTA_ISSUANCES_PER_HOUR") ||
				!strings.Contains(c.Message, "signing waits until "+tc.wantFree.Format(time.RFC3339)) {
				t.Fatalf("Ready = %+v, want False/Pending naming the quota and %s", c, tc.wantFree.Format(time.RFC3339))
			}
			if !up.NextRunAt.Equal(tc.wantFree) || up.Request.IsFinal() {
				t.Errorf("nextRunAt %s (want %s), final %v", up.NextRunAt, tc.wantFree, up.Request.IsFinal())
			}
			// Looked at again before the quota frees up: no second write,
			// a requeue at the same time, and why.
			f.st.Now = ct.T0.Add(time.Minute)
			out = f.step(t)
			if out.Wrote || len(f.w.Calls) != 1 || !out.RequeueAt.Equal(tc.wantFree) || !strings.Contains(out.Why, "Issuance quota") {
				t.Fatalf("repeat: outcome %+v writer %v; want no write, requeue at %s and why", out, f.w.Ops(), tc.wantFree)
			}
			// Once the window has moved past the issuances, it is signed.
			q.issued[ct.Namespace] = nil
			f.st.Now = tc.wantFree
			if out = f.step(t); !out.Wrote || f.signer.calls != 1 || !f.w.Calls[1].Request.IsIssued() {
				t.Fatalf("after the window: outcome %+v signer %d; want signed", out, f.signer.calls)
			}
		})
	}
}

// The limit counts the rolling hour: (limit+1)-th request at T0 waits for
// the oldest issuance; at that time the window holds one fewer and it is
// signed, without the test double forgetting anything.
func TestSigningStepIssuanceQuotaWindowMoves(t *testing.T) {
	f := newFixture(t)
	oldest := ct.T0.Add(-45 * time.Minute)
	q := &fakeQuota{issued: map[string][]time.Time{ct.Namespace: {oldest, ct.T0.Add(-5 * time.Minute)}}}
	f.env.IssuancesPerHour, f.env.Quota = 2, q
	if out := f.step(t); !out.Wrote || f.signer.calls != 0 || !f.w.Calls[0].NextRunAt.Equal(oldest.Add(time.Hour)) {
		t.Fatalf("at the limit: outcome %+v signer %d nextRunAt %v", out, f.signer.calls, f.w.Calls)
	}
	f.st.Now = oldest.Add(time.Hour - time.Second)
	if out := f.step(t); out.Wrote || f.signer.calls != 0 {
		t.Fatal("signed a second before the quota freed up")
	}
	f.st.Now = oldest.Add(time.Hour)
	if out := f.step(t); !out.Wrote || f.signer.calls != 1 {
		t.Fatalf("not signed when the oldest issuance left the window: %+v", out)
	}
}

func TestSigningStepIssuanceQuotaErrors(t *testing.T) {
	boom := errors.New("store throttled")
	for _, tc := range []struct {
		name      string
		setup     func(f *fixture, q *fakeQuota)
		quota     bool
		want      string
		permanent bool
	}{
		{"counting fails", func(_ *fixture, q *fakeQuota) { q.err = boom }, true,
			"count the issuances of namespace default for the issuance quota: store throttled", false},
		{"Begun fails", func(f *fixture, _ *fakeQuota) {
			f.env.Signers["ca"] = &resumingSigner{fakeSigner: f.signer, err: boom}
		}, true, "issuance quota: store throttled", false},
		{"a limit without a counter", func(*fixture, *fakeQuota) {}, false,
			"the issuance quota is set (1 per hour) but the step has no Quota", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			q := &fakeQuota{issued: map[string][]time.Time{ct.Namespace: {ct.T0.Add(-time.Minute)}}}
			f.env.IssuancesPerHour = 1
			if tc.quota {
				f.env.Quota = q
			}
			tc.setup(f, q)
			out, err := certificaterequests.SigningStep(context.Background(), f.env, f.st)
			if err == nil || !strings.Contains(err.Error(), tc.want) || errs.IsPermanent(err) != tc.permanent {
				t.Fatalf("Step = %+v, %v; want %q (permanent %v)", out, err, tc.want, tc.permanent)
			}
			if out.Wrote || len(f.w.Calls) != 0 || f.signer.calls != 0 {
				t.Fatalf("wrote %v, signer %d", f.w.Ops(), f.signer.calls)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

var _ certificaterequests.Quota = (*fakeQuota)(nil)
