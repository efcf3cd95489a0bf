package certificaterequests_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/signers"
)

const signingWaitPoll = 10 * time.Minute

// fakeIssuers is a test double of certificaterequests.Issuers over a fixed set.
type fakeIssuers struct {
	byName map[string]api.GenericIssuer
	err    error
}

func (f *fakeIssuers) Get(_ context.Context, ns string, ref api.IssuerReference) (api.GenericIssuer, string, bool, error) {
	if f.err != nil {
		return nil, "", false, f.err
	}
	iss, ok := f.byName[ref.KindOrDefault()+"/"+ref.Name]
	return iss, ns, ok, nil
}

// fakeSigner is a test double of signers.Signer returning a fixed result.
type fakeSigner struct {
	res   signers.Result
	err   error
	calls int
}

func (s *fakeSigner) Sign(context.Context, signers.Request) (signers.Result, error) {
	s.calls++
	return s.res, s.err
}

func issuer(name string, spec api.IssuerSpec, ready bool) *api.Issuer {
	iss := &api.Issuer{TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindIssuer},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: ct.Namespace}, Spec: spec}
	if ready {
		api.SetCondition(&iss.Status.Conditions, api.Condition{Type: api.IssuerConditionReady, Status: api.ConditionTrue, Reason: "KeyPairVerified"}, ct.T0)
	}
	return iss
}

type fixture struct {
	env     *certificaterequests.Env
	st      *certificaterequests.State
	w       *ct.Writer
	m       *ct.Metrics
	signer  *fakeSigner
	issuers *fakeIssuers
	chain   []byte
	caPEM   []byte
}

// newFixture: an approved request for Issuer "ca" (a CA issuer, Ready) and
// a signer that returns a real chain for it.
func newFixture(t *testing.T, opts ...func(*api.CertificateRequest)) *fixture {
	t.Helper()
	ca := ct.NewCA(t)
	crt := ct.Cert()
	key := ct.Key(t, nil)
	_, chain := ca.Issue(t, crt, key, ct.Leaf{NotBefore: ct.T0})
	cr := ct.Request(t, crt, key, 1, append([]func(*api.CertificateRequest){ct.Approved(ct.T0.Add(-time.Second))}, opts...)...)
	f := &fixture{
		w: &ct.Writer{}, m: ct.NewMetrics(), chain: chain, caPEM: ca.PEM,
		signer: &fakeSigner{res: signers.Result{Certificate: chain, CA: ca.PEM, Requested: 90 * 24 * time.Hour, Honoured: 30 * 24 * time.Hour}},
		issuers: &fakeIssuers{byName: map[string]api.GenericIssuer{
			"Issuer/ca": issuer("ca", api.IssuerSpec{CA: &api.CAIssuer{SecretName: "ca-key-pair"}}, true),
		}},
	}
	f.env = &certificaterequests.Env{Clock: clock.NewFake(ct.T0), Writer: f.w, Issuers: f.issuers, Metrics: f.m, WaitPoll: signingWaitPoll,
		Signers: map[string]signers.Signer{"ca": f.signer, "selfSigned": f.signer}}
	f.st = &certificaterequests.State{CR: cr, Version: 2, Now: ct.T0}
	return f
}

func (f *fixture) step(t *testing.T) certificaterequests.Outcome {
	t.Helper()
	out, err := certificaterequests.SigningStep(context.Background(), f.env, f.st)
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	return out
}

func cond(cr *api.CertificateRequest, typ string) *api.Condition {
	return api.FindCondition(cr.Status.Conditions, typ)
}

func TestSigningStepSignsAnApprovedRequest(t *testing.T) {
	f := newFixture(t)
	out := f.step(t)
	if !out.Wrote || f.signer.calls != 1 || strings.Join(f.w.Ops(), ",") != "UpdateRequest" {
		t.Fatalf("outcome %+v signer %d writer %v", out, f.signer.calls, f.w.Ops())
	}
	up := f.w.Calls[0]
	if !up.NextRunAt.IsZero() {
		t.Errorf("a final request stays in the due index: nextRunAt %s", up.NextRunAt)
	}
	s := up.Request.Status
	if !bytes.Equal(s.Certificate, f.chain) || !bytes.Equal(s.CA, f.caPEM) {
		t.Error("certificate/ca not recorded")
	}
	if s.RequestedDuration == nil || s.RequestedDuration.Duration != 90*24*time.Hour ||
		s.HonouredDuration == nil || s.HonouredDuration.Duration != 30*24*time.Hour {
		t.Errorf("durations = %v / %v, want 2160h / 720h (docs/design/request-duration.md)", s.RequestedDuration, s.HonouredDuration)
	}
	c := cond(up.Request, api.CertificateRequestConditionReady)
	if c == nil || c.Status != api.ConditionTrue || c.Reason != api.CertificateRequestReasonIssued {
		t.Fatalf("Ready = %+v, want True/Issued", c)
	}
	if !up.Request.IsIssued() || s.FailureTime != nil {
		t.Error("request not issued or has a failure time")
	}
	if got := f.m.Get("certfn_requests_signed_total{issuer_type=ca,namespace=default}"); got != 1 {
		t.Errorf("signed metric = %v (%v)", got, f.m.Counts)
	}
	// Final now: nothing more happens.
	if out := f.step(t); out.Wrote || f.signer.calls != 1 {
		t.Fatal("signed twice")
	}
}

