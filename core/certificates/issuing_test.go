package certificates_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

type issuingFixture struct {
	ca      *ct.CA
	crt     *api.Certificate
	key     crypto.Signer // next private key
	secrets *ct.MemSecrets
	leaf    *x509.Certificate
	leafPEM []byte
}

// newIssuingFixture: Issuing=True for the next revision, the next key stored, and
// a leaf for that key issued by a test CA at T0 for 90 days.
func newIssuingFixture(t *testing.T, opts ...func(*api.Certificate)) *issuingFixture {
	t.Helper()
	base := []func(*api.Certificate){ct.WithIssuing("Renewing", ct.T0.Add(-time.Minute)), ct.WithNextKey(nextKeyName)}
	f := &issuingFixture{ca: ct.NewCA(t), crt: ct.Cert(append(base, opts...)...), key: ct.Key(t, nil)}
	f.secrets = ct.NewMemSecrets(ct.NextKeySecret(t, f.crt, f.key))
	f.leaf, f.leafPEM = f.ca.Issue(t, f.crt, f.key, ct.Leaf{NotBefore: ct.T0, NotAfter: ct.T0.Add(90 * 24 * time.Hour)})
	return f
}

func (f *issuingFixture) next(t *testing.T, opts ...func(*api.CertificateRequest)) *api.CertificateRequest {
	st := ct.State(f.crt, nil)
	return ct.Request(t, f.crt, f.key, st.NextRevision(), opts...)
}

