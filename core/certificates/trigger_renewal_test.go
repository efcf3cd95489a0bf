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

// spec.renewal (cert-manager's renewal policy and windows): Disabled never
// issues because of time, windows move the renewal time, all from the
// injected clock (State.Now).
func TestTriggerStepRenewalPolicy(t *testing.T) {
	disabled := func(c *api.Certificate) { c.Spec.Renewal = &api.CertificateRenewal{Policy: api.RenewalPolicyDisabled} }
	// The triggerFixture's certificate runs from T0-1h for 90 days; its renewal
	// time is notBefore+60d. A daily window opening at 03:00 UTC for one
	// hour moves the renewal to the next 03:00 after that.
	window := func(cron, tz string, d time.Duration) func(*api.Certificate) {
		return func(c *api.Certificate) {
			c.Spec.Renewal = &api.CertificateRenewal{Policy: api.RenewalPolicyRenewBefore,
				Windows: []api.CertificateRenewalWindows{{Cron: cron, Timezone: tz, WindowDuration: api.NewDuration(d)}}}
		}
	}
	for _, tc := range []struct {
		name      string
		spec      func(*api.Certificate)
		now       func(f *triggerFixture) time.Time
		wantIssue bool
		wantWhy   string
		// wantRequeue, when set, is the expected RequeueAt.
		wantRequeue func(f *triggerFixture) time.Time
	}{
		{name: "disabled: renewal time passed, no issuance", spec: disabled,
			now: func(f *triggerFixture) time.Time { return f.renewAt().Add(time.Hour) }, wantWhy: "renewal is disabled"},
		{name: "disabled: expired, still no issuance", spec: disabled,
			now: func(f *triggerFixture) time.Time { return f.issued.Leaf.NotAfter.Add(time.Hour) }, wantWhy: "renewal is disabled"},
		{name: "RenewBefore without windows renews at the renewal time", spec: func(c *api.Certificate) {
			c.Spec.Renewal = &api.CertificateRenewal{Policy: api.RenewalPolicyRenewBefore}
		},
			now: func(f *triggerFixture) time.Time { return f.renewAt() }, wantIssue: true},
		{name: "window not yet open: requeued at its opening", spec: window("0 3 * * *", "", time.Hour),
			now: func(f *triggerFixture) time.Time { return f.renewAt() },
			wantRequeue: func(f *triggerFixture) time.Time {
				r := f.renewAt().UTC()
				open := time.Date(r.Year(), r.Month(), r.Day(), 3, 0, 0, 0, time.UTC)
				if !open.After(r) {
					open = open.Add(24 * time.Hour)
				}
				return open
			}, wantWhy: "no reason to issue"},
		{name: "window open at the renewal time: renews then", spec: window("* * * * *", "", time.Hour),
			now: func(f *triggerFixture) time.Time { return f.renewAt() }, wantIssue: true},
		{name: "window in a time zone", spec: window("0 3 * * *", "Asia/Tokyo", time.Hour),
			now: func(f *triggerFixture) time.Time { return f.renewAt() },
			wantRequeue: func(f *triggerFixture) time.Time {
				tokyo, err := time.LoadLocation("Asia/Tokyo")
				if err != nil {
					t.Fatal(err)
				}
				r := f.renewAt().In(tokyo)
				open := time.Date(r.Year(), r.Month(), r.Day(), 3, 0, 0, 0, tokyo)
				if !open.After(r) {
					open = open.AddDate(0, 0, 1)
				}
				return open.UTC()
			}, wantWhy: "no reason to issue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTriggerFixture(t, tc.spec)
			f.st.Now = tc.now(f)
			w := &ct.Writer{}
			env, _, _ := ct.Env(ct.NewMemSecrets(), w)
			out, err := certificates.TriggerStep(context.Background(), env, f.st)
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			if out.Wrote != tc.wantIssue {
				t.Fatalf("wrote = %v, want %v (outcome %+v)", out.Wrote, tc.wantIssue, out)
			}
			if tc.wantIssue {
				c := api.FindCondition(w.Only("UpdateCertificate")[0].Cert.Status.Conditions, api.CertificateConditionIssuing)
				if c == nil || c.Reason != "Renewing" {
					t.Fatalf("Issuing = %+v, want Renewing", c)
				}
				return
			}
			if len(w.Calls) != 0 {
				t.Errorf("calls = %v, want none", w.Ops())
			}
			if !strings.Contains(out.Why, tc.wantWhy) {
				t.Errorf("why = %q, want %q", out.Why, tc.wantWhy)
			}
			if tc.wantRequeue != nil {
				if want := tc.wantRequeue(f); !out.RequeueAt.Equal(want) {
					t.Errorf("requeue at %s, want %s", out.RequeueAt, want)
				}
			} else if !out.RequeueAt.IsZero() {
				t.Errorf("requeue at %s, want none", out.RequeueAt)
			}
		})
	}
}

// With renewal disabled the Certificate has no renewal time (status and
// wake-ups), and an expired one is not Ready.
func TestRenewalDisabledStatus(t *testing.T) {
	f := newTriggerFixture(t, func(c *api.Certificate) {
		c.Spec.Renewal = &api.CertificateRenewal{Policy: api.RenewalPolicyDisabled}
	})
	if rt := certificates.RenewalTime(f.st); !rt.IsZero() {
		t.Errorf("RenewalTime = %s, want none", rt)
	}
	f.st.Now = f.issued.Leaf.NotAfter.Add(time.Minute)
	r := certificates.Evaluate(f.st)
	if r.Reason != "Expired" || !r.RenewalDisabled || !strings.Contains(r.Message, "renewal is disabled") {
		t.Errorf("Evaluate = %+v, want Expired with renewal disabled", r)
	}
}
