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

// triggerFixture is a Certificate with a valid stored secret issued by a test CA
// (notBefore T0-1h, 90 days): renewal at notBefore+60d.
type triggerFixture struct {
	ca     *ct.CA
	crt    *api.Certificate
	issued ct.IssuedSecret
	st     *certificates.State
}

func newTriggerFixture(t *testing.T, opts ...func(*api.Certificate)) *triggerFixture {
	t.Helper()
	f := &triggerFixture{ca: ct.NewCA(t), crt: ct.Cert(opts...)}
	f.issued = f.ca.IssueSecret(t, f.crt, nil, ct.Leaf{})
	sec := f.issued.Secret
	f.st = ct.State(f.crt, &sec)
	return f
}

func (f *triggerFixture) renewAt() time.Time { return f.issued.Leaf.NotBefore.Add(60 * 24 * time.Hour) }

// Seed 002, "trigger": every condition that causes an issuance.
func TestTriggerStepTriggersIssuance(t *testing.T) {
	otherKeyPEM := func(t *testing.T) []byte { return ct.KeyPEM(t, ct.Key(t, nil)) }
	for _, tc := range []struct {
		name       string
		setup      func(t *testing.T, f *triggerFixture)
		wantReason string
		wantMsg    string
		wantReady  api.ConditionStatus
	}{
		{"missing secret", func(t *testing.T, f *triggerFixture) { f.st.Secret = nil },
			"DoesNotExist", `Secret "web-tls" does not exist`, api.ConditionFalse},
		{"missing tls.crt", func(t *testing.T, f *triggerFixture) { delete(f.st.Secret.Data, "tls.crt") },
			"MissingData", "does not contain a certificate and a private key", api.ConditionFalse},
		{"missing tls.key", func(t *testing.T, f *triggerFixture) { f.st.Secret.Data["tls.key"] = nil },
			"MissingData", "does not contain a certificate and a private key", api.ConditionFalse},
		{"undecodable key", func(t *testing.T, f *triggerFixture) {
			f.st.Secret.Data["tls.key"] = []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
		}, "InvalidKeyPair", "invalid private key", api.ConditionFalse},
		{"undecodable certificate", func(t *testing.T, f *triggerFixture) { f.st.Secret.Data["tls.crt"] = []byte("not a certificate") },
			"InvalidCertificate", "invalid certificate", api.ConditionFalse},
		{"key does not match certificate", func(t *testing.T, f *triggerFixture) { f.st.Secret.Data["tls.key"] = otherKeyPEM(t) },
			"InvalidKeyPair", "does not match the certificate", api.ConditionFalse},
		{"private key no longer matches spec.privateKey", func(t *testing.T, f *triggerFixture) {
			f.crt.Spec.PrivateKey.Size = 384
		}, "SecretMismatch", "spec.privateKey.size", api.ConditionFalse},
		{"issuer name changed", func(t *testing.T, f *triggerFixture) { f.crt.Spec.IssuerRef.Name = "other" },
			"IncorrectIssuer", `previously issued by Issuer "ca"`, api.ConditionFalse},
		{"issuer kind changed", func(t *testing.T, f *triggerFixture) { f.crt.Spec.IssuerRef.Kind = api.KindClusterIssuer },
			"IncorrectIssuer", `previously issued by Issuer "ca"`, api.ConditionFalse},
		{"current request no longer matches the spec", func(t *testing.T, f *triggerFixture) {
			cr := ct.Request(t, f.crt, f.issued.Key, 1, ct.Issued(f.issued.CertPEM, f.ca.PEM, ct.T0.Add(-time.Hour)))
			f.st = ct.State(f.crt, f.st.Secret, cr)
			rev := 1
			f.crt.Status.Revision = &rev
			f.crt.Spec.Duration = api.NewDuration(48 * time.Hour)
		}, "RequestChanged", "spec.duration", api.ConditionFalse},
		{"no current request and the certificate does not match the spec", func(t *testing.T, f *triggerFixture) {
			rev := 1
			f.crt.Status.Revision = &rev
			f.crt.Spec.DNSNames = append(f.crt.Spec.DNSNames, "new.example.com")
		}, "SecretMismatch", "spec.dnsNames", api.ConditionFalse},
		{"renewal time reached", func(t *testing.T, f *triggerFixture) { f.st.Now = f.renewAt() },
			"Renewing", "Renewing certificate as renewal was scheduled at", api.ConditionTrue},
		{"ACME renewal window earlier than the renewal time", func(t *testing.T, f *triggerFixture) {
			f.crt.Status.RenewalInfo = &api.RenewalInfo{SelectedTime: api.NewTime(ct.T0.Add(-time.Minute))}
		}, "Renewing", "Renewing certificate", api.ConditionTrue},
		{"expired", func(t *testing.T, f *triggerFixture) { f.st.Now = f.issued.Leaf.NotAfter },
			"Expired", "Certificate expired on", api.ConditionFalse},
		{"renewal time reached, an older Certificate shares the secret, which names this one", func(t *testing.T, f *triggerFixture) {
			ct.Sharing(f.st, ct.Cert(ct.Named("api"), ct.CreatedAt(ct.T0.Add(-48*time.Hour))))
			f.st.Now = f.renewAt()
		}, "Renewing", "Renewing certificate as renewal was scheduled at", api.ConditionTrue},
		{"missing secret, a younger Certificate shares it", func(t *testing.T, f *triggerFixture) {
			f.st.Secret = nil
			ct.Sharing(f.st, ct.Cert(ct.Named("api"), ct.CreatedAt(ct.T0)))
		}, "DoesNotExist", `Secret "web-tls" does not exist`, api.ConditionFalse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTriggerFixture(t)
			tc.setup(t, f)
			w := &ct.Writer{}
			env, _, _ := ct.Env(ct.NewMemSecrets(), w)
			out, err := certificates.TriggerStep(context.Background(), env, f.st)
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			if !out.Wrote {
				t.Fatalf("Step did not write; outcome %+v", out)
			}
			calls := w.Only("UpdateCertificate")
			if len(calls) != 1 || len(w.Calls) != 1 {
				t.Fatalf("calls = %v, want one UpdateCertificate", w.Ops())
			}
			if want := f.st.Now.Add(certificates.FollowUpGrace); !calls[0].NextRunAt.Equal(want) {
				t.Errorf("nextRunAt = %s, want now+FollowUpGrace %s", calls[0].NextRunAt, want)
			}
			got := calls[0].Cert
			c := api.FindCondition(got.Status.Conditions, api.CertificateConditionIssuing)
			if c == nil || c.Status != api.ConditionTrue || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantMsg) {
				t.Fatalf("Issuing = %+v, want True/%s containing %q", c, tc.wantReason, tc.wantMsg)
			}
			if c.ObservedGeneration != f.crt.Generation {
				t.Errorf("observedGeneration = %d, want %d", c.ObservedGeneration, f.crt.Generation)
			}
			if r := api.FindCondition(got.Status.Conditions, api.CertificateConditionReady); r == nil || r.Status != tc.wantReady {
				t.Errorf("Ready = %+v, want %s", r, tc.wantReady)
			}
		})
	}
}