func TestIssuingStepStoresAnIssuedCertificate(t *testing.T) {
	for _, tc := range []struct {
		name        string
		opts        []func(*api.Certificate)
		history     []int // revisions of older requests
		wantDeleted []string
		wantKeys    []string
		wantRev     int
	}{
		{name: "first issuance", wantRev: 1, wantKeys: []string{"ca.crt", "tls.crt", "tls.key"}},
		{name: "renewal prunes history beyond the default limit of 1",
			opts:    []func(*api.Certificate){ct.WithRevision(2), ct.WithFailures(2, ct.T0.Add(-5*time.Hour))},
			history: []int{1, 2}, wantDeleted: []string{"web-1", "web-2"}, wantRev: 3,
			wantKeys: []string{"ca.crt", "tls.crt", "tls.key"}},
		{name: "revisionHistoryLimit 2 keeps the previous revision",
			opts: []func(*api.Certificate){ct.WithRevision(2), func(c *api.Certificate) {
				n := int32(2)
				c.Spec.RevisionHistoryLimit = &n
			}},
			history: []int{1, 2}, wantDeleted: []string{"web-1"}, wantRev: 3,
			wantKeys: []string{"ca.crt", "tls.crt", "tls.key"}},
		{name: "additional outputs, keystore and secretTemplate",
			opts: []func(*api.Certificate){func(c *api.Certificate) {
				c.Spec.AdditionalOutputFormats = []api.CertificateAdditionalOutputFormat{
					{Type: api.CertificateOutputFormatCombinedPEM}, {Type: api.CertificateOutputFormatDER}}
				pw := "changeit"
				c.Spec.Keystores = &api.CertificateKeystores{PKCS12: &api.PKCS12Keystore{Create: true, Password: &pw}}
				c.Spec.SecretTemplate = &api.CertificateSecretTemplate{Labels: map[string]string{"team": "a"},
					Annotations: map[string]string{"owner": "ops"}}
			}},
			wantRev:  1,
			wantKeys: []string{"ca.crt", "key.der", "keystore.p12", "tls-combined.pem", "tls.crt", "tls.key", "truststore.p12"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newIssuingFixture(t, tc.opts...)
			var reqs []*api.CertificateRequest
			for _, rev := range tc.history {
				reqs = append(reqs, ct.Request(t, f.crt, ct.Key(t, nil), rev, ct.Issued(nil, nil, ct.T0.Add(-time.Duration(10-rev)*time.Hour))))
			}
			reqs = append(reqs, f.next(t, ct.Issued(f.leafPEM, f.ca.PEM, ct.T0)))
			w := &ct.Writer{}
			env, _, m := ct.Env(f.secrets, w)
			st := ct.State(f.crt, nil, reqs...)
			out, err := certificates.IssuingStep(context.Background(), env, st)
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			if !out.Wrote {
				t.Fatal("Step did not write")
			}

			// Writer: the status, the next key unset once its secret is
			// deleted, then the pruned history, then SecretWritten.
			wantOps := []string{"UpdateCertificate", "UpdateCertificate"}
			for range tc.wantDeleted {
				wantOps = append(wantOps, "DeleteRequest")
			}
			wantOps = append(wantOps, "SecretWritten")
			if got := strings.Join(w.Ops(), ","); got != strings.Join(wantOps, ",") {
				t.Fatalf("calls = %s, want %s", got, strings.Join(wantOps, ","))
			}
			var deleted []string
			for _, c := range w.Only("DeleteRequest") {
				deleted = append(deleted, c.Key.Name)
			}
			if strings.Join(deleted, ",") != strings.Join(tc.wantDeleted, ",") {
				t.Errorf("pruned %v, want %v", deleted, tc.wantDeleted)
			}
			if sw := w.Only("SecretWritten")[0].Key; sw.Namespace != ct.Namespace || sw.Name != ct.SecretName {
				t.Errorf("SecretWritten(%s/%s), want default/web-tls", sw.Namespace, sw.Name)
			}

			// Status: revision, Issuing removed, failures cleared, the next
			// key still named until its secret is deleted, Ready.
			up := w.Only("UpdateCertificate")[0]
			s := up.Cert.Status
			if s.Revision == nil || *s.Revision != tc.wantRev {
				t.Errorf("revision = %v, want %d", s.Revision, tc.wantRev)
			}
			if api.FindCondition(s.Conditions, api.CertificateConditionIssuing) != nil {
				t.Error("Issuing condition not removed")
			}
			if s.LastFailureTime != nil || s.FailedIssuanceAttempts != nil {
				t.Errorf("failure fields not cleared: %v %v", s.LastFailureTime, s.FailedIssuanceAttempts)
			}
			if s.NextPrivateKeySecretName == nil || *s.NextPrivateKeySecretName != nextKeyName {
				t.Errorf("nextPrivateKeySecretName = %v, want %s until its secret is deleted", s.NextPrivateKeySecretName, nextKeyName)
			}
			if second := w.Only("UpdateCertificate")[1]; second.Cert.Status.NextPrivateKeySecretName != nil ||
				second.Cert.Status.Revision == nil || *second.Cert.Status.Revision != tc.wantRev || !second.NextRunAt.Equal(up.NextRunAt) {
				t.Errorf("second write: nextPrivateKeySecretName %v revision %v nextRunAt %s, want unset, %d, %s",
					second.Cert.Status.NextPrivateKeySecretName, second.Cert.Status.Revision, second.NextRunAt, tc.wantRev, up.NextRunAt)
			}
			if !api.IsTrue(s.Conditions, api.CertificateConditionReady) {
				t.Errorf("Ready not True: %+v", s.Conditions)
			}
			renewal := ct.T0.Add(60 * 24 * time.Hour)
			if s.NotAfter == nil || !s.NotAfter.Equal(f.leaf.NotAfter) || s.RenewalTime == nil || !s.RenewalTime.Equal(renewal) {
				t.Errorf("notAfter %v renewalTime %v, want %s and %s", s.NotAfter, s.RenewalTime, f.leaf.NotAfter, renewal)
			}
			if !up.NextRunAt.Equal(renewal) {
				t.Errorf("nextRunAt = %s, want the renewal time %s", up.NextRunAt, renewal)
			}

			// Secret store: the secret written before the status, the next key deleted after.
			wantWrites := "put default/web-tls,delete default/" + nextKeyName
			if got := strings.Join(f.secrets.Writes(), ","); got != wantWrites {
				t.Errorf("secret writes = %s, want %s", got, wantWrites)
			}
			sec, ok := f.secrets.Lookup(ct.Namespace, ct.SecretName)
			if !ok {
				t.Fatal("secret not stored")
			}
			var keys []string
			for k := range sec.Data {
				keys = append(keys, k)
			}
			if got := strings.Join(sorted(keys), ","); got != strings.Join(tc.wantKeys, ",") {
				t.Errorf("secret keys = %s, want %s", got, strings.Join(tc.wantKeys, ","))
			}
			if !bytes.Equal(sec.Data["tls.crt"], f.leafPEM) || !bytes.Equal(sec.Data["ca.crt"], f.ca.PEM) {
				t.Error("tls.crt/ca.crt differ from the request's status")
			}
			k, err := pki.DecodePrivateKeyPEM(sec.Data["tls.key"])
			if err != nil || !pki.PublicKeysEqual(k.Public(), f.key.Public()) {
				t.Error("tls.key is not the next private key")
			}
			wantAnn := map[string]string{
				api.AnnotationCertificateName: ct.CertName, api.AnnotationIssuerName: ct.IssuerName,
				api.AnnotationIssuerKind: api.KindIssuer, api.AnnotationCommonName: "web.example.com",
				api.AnnotationAltNames: "web.example.com",
			}
			if tpl := f.crt.Spec.SecretTemplate; tpl != nil {
				for k, v := range tpl.Annotations {
					wantAnn[k] = v
				}
				for k, v := range tpl.Labels {
					if sec.Labels[k] != v {
						t.Errorf("label %s = %q, want %q", k, sec.Labels[k], v)
					}
				}
			}
			for k, v := range wantAnn {
				if sec.Annotations[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, sec.Annotations[k], v)
				}
			}
			if _, ok := f.secrets.Lookup(ct.Namespace, nextKeyName); ok {
				t.Error("next private key secret not deleted")
			}
			if m.Get("certfn_certificates_issued_total") != 1 {
				t.Errorf("certfn_certificates_issued_total = %v", m.Get("certfn_certificates_issued_total"))
			}
			// The state now holds the written secret (readiness reads it).
			if st.Secret == nil || !bytes.Equal(st.Secret.Data["tls.crt"], f.leafPEM) {
				t.Error("state does not hold the written secret")
			}
		})
	}
}