func TestSigningStepSelfSignedAndClusterIssuer(t *testing.T) {
	f := newFixture(t, func(cr *api.CertificateRequest) {
		cr.Spec.IssuerRef = api.IssuerReference{Name: "selfsigned", Kind: api.KindClusterIssuer}
	})
	ci := &api.ClusterIssuer{TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindClusterIssuer},
		ObjectMeta: api.ObjectMeta{Name: "selfsigned"}, Spec: api.IssuerSpec{SelfSigned: &api.SelfSignedIssuer{}}}
	api.SetCondition(&ci.Status.Conditions, api.Condition{Type: api.IssuerConditionReady, Status: api.ConditionTrue}, ct.T0)
	f.issuers.byName["ClusterIssuer/selfsigned"] = ci
	if out := f.step(t); !out.Wrote || f.signer.calls != 1 {
		t.Fatalf("not signed: %+v", out)
	}
	if f.m.Get("certfn_requests_signed_total{issuer_type=selfSigned,namespace=default}") != 1 {
		t.Errorf("metrics %v", f.m.Counts)
	}
}

func TestSigningStepDoesNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fixture)
	}{
		{"not approved", func(f *fixture) { f.st.CR.Status.Conditions = nil }},
		{"already issued", func(f *fixture) { ct.Issued(f.chain, nil, ct.T0)(f.st.CR) }},
		{"already failed", func(f *fixture) { ct.Failed("x", ct.T0)(f.st.CR) }},
		{"acme issuer: handled by the ACME steps", func(f *fixture) {
			f.issuers.byName["Issuer/ca"] = issuer("ca", api.IssuerSpec{ACME: &api.ACMEIssuer{}}, true)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			out := f.step(t)
			if out.Wrote || !out.RequeueAt.IsZero() || f.signer.calls != 0 || len(f.w.Calls) != 0 {
				t.Fatalf("outcome %+v signer %d writer %v; want nothing", out, f.signer.calls, f.w.Ops())
			}
		})
	}
}

func TestSigningStepDenied(t *testing.T) {
	f := newFixture(t, func(cr *api.CertificateRequest) {
		cr.Status.Conditions = nil
		api.SetCondition(&cr.Status.Conditions, api.Condition{Type: api.CertificateRequestConditionDenied, Status: api.ConditionTrue,
			Reason: "policy.cert-manager.io", Message: "no policy allows *.evil.com"}, ct.T0.Add(-time.Second))
	})
	out := f.step(t)
	if !out.Wrote || f.signer.calls != 0 || len(f.w.Calls) != 1 {
		t.Fatalf("outcome %+v signer %d writer %v", out, f.signer.calls, f.w.Ops())
	}
	cr := f.w.Calls[0].Request
	c := cond(cr, api.CertificateRequestConditionReady)
	if c == nil || c.Status != api.ConditionFalse || c.Reason != api.CertificateRequestReasonDenied || !strings.Contains(c.Message, "no policy allows *.evil.com") {
		t.Fatalf("Ready = %+v, want False/Denied with the denial message", c)
	}
	if cr.Status.FailureTime == nil || !cr.Status.FailureTime.Equal(ct.T0) || !f.w.Calls[0].NextRunAt.IsZero() {
		t.Fatalf("failureTime %v nextRunAt %s", cr.Status.FailureTime, f.w.Calls[0].NextRunAt)
	}
	if !cr.IsFinal() {
		t.Fatal("denied request not final")
	}
	// Recorded once: the next run does nothing.
	f.st.Now = ct.T0.Add(time.Minute)
	if out := f.step(t); out.Wrote || len(f.w.Calls) != 1 {
		t.Fatalf("denial recorded twice: %v", f.w.Ops())
	}
}