func TestTriggerStepNoIssuanceNeeded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, f *triggerFixture)
	}{
		{"fresh certificate, no requests", func(t *testing.T, f *triggerFixture) {}},
		{"current request matches", func(t *testing.T, f *triggerFixture) {
			cr := ct.Request(t, f.crt, f.issued.Key, 1, ct.Issued(f.issued.CertPEM, f.ca.PEM, ct.T0.Add(-time.Hour)))
			f.st = ct.State(f.crt, f.st.Secret, cr)
			rev := 1
			f.crt.Status.Revision = &rev
		}},
		{"one second before the renewal time", func(t *testing.T, f *triggerFixture) { f.st.Now = f.renewAt().Add(-time.Second) }},
		{"spec change the certificate does not show (duration) without a current request", func(t *testing.T, f *triggerFixture) {
			f.crt.Spec.Duration = api.NewDuration(48 * time.Hour)
		}},
		{"an older Certificate shares the secret, which names this one", func(t *testing.T, f *triggerFixture) {
			ct.Sharing(f.st, ct.Cert(ct.Named("api"), ct.CreatedAt(ct.T0.Add(-48*time.Hour))))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTriggerFixture(t)
			tc.setup(t, f)
			w := &ct.Writer{}
			env, _, _ := ct.Env(ct.NewMemSecrets(), w)
			out, err := certificates.TriggerStep(context.Background(), env, f.st)
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			if out.Wrote || len(w.Calls) != 0 {
				t.Fatalf("Step wrote %v; want nothing", w.Ops())
			}
			if !out.RequeueAt.Equal(f.renewAt()) {
				t.Fatalf("RequeueAt = %s, want the renewal time %s", out.RequeueAt, f.renewAt())
			}
		})
	}
}

