package certificatesigningrequests

import (
	"context"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/signers"
)

// issuedCount is a Quota double: n CSRs of "bob" issued, the oldest at
// oldest; it records the requester it was asked about.
type issuedCount struct {
	n      int
	oldest time.Time
	asked  string
}

func (q *issuedCount) IssuedSince(_ context.Context, username string, _ time.Time) (int, time.Time, error) {
	q.asked = username
	if username != "bob" {
		return 0, time.Time{}, nil
	}
	return q.n, q.oldest, nil
}

// The issuance quota applies to CSRs by requester (spec.username): an
// approved CSR of a requester who had the limit issued in the last hour
// waits (IssuanceQuotaReached) until the oldest of those is an hour old,
// and the signer is not called; under the limit, or without one, it is
// signed.
func TestSigningIssuanceQuotaByRequester(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		limit  int
		issued int
		held   bool
	}{
		{"no quota", 0, 50, false},
		{"under the quota", 3, 2, false},
		{"at the quota", 3, 3, true},
		{"over the quota", 3, 7, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := csrWith("clusterissuers.cert-manager.io/ca", func(c *api.CertificateSigningRequest) { c.Spec.Request = ct.BareCSR(t, "web.example.com") })
			Approve(c, "cert-manager", "r", "m", t0)
			q := &issuedCount{n: tc.issued, oldest: t0.Add(-40 * time.Minute)}
			sig := &recordingSigner{}
			w := &keptWrites{}
			env := &Env{Writer: w, Issuers: readyIssuer{}, Signers: map[string]signers.Signer{"ca": sig}, ClusterResourceNamespace: "cert-manager",
				WaitPoll: time.Minute, IssuancesPerHour: tc.limit, Quota: q}
			out, err := SigningStep(context.Background(), env, &State{CSR: c, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			if !tc.held {
				if sig.got == nil {
					t.Fatalf("not signed: %+v", out)
				}
				return
			}
			if sig.got != nil || out.Wrote || w.n != 0 {
				t.Fatalf("signed %v, wrote %v; want held by the quota", sig.got != nil, out.Wrote)
			}
			if q.asked != "bob" || out.Waiting == nil || out.Waiting.Reason != ReasonIssuanceQuota || !out.RequeueAt.Equal(t0.Add(20*time.Minute)) {
				t.Fatalf("asked about %q; outcome %+v (waiting %+v); want IssuanceQuotaReached until %v", q.asked, out, out.Waiting, t0.Add(20*time.Minute))
			}
		})
	}
}