func TestIssuingStepRecordsAFailedIssuance(t *testing.T) {
	for _, tc := range []struct {
		name         string
		opts         []func(*api.Certificate)
		req          func(t *testing.T, f *issuingFixture) *api.CertificateRequest
		wantAttempts int
		wantMsg      string
	}{
		{"failed request", nil, func(t *testing.T, f *issuingFixture) *api.CertificateRequest {
			return f.next(t, ct.Failed("CA key unusable", ct.T0))
		}, 1, "CA key unusable"},
		{"denied request", nil, func(t *testing.T, f *issuingFixture) *api.CertificateRequest {
			return f.next(t, ct.Denied("policy says no", ct.T0))
		}, 1, "policy says no"},
		{"third failure backs off 4 h", []func(*api.Certificate){ct.WithFailures(2, ct.T0.Add(-3*time.Hour))},
			func(t *testing.T, f *issuingFixture) *api.CertificateRequest {
				return f.next(t, ct.Failed("again", ct.T0))
			}, 3, "again"},
		{"issued certificate for another key", nil, func(t *testing.T, f *issuingFixture) *api.CertificateRequest {
			_, other := f.ca.Issue(t, f.crt, ct.Key(t, nil), ct.Leaf{})
			return f.next(t, ct.Issued(other, f.ca.PEM, ct.T0))
		}, 1, "does not match the private key"},
		{"issued certificate unparseable", nil, func(t *testing.T, f *issuingFixture) *api.CertificateRequest {
			return f.next(t, ct.Issued([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), nil, ct.T0))
		}, 1, "invalid certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newIssuingFixture(t, tc.opts...)
			w := &ct.Writer{}
			env, _, m := ct.Env(f.secrets, w)
			out, err := certificates.IssuingStep(context.Background(), env, ct.State(f.crt, nil, tc.req(t, f)))
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			if !out.Wrote || strings.Join(w.Ops(), ",") != "UpdateCertificate" {
				t.Fatalf("outcome %+v calls %v; want one UpdateCertificate", out, w.Ops())
			}
			up := w.Calls[0]
			s := up.Cert.Status
			if s.FailedIssuanceAttempts == nil || *s.FailedIssuanceAttempts != tc.wantAttempts {
				t.Errorf("failedIssuanceAttempts = %v, want %d", s.FailedIssuanceAttempts, tc.wantAttempts)
			}
			if s.LastFailureTime == nil || !s.LastFailureTime.Equal(ct.T0) {
				t.Errorf("lastFailureTime = %v, want now", s.LastFailureTime)
			}
			retry := ct.T0.Add(certificates.Backoff(tc.wantAttempts))
			if !up.NextRunAt.Equal(retry) {
				t.Errorf("nextRunAt = %s, want the retry time %s", up.NextRunAt, retry)
			}
			c := api.FindCondition(s.Conditions, api.CertificateConditionIssuing)
			if c == nil || c.Status != api.ConditionFalse || c.Reason != "Failed" || !strings.Contains(c.Message, tc.wantMsg) ||
				!strings.Contains(c.Message, retry.Format("2006-01-02T15:04:05Z")) {
				t.Fatalf("Issuing = %+v; want False/Failed naming %q and the retry time %s", c, tc.wantMsg, retry)
			}
			if s.Revision != nil {
				t.Error("revision advanced on a failure")
			}
			if len(f.secrets.Writes()) != 0 {
				t.Errorf("secret store written on a failure: %v", f.secrets.Writes())
			}
			if m.Get("certfn_issuance_failures_total") != 1 {
				t.Error("failure not counted")
			}
		})
	}
}