// A Certificate that does not own its secret (cert-manager PR #6406)
// never starts an issuance and stops one under way (Issuing=False and
// Ready=False, reason DuplicateSecretName, naming the owner), in one write.
func TestTriggerStepNotOwner(t *testing.T) {
	const owned = `Secret "web-tls" is owned by Certificate "api" (the Certificates "api", "web" share spec.secretName)`
	api0 := func() *api.Certificate { return ct.Cert(ct.Named("api")) } // same creationTimestamp: first by name
	namesAPI := func(f *triggerFixture) { f.st.Secret.Annotations[api.AnnotationCertificateName] = "api" }
	for _, tc := range []struct {
		name    string
		opts    []func(*api.Certificate)
		setup   func(f *triggerFixture)
		stopped bool // an issuance under way is stopped (one write)
	}{
		{"missing secret: no issuance", nil, func(f *triggerFixture) { f.st.Secret = nil }, false},
		{"the secret names the other, which is younger", nil, func(f *triggerFixture) {
			namesAPI(f)
			f.st.Sharers[0].CreationTimestamp = api.NewTime(ct.T0)
		}, false},
		{"renewal due: no issuance", nil, func(f *triggerFixture) { namesAPI(f); f.st.Now = f.renewAt() }, false},
		{"issuance under way is stopped", []func(*api.Certificate){ct.WithIssuing("DoesNotExist", ct.T0.Add(-time.Minute))},
			func(f *triggerFixture) { f.st.Secret = nil }, true},
		{"manual renewal is stopped", []func(*api.Certificate){ct.WithIssuing("ManuallyTriggered", ct.T0.Add(-time.Minute))},
			namesAPI, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTriggerFixture(t, tc.opts...)
			ct.Sharing(f.st, api0())
			tc.setup(f)
			w := &ct.Writer{}
			env, _, _ := ct.Env(ct.NewMemSecrets(), w)
			out, err := certificates.TriggerStep(context.Background(), env, f.st)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.stopped {
				if out.Wrote || len(w.Calls) != 0 || api.IsTrue(f.crt.Status.Conditions, api.CertificateConditionIssuing) {
					t.Fatalf("outcome %+v, calls %v, conditions %+v; want no issuance", out, w.Ops(), f.crt.Status.Conditions)
				}
				if want := f.st.Now.Add(env.WaitPoll); !out.RequeueAt.Equal(want) || !strings.Contains(out.Why, `owned by Certificate "api"`) {
					t.Fatalf("outcome %+v; want a look again at now+WaitPoll %s and why naming the owner", out, want)
				}
				return
			}
			calls := w.Only("UpdateCertificate")
			if !out.Wrote || len(calls) != 1 || len(w.Calls) != 1 {
				t.Fatalf("outcome %+v, calls %v; want one UpdateCertificate", out, w.Ops())
			}
			if want := f.st.Now.Add(certificates.FollowUpGrace); !calls[0].NextRunAt.Equal(want) {
				t.Errorf("nextRunAt = %s, want %s", calls[0].NextRunAt, want)
			}
			got := calls[0].Cert
			for _, typ := range []string{api.CertificateConditionIssuing, api.CertificateConditionReady} {
				c := api.FindCondition(got.Status.Conditions, typ)
				if c == nil || c.Status != api.ConditionFalse || c.Reason != certificates.ReasonDuplicateSecretName || c.Message != owned {
					t.Fatalf("%s = %+v, want False/DuplicateSecretName %q", typ, c, owned)
				}
			}
			if got.Status.NotAfter != nil || got.Status.RenewalTime != nil {
				t.Errorf("the owner's validity is shown: %v %v", got.Status.NotAfter, got.Status.RenewalTime)
			}
		})
	}
}