func TestSigningStepPending(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(f *fixture)
		wantMsg string
	}{
		{"issuer missing", func(f *fixture) { delete(f.issuers.byName, "Issuer/ca") }, `Referenced "Issuer" not found: Issuer "ca" does not exist`},
		{"cluster issuer missing", func(f *fixture) {
			f.st.CR.Spec.IssuerRef = api.IssuerReference{Name: "gone", Kind: api.KindClusterIssuer}
		}, `Referenced "ClusterIssuer" not found`},
		{"issuer not ready", func(f *fixture) {
			f.issuers.byName["Issuer/ca"] = issuer("ca", api.IssuerSpec{CA: &api.CAIssuer{SecretName: "x"}}, false)
		}, `Referenced issuer "ca" does not have a Ready status condition`},
		{"external issuer group", func(f *fixture) { f.st.CR.Spec.IssuerRef.Group = "awspca.cert-manager.io" },
			`issuerRef.group "awspca.cert-manager.io" is an external issuer`},
		{"signer says the issuer is not ready", func(f *fixture) { f.signer.err = signers.NotReady("CA secret ca-key-pair is missing") },
			"Issuer is not ready: issuer not ready: CA secret ca-key-pair is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			out := f.step(t)
			if !out.Wrote || len(f.w.Calls) != 1 {
				t.Fatalf("outcome %+v writer %v; want one write", out, f.w.Ops())
			}
			up := f.w.Calls[0]
			c := cond(up.Request, api.CertificateRequestConditionReady)
			if c == nil || c.Status != api.ConditionFalse || c.Reason != api.CertificateRequestReasonPending || !strings.Contains(c.Message, tc.wantMsg) {
				t.Fatalf("Ready = %+v, want False/Pending containing %q", c, tc.wantMsg)
			}
			if !up.NextRunAt.Equal(ct.T0.Add(signingWaitPoll)) {
				t.Errorf("nextRunAt = %s, want now+WaitPoll", up.NextRunAt)
			}
			if up.Request.IsFinal() {
				t.Error("pending request is final")
			}
			// Same reason again: no second write, a requeue instead.
			f.st.Now = ct.T0.Add(time.Minute)
			out = f.step(t)
			if out.Wrote || len(f.w.Calls) != 1 || !out.RequeueAt.Equal(f.st.Now.Add(signingWaitPoll)) {
				t.Fatalf("repeat: outcome %+v writer %v; want no write and a requeue", out, f.w.Ops())
			}
		})
	}
}

func TestSigningStepFails(t *testing.T) {
	for _, tc := range []struct {
		name       string
		setup      func(f *fixture)
		wantMsg    string
		wantInvald bool
	}{
		{"permanent signer error", func(f *fixture) {
			f.signer.err = errs.Permanentf("spec.request: the CSR asks for isCA but the issuer forbids it")
		}, "the CSR asks for isCA but the issuer forbids it", false},
		{"invalid chain from the signer", func(f *fixture) { f.signer.res.Certificate = []byte("not pem") },
			"the signer returned an invalid status.certificate: no CERTIFICATE PEM block found", false},
		{"chain with a non-certificate block", func(f *fixture) {
			f.signer.res.Certificate = append(append([]byte{}, f.chain...), []byte("-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n")...)
		}, `PEM block 2 is "PRIVATE KEY", want CERTIFICATE`, false},
		{"CSR with a bad signature", func(f *fixture) {
			f.st.CR.Spec.Request = []byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n")
		}, "spec.request:", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			out := f.step(t)
			if !out.Wrote || len(f.w.Calls) != 1 {
				t.Fatalf("outcome %+v writer %v", out, f.w.Ops())
			}
			cr := f.w.Calls[0].Request
			fc := cond(cr, api.CertificateRequestConditionFailed)
			rc := cond(cr, api.CertificateRequestConditionReady)
			if fc == nil || fc.Status != api.ConditionTrue || !strings.Contains(fc.Message, tc.wantMsg) {
				t.Fatalf("Failed = %+v, want True containing %q", fc, tc.wantMsg)
			}
			if rc == nil || rc.Status != api.ConditionFalse || rc.Reason != api.CertificateRequestReasonFailed {
				t.Fatalf("Ready = %+v, want False/Failed", rc)
			}
			if cr.Status.FailureTime == nil || !cr.Status.FailureTime.Equal(ct.T0) || len(cr.Status.Certificate) != 0 {
				t.Errorf("failureTime %v, certificate %d bytes", cr.Status.FailureTime, len(cr.Status.Certificate))
			}
			if got := cond(cr, api.CertificateRequestConditionInvalidRequest) != nil; got != tc.wantInvald {
				t.Errorf("InvalidRequest present = %v, want %v", got, tc.wantInvald)
			}
			if !cr.IsFinal() || !f.w.Calls[0].NextRunAt.IsZero() {
				t.Error("failed request not final or still due")
			}
		})
	}
}