func TestIssuingStepWaitsOrDefers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		notIssuing  bool
		noNextKey   bool
		reqs        func(t *testing.T, f *issuingFixture) []*api.CertificateRequest
		wantRequeue bool
		sharers     []*api.Certificate // other Certificates naming the secret
	}{
		{name: "pending request: wait", wantRequeue: true, reqs: func(t *testing.T, f *issuingFixture) []*api.CertificateRequest {
			return []*api.CertificateRequest{f.next(t)}
		}},
		{name: "approved, not yet signed: wait", wantRequeue: true, reqs: func(t *testing.T, f *issuingFixture) []*api.CertificateRequest {
			return []*api.CertificateRequest{f.next(t, ct.Approved(ct.T0))}
		}},
		{name: "public key mismatch: requestmanager's job", reqs: func(t *testing.T, f *issuingFixture) []*api.CertificateRequest {
			other := ct.Key(t, nil)
			_, pemb := f.ca.Issue(t, f.crt, other, ct.Leaf{})
			return []*api.CertificateRequest{ct.Request(t, f.crt, other, 1, ct.Issued(pemb, f.ca.PEM, ct.T0))}
		}},
		{name: "spec mismatch: requestmanager's job", reqs: func(t *testing.T, f *issuingFixture) []*api.CertificateRequest {
			old := ct.Cert(ct.WithDNSNames("old.example.com"))
			_, pemb := f.ca.Issue(t, old, f.key, ct.Leaf{})
			return []*api.CertificateRequest{ct.Request(t, old, f.key, 1, ct.Issued(pemb, f.ca.PEM, ct.T0))}
		}},
		{name: "no request for the next revision", reqs: func(t *testing.T, f *issuingFixture) []*api.CertificateRequest { return nil }},
		{name: "two requests for the next revision", reqs: func(t *testing.T, f *issuingFixture) []*api.CertificateRequest {
			return []*api.CertificateRequest{f.next(t, ct.Issued(f.leafPEM, nil, ct.T0)), f.next(t, ct.WithName("web-1-b"), ct.Issued(f.leafPEM, nil, ct.T0))}
		}},
		{name: "not issuing", notIssuing: true, reqs: func(t *testing.T, f *issuingFixture) []*api.CertificateRequest {
			return []*api.CertificateRequest{f.next(t, ct.Issued(f.leafPEM, nil, ct.T0))}
		}},
		{name: "no next key", noNextKey: true, reqs: func(t *testing.T, f *issuingFixture) []*api.CertificateRequest {
			return []*api.CertificateRequest{f.next(t, ct.Issued(f.leafPEM, nil, ct.T0))}
		}},
		{name: "issued, but another Certificate owns the secret: never stored (the trigger stops the issuance)",
			sharers: []*api.Certificate{ct.Cert(ct.Named("api"))},
			reqs: func(t *testing.T, f *issuingFixture) []*api.CertificateRequest {
				return []*api.CertificateRequest{f.next(t, ct.Issued(f.leafPEM, nil, ct.T0))}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newIssuingFixture(t)
			if tc.notIssuing {
				api.RemoveCondition(&f.crt.Status.Conditions, api.CertificateConditionIssuing)
			}
			if tc.noNextKey {
				f.crt.Status.NextPrivateKeySecretName = nil
			}
			w := &ct.Writer{}
			env, _, _ := ct.Env(f.secrets, w)
			out, err := certificates.IssuingStep(context.Background(), env, ct.Sharing(ct.State(f.crt, nil, tc.reqs(t, f)...), tc.sharers...))
			if err != nil || out.Wrote || len(w.Calls) != 0 || len(f.secrets.Writes()) != 0 {
				t.Fatalf("outcome %+v err %v calls %v secrets %v; want nothing", out, err, w.Ops(), f.secrets.Writes())
			}
			if got, want := !out.RequeueAt.IsZero(), tc.wantRequeue; got != want {
				t.Fatalf("RequeueAt = %s, want set=%v", out.RequeueAt, want)
			}
			if tc.wantRequeue && !out.RequeueAt.Equal(ct.T0.Add(env.WaitPoll)) {
				t.Fatalf("RequeueAt = %s, want now+WaitPoll", out.RequeueAt)
			}
		})
	}
}

