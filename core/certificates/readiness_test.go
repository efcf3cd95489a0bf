package certificates_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/ports"
)

var (
	notBefore = ct.T0.Add(-time.Hour)
	notAfter  = notBefore.Add(90 * 24 * time.Hour)
	renewal   = notBefore.Add(60 * 24 * time.Hour)
)

func TestReadinessStep(t *testing.T) {
	for _, tc := range []struct {
		name       string
		now        time.Time
		opts       []func(*api.Certificate)
		secret     func(t *testing.T, s *ports.Secret) *ports.Secret
		wantStatus api.ConditionStatus
		wantReason string
		wantTimes  bool
		wantNext   time.Time
		sharers    []*api.Certificate // other Certificates naming the secret
		check      func(t *testing.T, s api.CertificateStatus)
	}{
		{name: "valid", now: ct.T0, wantStatus: api.ConditionTrue, wantReason: "Ready", wantTimes: true, wantNext: renewal},
		{name: "renewal due but still valid", now: renewal.Add(time.Hour), wantStatus: api.ConditionTrue, wantReason: "Ready",
			wantTimes: true, wantNext: renewal},
		{name: "expired", now: notAfter, wantStatus: api.ConditionFalse, wantReason: "Expired", wantTimes: true, wantNext: renewal},
		{name: "secret missing", now: ct.T0, secret: func(*testing.T, *ports.Secret) *ports.Secret { return nil },
			wantStatus: api.ConditionFalse, wantReason: "DoesNotExist", wantNext: ct.T0.Add(7 * time.Minute)},
		{name: "key does not match", now: ct.T0, secret: func(t *testing.T, s *ports.Secret) *ports.Secret {
			s.Data["tls.key"] = ct.KeyPEM(t, ct.Key(t, nil))
			return s
		}, wantStatus: api.ConditionFalse, wantReason: "InvalidKeyPair", wantNext: ct.T0.Add(7 * time.Minute)},
		{name: "issuer changed", now: ct.T0, opts: []func(*api.Certificate){ct.WithIssuerRef("other", "")},
			wantStatus: api.ConditionFalse, wantReason: "IncorrectIssuer", wantTimes: true, wantNext: renewal},
		{name: "while issuing the due time is kept", now: ct.T0, opts: []func(*api.Certificate){ct.WithIssuing("Renewing", ct.T0)},
			wantStatus: api.ConditionTrue, wantReason: "Ready", wantTimes: true, wantNext: ct.T0.Add(7 * time.Minute)},
		{name: "another Certificate owns the secret: not Ready, no validity, no renewal time", now: ct.T0,
			sharers: []*api.Certificate{ct.Cert(ct.Named("api"))},
			secret: func(t *testing.T, s *ports.Secret) *ports.Secret {
				s.Annotations[api.AnnotationCertificateName] = "api"
				return s
			}, wantStatus: api.ConditionFalse, wantReason: certificates.ReasonDuplicateSecretName, wantNext: ct.T0.Add(7 * time.Minute),
			check: func(t *testing.T, s api.CertificateStatus) {
				want := `Secret "web-tls" is owned by Certificate "api" (the Certificates "api", "web" share spec.secretName)`
				if m := api.FindCondition(s.Conditions, api.CertificateConditionReady).Message; m != want {
					t.Errorf("message %q, want %q", m, want)
				}
			}},
		{name: "owns the secret again: the Issuing=False DuplicateSecretName left is removed", now: ct.T0,
			sharers: []*api.Certificate{ct.Cert(ct.Named("api"))},
			opts: []func(*api.Certificate){func(c *api.Certificate) {
				api.SetCondition(&c.Status.Conditions, api.Condition{Type: api.CertificateConditionIssuing, Status: api.ConditionFalse,
					Reason: certificates.ReasonDuplicateSecretName, Message: "owned by api"}, ct.T0.Add(-time.Hour))
			}},
			wantStatus: api.ConditionTrue, wantReason: "Ready", wantTimes: true, wantNext: renewal,
			check: func(t *testing.T, s api.CertificateStatus) {
				if c := api.FindCondition(s.Conditions, api.CertificateConditionIssuing); c != nil {
					t.Errorf("Issuing left: %+v", c)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := ct.Cert()
			issued := ct.NewCA(t).IssueSecret(t, base, nil, ct.Leaf{NotBefore: notBefore, NotAfter: notAfter})
			sec := &issued.Secret
			if tc.secret != nil {
				sec = tc.secret(t, sec)
			}
			crt := ct.Cert(append([]func(*api.Certificate){func(c *api.Certificate) {
				c.Generation = 4
				// Stale values from an earlier certificate.
				c.Status.NotAfter = api.NewTime(ct.T0.Add(-time.Hour))
				c.Status.RenewalTime = api.NewTime(ct.T0.Add(-2 * time.Hour))
			}}, tc.opts...)...)
			st := ct.Sharing(ct.State(crt, sec), tc.sharers...)
			st.Now = tc.now
			st.NextRunAt = ct.T0.Add(7 * time.Minute)
			w := &ct.Writer{}
			env, _, _ := ct.Env(ct.NewMemSecrets(), w)
			out, err := certificates.ReadinessStep(context.Background(), env, st)
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			if !out.Wrote || strings.Join(w.Ops(), ",") != "UpdateCertificate" {
				t.Fatalf("outcome %+v calls %v; want one UpdateCertificate", out, w.Ops())
			}
			up := w.Calls[0]
			if !up.NextRunAt.Equal(tc.wantNext) {
				t.Errorf("nextRunAt = %s, want %s", up.NextRunAt, tc.wantNext)
			}
			s := up.Cert.Status
			c := api.FindCondition(s.Conditions, api.CertificateConditionReady)
			if c == nil || c.Status != tc.wantStatus || c.Reason != tc.wantReason || c.ObservedGeneration != 4 {
				t.Fatalf("Ready = %+v, want %s/%s at generation 4", c, tc.wantStatus, tc.wantReason)
			}
			if c.LastTransitionTime == nil || !c.LastTransitionTime.Equal(tc.now) {
				t.Errorf("lastTransitionTime = %v, want now", c.LastTransitionTime)
			}
			if tc.wantTimes {
				if s.NotBefore == nil || !s.NotBefore.Equal(notBefore) || s.NotAfter == nil || !s.NotAfter.Equal(notAfter) ||
					s.RenewalTime == nil || !s.RenewalTime.Equal(renewal) {
					t.Errorf("times = %v %v %v, want %s %s %s", s.NotBefore, s.NotAfter, s.RenewalTime, notBefore, notAfter, renewal)
				}
			} else if s.NotBefore != nil || s.NotAfter != nil || s.RenewalTime != nil {
				t.Errorf("times not cleared without a usable certificate: %v %v %v", s.NotBefore, s.NotAfter, s.RenewalTime)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestReadinessStepNoWriteWhenUnchanged(t *testing.T) {
	crt := ct.Cert()
	sec := ct.NewCA(t).IssueSecret(t, crt, nil, ct.Leaf{NotBefore: notBefore, NotAfter: notAfter}).Secret
	st := ct.State(crt, &sec)
	if !certificates.ApplyReadiness(st) {
		t.Fatal("first Apply reported no change")
	}
	ready := *api.FindCondition(crt.Status.Conditions, api.CertificateConditionReady)
	w := &ct.Writer{}
	env, _, m := ct.Env(ct.NewMemSecrets(), w)
	for i, now := range []time.Time{ct.T0, ct.T0.Add(time.Hour), renewal.Add(time.Minute)} {
		st.Now = now
		out, err := certificates.ReadinessStep(context.Background(), env, st)
		if err != nil || out.Wrote || len(w.Calls) != 0 {
			t.Fatalf("at %s: outcome %+v err %v calls %v; want no write", now, out, err, w.Ops())
		}
		// Every pass reports the time left until notAfter.
		if v := m.Values[certificates.MetricExpirySeconds]; len(v) != i+1 || v[i] != notAfter.Sub(now).Seconds() {
			t.Fatalf("at %s: %s values %v, want last %v", now, certificates.MetricExpirySeconds, v, notAfter.Sub(now).Seconds())
		}
	}
	if got := *api.FindCondition(crt.Status.Conditions, api.CertificateConditionReady); !got.LastTransitionTime.Equal(ready.LastTransitionTime.Time) {
		t.Fatal("lastTransitionTime moved without a status change")
	}
	// Expiry is a change: written once, then quiet again.
	st.Now = notAfter.Add(time.Second)
	if out, err := certificates.ReadinessStep(context.Background(), env, st); err != nil || !out.Wrote {
		t.Fatalf("expiry not written: %+v %v", out, err)
	}
	if out, _ := certificates.ReadinessStep(context.Background(), env, st); out.Wrote {
		t.Fatal("written twice for the same expiry")
	}
}

func TestReadinessStepWriteError(t *testing.T) {
	w := &ct.Writer{Err: ports.ErrConflict}
	env, _, _ := ct.Env(ct.NewMemSecrets(), w)
	out, err := certificates.ReadinessStep(context.Background(), env, ct.State(ct.Cert(), nil))
	if !errors.Is(err, ports.ErrConflict) || !strings.Contains(err.Error(), "update Ready condition") || out.Wrote {
		t.Fatalf("Step = %+v, %v", out, err)
	}
}