// Seed 002: "Another actor may choose to manually trigger an issuance by
// setting the Issuing condition themselves ... The trigger controller will
// not interfere in this case."
func TestTriggerStepLeavesIssuingAlone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *triggerFixture)
	}{
		{"manual trigger on a valid certificate", func(f *triggerFixture) {}},
		{"issuance already under way for a missing secret", func(f *triggerFixture) { f.st.Secret = nil }},
		{"renewal due", func(f *triggerFixture) { f.st.Now = f.renewAt().Add(time.Hour) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTriggerFixture(t, ct.WithIssuing("ManuallyTriggered", ct.T0.Add(-time.Minute)))
			tc.setup(f)
			before := ct.Copy(t, f.crt)
			w := &ct.Writer{}
			env, _, _ := ct.Env(ct.NewMemSecrets(), w)
			out, err := certificates.TriggerStep(context.Background(), env, f.st)
			if err != nil {
				t.Fatal(err)
			}
			if out.Wrote || !out.RequeueAt.IsZero() || len(w.Calls) != 0 {
				t.Fatalf("outcome %+v, calls %v; want nothing", out, w.Ops())
			}
			c := api.FindCondition(f.crt.Status.Conditions, api.CertificateConditionIssuing)
			if c.Reason != "ManuallyTriggered" || len(f.crt.Status.Conditions) != len(before.Status.Conditions) {
				t.Fatalf("conditions changed: %+v", f.crt.Status.Conditions)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	h := time.Hour
	for _, tc := range []struct {
		name      string
		attempts  int // 0: failedIssuanceAttempts unset
		failedAgo time.Duration
		// specChanged: the failed request for the next revision no longer matches the spec.
		specChanged bool
		wantWait    time.Duration // 0: issuance is triggered now
	}{
		{"1 failure, 30 min ago", 1, 30 * time.Minute, false, 30 * time.Minute},
		{"attempts unset counts as 1", 0, 30 * time.Minute, false, 30 * time.Minute},
		{"1 failure, 1 h ago: backoff over", 1, h, false, 0},
		{"1 failure, 61 min ago", 1, 61 * time.Minute, false, 0},
		{"2 failures: 2 h", 2, h, false, h},
		{"2 failures, 2 h ago", 2, 2 * h, false, 0},
		{"3 failures: 4 h", 3, h, false, 3 * h},
		{"4 failures: 8 h", 4, 0, false, 8 * h},
		{"5 failures: 16 h", 5, 0, false, 16 * h},
		{"6 failures: 32 h", 6, 0, false, 32 * h},
		{"7 failures: capped at 32 h", 7, 0, false, 32 * h},
		{"50 failures: capped at 32 h", 50, 31 * h, false, h},
		{"50 failures, 32 h ago", 50, 32 * h, false, 0},
		{"spec changed since the failed request: no backoff", 3, time.Minute, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crt := ct.Cert()
			failedAt := ct.T0.Add(-tc.failedAgo)
			crt.Status.LastFailureTime = api.NewTime(failedAt)
			if tc.attempts > 0 {
				n := tc.attempts
				crt.Status.FailedIssuanceAttempts = &n
			}
			// The failed request of the next revision, made for the spec as it was.
			cr := ct.Request(t, crt, ct.Key(t, nil), 1, ct.Failed("boom", failedAt))
			if tc.specChanged {
				crt.Spec.DNSNames = append(crt.Spec.DNSNames, "fixed.example.com")
			}
			st := ct.State(crt, nil, cr) // no secret: DoesNotExist would trigger
			if got := certificates.BackoffRemaining(st); got != tc.wantWait {
				t.Fatalf("BackoffRemaining = %s, want %s", got, tc.wantWait)
			}
			w := &ct.Writer{}
			env, _, _ := ct.Env(ct.NewMemSecrets(), w)
			out, err := certificates.TriggerStep(context.Background(), env, st)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantWait == 0 {
				if !out.Wrote || len(w.Only("UpdateCertificate")) != 1 {
					t.Fatalf("no issuance after the backoff: %+v %v", out, w.Ops())
				}
				return
			}
			if out.Wrote || len(w.Calls) != 0 {
				t.Fatalf("wrote %v during the backoff", w.Ops())
			}
			if want := ct.T0.Add(tc.wantWait); !out.RequeueAt.Equal(want) {
				t.Fatalf("RequeueAt = %s, want end of backoff %s", out.RequeueAt, want)
			}
		})
	}
}

func TestTriggerStepNoBackoffWithoutFailure(t *testing.T) {
	st := ct.State(ct.Cert(), nil)
	if got := certificates.BackoffRemaining(st); got != 0 {
		t.Fatalf("BackoffRemaining without lastFailureTime = %s, want 0", got)
	}
}

func TestTriggerStepReturnsWriteErrors(t *testing.T) {
	st := ct.State(ct.Cert(), nil)
	w := &ct.Writer{Err: ports.ErrConflict}
	env, _, _ := ct.Env(ct.NewMemSecrets(), w)
	out, err := certificates.TriggerStep(context.Background(), env, st)
	if err == nil || out.Wrote {
		t.Fatalf("Step = %+v, %v; want the conflict", out, err)
	}
	if !strings.Contains(err.Error(), "set Issuing condition") || !isConflict(err) {
		t.Fatalf("error %q does not wrap ports.ErrConflict with context", err)
	}
}

func isConflict(err error) bool { return errors.Is(err, ports.ErrConflict) }

// A secret store that cannot be read is an error to retry, never a reason
// to issue ("does not exist"): the secret is read lazily, and a failed
// read must surface.
func TestTriggerStepSecretReadErrorIsNotATrigger(t *testing.T) {
	st := ct.State(ct.Cert(), nil)
	boom := errors.New("secret store unavailable")
	st.SecretLoader = func(context.Context) (*ports.Secret, error) { return nil, boom }
	w := &ct.Writer{}
	env, _, _ := ct.Env(ct.NewMemSecrets(), w)
	out, err := certificates.TriggerStep(context.Background(), env, st)
	if !errors.Is(err, boom) || out.Wrote || len(w.Calls) != 0 {
		t.Fatalf("outcome %+v err %v writes %v; want the read error and no write", out, err, w.Ops())
	}
	if _, p := st.Parse(); p.Reason == "DoesNotExist" {
		t.Fatal("an unread secret was reported as missing")
	}
}