func TestIssuingStepErrors(t *testing.T) {
	boom := errors.New("secret store unavailable")
	for _, tc := range []struct {
		name       string
		setup      func(f *issuingFixture, w *ct.Writer)
		target     error
		ctx        string
		keepNextKy bool
	}{
		{"secret write fails: status untouched", func(f *issuingFixture, _ *ct.Writer) { f.secrets.PutErr = boom }, boom, "store secret default/web-tls", true},
		{"status write loses a race: next key kept", func(_ *issuingFixture, w *ct.Writer) {
			w.ErrOn = map[string]error{"UpdateCertificate": ports.ErrConflict}
		},
			ports.ErrConflict, "complete revision 1", true},
		{"keystore password secret missing", func(f *issuingFixture, _ *ct.Writer) {
			f.crt.Spec.Keystores = &api.CertificateKeystores{PKCS12: &api.PKCS12Keystore{Create: true,
				PasswordSecretRef: api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "pw"}}}}
		}, ports.ErrNotFound, "spec.keystores.pkcs12.passwordSecretRef", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newIssuingFixture(t)
			w := &ct.Writer{}
			tc.setup(f, w)
			env, _, _ := ct.Env(f.secrets, w)
			out, err := certificates.IssuingStep(context.Background(), env, ct.State(f.crt, nil, f.next(t, ct.Issued(f.leafPEM, f.ca.PEM, ct.T0))))
			if !errors.Is(err, tc.target) || !strings.Contains(err.Error(), tc.ctx) || out.Wrote {
				t.Fatalf("Step = %+v, %v; want %v with %q", out, err, tc.target, tc.ctx)
			}
			if _, ok := f.secrets.Lookup(ct.Namespace, nextKeyName); ok != tc.keepNextKy {
				t.Fatalf("next key present = %v, want %v", ok, tc.keepNextKy)
			}
			if len(w.Only("UpdateCertificate")) != 0 {
				t.Fatal("status recorded although the step failed")
			}
		})
	}
}

// The next-key secret cannot be deleted after the revision completed (or
// the process dies before): status.nextPrivateKeySecretName stays set, so
// the keymanager's clean-up on the Certificate's next step deletes it
// and unsets the name. Nothing is left behind for the next issuance to
// adopt as its "new" key.
func TestIssuingStepLeavesAFailedNextKeyDeleteToTheCleanUp(t *testing.T) {
	f := newIssuingFixture(t)
	f.secrets.DeleteErr = errors.New("secret store unavailable")
	w := &ct.Writer{}
	env, _, m := ct.Env(f.secrets, w)
	st := ct.State(f.crt, nil, f.next(t, ct.Issued(f.leafPEM, f.ca.PEM, ct.T0)))
	out, err := certificates.IssuingStep(context.Background(), env, st)
	if err != nil || !out.Wrote {
		t.Fatalf("Step = %+v, %v; want a write and no error", out, err)
	}
	if ups := w.Only("UpdateCertificate"); len(ups) != 1 || ups[0].Cert.Status.NextPrivateKeySecretName == nil {
		t.Fatalf("status writes %d, want only the completion, still naming the next key", len(ups))
	}
	if m.Get("certfn_cleanup_errors_total") != 1 {
		t.Error("the failed delete is not counted")
	}
	if _, ok := f.secrets.Lookup(ct.Namespace, nextKeyName); !ok {
		t.Fatal("next key gone although its delete failed")
	}
	// The next step: not issuing, the next key named.
	f.secrets.DeleteErr = nil
	out, err = certificates.KeyManagerStep(context.Background(), env, st)
	if err != nil || !out.Wrote {
		t.Fatalf("keymanager.Step = %+v, %v; want its clean-up", out, err)
	}
	if _, ok := f.secrets.Lookup(ct.Namespace, nextKeyName); ok {
		t.Fatal("next key not deleted by the clean-up")
	}
	if st.Cert.Status.NextPrivateKeySecretName != nil {
		t.Fatal("next key still named after the clean-up")
	}
}