func TestSigningStepTransientErrorsAreReturned(t *testing.T) {
	boom := errors.New("KMS throttled")
	for _, tc := range []struct {
		name   string
		setup  func(f *fixture)
		target error
		ctx    string
	}{
		{"signer", func(f *fixture) { f.signer.err = fmt.Errorf("sign: %w", boom) }, boom, "sign CertificateRequest default/web-1"},
		{"issuer lookup", func(f *fixture) { f.issuers.err = boom }, boom, `read issuer ca`},
		{"write", func(f *fixture) { f.w.Err = ports.ErrConflict }, ports.ErrConflict, "store signed certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			out, err := certificaterequests.SigningStep(context.Background(), f.env, f.st)
			if !errors.Is(err, tc.target) || !strings.Contains(err.Error(), tc.ctx) || out.Wrote {
				t.Fatalf("Step = %+v, %v; want %v with %q", out, err, tc.target, tc.ctx)
			}
			if errs.IsPermanent(err) {
				t.Fatal("a transient error was made permanent")
			}
			if len(f.w.Calls) != 0 {
				t.Fatalf("wrote %v", f.w.Ops())
			}
		})
	}
}

// A request approved although its CSR carries a name a CA must not sign
// (by hand, or before names were checked) fails permanently before any
// issuer is read or signer called.
func TestSigningStepRefusesNamesACAMustNotSign(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"evil.com\x00.team-a.example.com", `spec.request: DNS name "evil.com\x00.team-a.example.com" (SAN 1): contains a character a DNS name cannot hold (NUL)`},
		{"evil.org/.team-a.example.com", `spec.request: DNS name "evil.org/.team-a.example.com" (SAN 1): contains a character a DNS name cannot hold ('/')`},
		{"evil.org .team-a.example.com", `spec.request: DNS name "evil.org .team-a.example.com" (SAN 1): contains a character a DNS name cannot hold (space)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			crt := ct.Cert(ct.WithDNSNames(tc.name), func(c *api.Certificate) { c.Spec.CommonName = "" })
			f.st.CR = ct.Request(t, crt, ct.Key(t, nil), 1, ct.Approved(ct.T0.Add(-time.Second)))
			f.issuers.err = errors.New("the issuer must not be read")
			out := f.step(t)
			if !out.Wrote || f.signer.calls != 0 || len(f.w.Calls) != 1 {
				t.Fatalf("outcome %+v signer %d writer %v", out, f.signer.calls, f.w.Ops())
			}
			up := f.w.Calls[0]
			if !up.NextRunAt.IsZero() {
				t.Errorf("a failed request stays in the due index: %s", up.NextRunAt)
			}
			r := cond(up.Request, api.CertificateRequestConditionReady)
			if r == nil || r.Status != api.ConditionFalse || r.Reason != api.CertificateRequestReasonFailed || r.Message != "Signing failed: "+tc.want {
				t.Fatalf("Ready = %+v, want False/Failed with %q", r, tc.want)
			}
			for _, typ := range []string{api.CertificateRequestConditionInvalidRequest, api.CertificateRequestConditionFailed} {
				c := cond(up.Request, typ)
				if c == nil || c.Status != api.ConditionTrue || c.Reason != certificaterequests.ReasonInvalidNames || c.Message != tc.want {
					t.Errorf("%s = %+v, want True/%s", typ, c, certificaterequests.ReasonInvalidNames)
				}
			}
			if up.Request.Status.FailureTime == nil || len(up.Request.Status.Certificate) != 0 || !up.Request.IsFinal() {
				t.Errorf("failureTime %v, certificate %d bytes, final %v", up.Request.Status.FailureTime, len(up.Request.Status.Certificate), up.Request.IsFinal())
			}
			if out := f.step(t); out.Wrote || f.signer.calls != 0 {
				t.Fatal("a failed request was processed again")
			}
		})
	}
}
