package certificates_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
)

// Time alone never re-issues sooner than certificates.MinReissueInterval
// after the last issuance, whatever renewBefore (a stored Certificate
// older than its validation), the issuer's lifetime or an ACME server's
// notBefore say; Ready says when the renewal is held.
func TestTriggerStepNeverReissuesFasterThanTheFloor(t *testing.T) {
	tenMinutes := func(c *api.Certificate) {
		c.Spec.Duration, c.Spec.RenewBefore = api.NewDuration(10*time.Minute), api.NewDuration(10*time.Minute-time.Second)
	}
	for _, tc := range []struct {
		name string
		spec func(*api.Certificate)
		leaf ct.Leaf
		// issuedAt, when set, is when the current revision's request was issued.
		issuedAt   time.Time
		now        time.Duration // after T0
		wantIssue  string        // the Issuing reason, "" for none
		wantHeld   time.Time     // RequeueAt and status.renewalTime when held
		wantReady  api.ConditionStatus
		wantReadyM string
	}{
		{name: "renewBefore 9m59s of a 10m certificate: held 5m after its issuance", spec: tenMinutes,
			leaf: ct.Leaf{NotBefore: ct.T0, NotAfter: ct.T0.Add(10 * time.Minute)}, now: time.Second,
			wantHeld: ct.T0.Add(5 * time.Minute), wantReady: api.ConditionTrue,
			wantReadyM: "renewal held until 2026-01-01T12:05:00Z, 5m0s after the last issuance: the issued certificate lives 10m0s"},
		{name: "renewBefore 9m59s of a 10m certificate: renewed at the floor", spec: tenMinutes,
			leaf: ct.Leaf{NotBefore: ct.T0, NotAfter: ct.T0.Add(10 * time.Minute)}, now: 5 * time.Minute, wantIssue: "Renewing"},
		{name: "issued with a minute to live (a CA expiring soon): expired, held", spec: tenMinutes,
			leaf: ct.Leaf{NotBefore: ct.T0, NotAfter: ct.T0.Add(time.Minute)}, now: 2 * time.Minute,
			wantHeld: ct.T0.Add(5 * time.Minute), wantReady: api.ConditionFalse,
			wantReadyM: "it is re-issued at 2026-01-01T12:05:00Z, 5m0s after the last issuance"},
		{name: "issued with a minute to live: re-issued at the floor", spec: tenMinutes,
			leaf: ct.Leaf{NotBefore: ct.T0, NotAfter: ct.T0.Add(time.Minute)}, now: 5 * time.Minute, wantIssue: "Expired"},
		{name: "back-dated notBefore (an ACME server): the floor counts from the request's issuance",
			leaf:     ct.Leaf{NotBefore: ct.T0.Add(-time.Hour), NotAfter: ct.T0.Add(30 * time.Second)},
			issuedAt: ct.T0, now: time.Minute, wantHeld: ct.T0.Add(6*time.Minute + 3*time.Second), wantReady: api.ConditionFalse,
			wantReadyM: "6m3s after the last issuance"},
		{name: "a 6-day certificate: the floor is an hour",
			leaf: ct.Leaf{NotBefore: ct.T0, NotAfter: ct.T0.Add(6 * 24 * time.Hour)},
			spec: func(c *api.Certificate) { c.Spec.RenewBefore = api.NewDuration(30 * 24 * time.Hour) },
			now:  4 * 24 * time.Hour, wantIssue: "Renewing"},
		{name: "a changed spec still re-issues at once",
			spec: func(c *api.Certificate) { tenMinutes(c); c.Spec.DNSNames = []string{"other.example.com"} },
			leaf: ct.Leaf{NotBefore: ct.T0, NotAfter: ct.T0.Add(10 * time.Minute)}, now: time.Second, wantIssue: "SecretMismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca := ct.NewCA(t)
			crt := ct.Cert()
			if tc.spec != nil {
				tc.spec(crt)
			}
			// The leaf is issued for the original names: a changed spec differs.
			issued := ca.IssueSecret(t, ct.Cert(), nil, tc.leaf)
			var st *certificates.State
			if !tc.issuedAt.IsZero() {
				crt.Status.Revision = ptr(1)
				st = ct.State(crt, &issued.Secret, ct.Request(t, crt, issued.Key, 1, ct.Issued(issued.CertPEM, ca.PEM, tc.issuedAt)))
			} else {
				st = ct.State(crt, &issued.Secret)
			}
			st.Now = ct.T0.Add(tc.now)
			w := &ct.Writer{}
			env, _, _ := ct.Env(ct.NewMemSecrets(), w)
			out, err := certificates.TriggerStep(context.Background(), env, st)
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			if tc.wantIssue != "" {
				if !out.Wrote {
					t.Fatalf("no issuance (outcome %+v)", out)
				}
				c := api.FindCondition(w.Only("UpdateCertificate")[0].Cert.Status.Conditions, api.CertificateConditionIssuing)
				if c == nil || c.Reason != tc.wantIssue {
					t.Fatalf("Issuing = %+v, want reason %s", c, tc.wantIssue)
				}
				return
			}
			if out.Wrote || len(w.Calls) != 0 {
				t.Fatalf("issued before the floor: outcome %+v, calls %v", out, w.Ops())
			}
			if !out.RequeueAt.Equal(tc.wantHeld) {
				t.Errorf("requeue at %s, want %s", out.RequeueAt, tc.wantHeld)
			}
			if rt := certificates.RenewalTime(st); !rt.Equal(tc.wantHeld) && tc.wantReady == api.ConditionTrue {
				t.Errorf("RenewalTime = %s, want %s", rt, tc.wantHeld)
			}
			certificates.ApplyReadiness(st)
			c := api.FindCondition(st.Cert.Status.Conditions, api.CertificateConditionReady)
			if c == nil || c.Status != tc.wantReady || !strings.Contains(c.Message, tc.wantReadyM) {
				t.Errorf("Ready = %+v, want %s containing %q", c, tc.wantReady, tc.wantReadyM)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