func TestIssuingStepPasswordFromSecretRef(t *testing.T) {
	f := newIssuingFixture(t, func(c *api.Certificate) {
		c.Spec.Keystores = &api.CertificateKeystores{JKS: &api.JKSKeystore{Create: true,
			PasswordSecretRef: api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "pw"}, Key: "jks"}}}
	})
	f.secrets.Set(ports.Secret{Namespace: ct.Namespace, Name: "pw", Data: map[string][]byte{"jks": []byte("s3cret!")}})
	w := &ct.Writer{}
	env, _, _ := ct.Env(f.secrets, w)
	if _, err := certificates.IssuingStep(context.Background(), env, ct.State(f.crt, nil, f.next(t, ct.Issued(f.leafPEM, f.ca.PEM, ct.T0)))); err != nil {
		t.Fatalf("Step: %v", err)
	}
	sec, _ := f.secrets.Lookup(ct.Namespace, ct.SecretName)
	if len(sec.Data["keystore.jks"]) == 0 || len(sec.Data["truststore.jks"]) == 0 {
		t.Fatalf("JKS keystores missing: %v", sortedKeys(sec.Data))
	}
	// A wrong key in the password secret is an error naming the field.
	f2 := newIssuingFixture(t, func(c *api.Certificate) {
		c.Spec.Keystores = &api.CertificateKeystores{JKS: &api.JKSKeystore{Create: true,
			PasswordSecretRef: api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "pw"}, Key: "nope"}}}
	})
	f2.secrets.Set(ports.Secret{Namespace: ct.Namespace, Name: "pw", Data: map[string][]byte{"jks": []byte("s3cret!")}})
	env2, _, _ := ct.Env(f2.secrets, &ct.Writer{})
	_, err := certificates.IssuingStep(context.Background(), env2, ct.State(f2.crt, nil, f2.next(t, ct.Issued(f2.leafPEM, f2.ca.PEM, ct.T0))))
	if err == nil || !strings.Contains(err.Error(), `spec.keystores.jks.passwordSecretRef: no key "nope" in a secret default/pw`) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatal("error leaks the password")
	}
}

// A missing password secret and a missing key in it are one error (the
// same message, the same class): the error is no oracle on which secrets
// of the namespace exist or which keys they hold. It names the field and
// the rule, never a value.
func TestKeystorePasswordErrorsAreNoOracle(t *testing.T) {
	var msgs []string
	for _, tc := range []struct {
		name   string
		secret *ports.Secret
	}{
		{"no such secret", nil},
		{"no such key", &ports.Secret{Namespace: ct.Namespace, Name: "pw", Data: map[string][]byte{"other": []byte("s3cret!")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newIssuingFixture(t, func(c *api.Certificate) {
				c.Spec.Keystores = &api.CertificateKeystores{PKCS12: &api.PKCS12Keystore{Create: true,
					PasswordSecretRef: api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "pw"}, Key: "password"}}}
			})
			if tc.secret != nil {
				f.secrets.Set(*tc.secret)
			}
			env, _, _ := ct.Env(f.secrets, &ct.Writer{})
			_, err := certificates.IssuingStep(context.Background(), env, ct.State(f.crt, nil, f.next(t, ct.Issued(f.leafPEM, f.ca.PEM, ct.T0))))
			want := `spec.keystores.pkcs12.passwordSecretRef: no key "password" in a secret default/pw: the password secret must exist in the Certificate's namespace and hold that key`
			if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("err = %v, want %q", err, want)
			}
			msgs = append(msgs, fmt.Sprintf("%s|%v", err, errs.Classify(err)))
		})
	}
	if len(msgs) != 2 || msgs[0] != msgs[1] {
		t.Fatalf("the two cases differ:\n%s", strings.Join(msgs, "\n"))
	}
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}

func sortedKeys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return sorted(out)
}
