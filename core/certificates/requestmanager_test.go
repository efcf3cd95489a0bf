package certificates_test

import (
	"context"
	"crypto"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// issuingAt is when Issuing last became True in these tests.
var issuingAt = ct.T0.Add(-time.Minute)

type requestFixture struct {
	crt     *api.Certificate
	key     crypto.Signer // the next private key
	secrets *ct.MemSecrets
}

func newRequestFixture(t *testing.T, opts ...func(*api.Certificate)) *requestFixture {
	t.Helper()
	base := []func(*api.Certificate){ct.WithIssuing("Renewing", issuingAt), ct.WithNextKey(nextKeyName)}
	f := &requestFixture{crt: ct.Cert(append(base, opts...)...), key: ct.Key(t, nil)}
	f.secrets = ct.NewMemSecrets(ct.NextKeySecret(t, f.crt, f.key))
	return f
}

func TestRequestManagerStepCreatesTheRequestForTheNextRevision(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []func(*api.Certificate)
		existing func(t *testing.T, f *requestFixture) []*api.CertificateRequest
		wantName string
		wantRev  string
	}{
		{"first issuance", nil, nil, "web-1", "1"},
		{"renewal of revision 2 keeps the current request", []func(*api.Certificate){ct.WithRevision(2)},
			func(t *testing.T, f *requestFixture) []*api.CertificateRequest {
				return []*api.CertificateRequest{ct.Request(t, f.crt, ct.Key(t, nil), 2, ct.Issued(nil, nil, ct.T0.Add(-48*time.Hour)))}
			}, "web-3", "3"},
		{"CA certificate with usages and a duration", []func(*api.Certificate){func(c *api.Certificate) {
			c.Spec.IsCA = true
			c.Spec.Usages = []api.KeyUsage{api.UsageCertSign, api.UsageDigitalSignature}
			c.Spec.Duration = api.NewDuration(240 * time.Hour)
			c.Spec.IssuerRef = api.IssuerReference{Name: "root", Kind: api.KindClusterIssuer, Group: api.CertManagerGroup}
		}}, nil, "web-1", "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRequestFixture(t, tc.opts...)
			var reqs []*api.CertificateRequest
			if tc.existing != nil {
				reqs = tc.existing(t, f)
			}
			w := &ct.Writer{}
			env, _, _ := ct.Env(f.secrets, w)
			out, err := certificates.RequestManagerStep(context.Background(), env, ct.State(f.crt, nil, reqs...))
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			if !out.Wrote || strings.Join(w.Ops(), ",") != "CreateRequest" {
				t.Fatalf("outcome %+v, calls %v; want one CreateRequest", out, w.Ops())
			}
			cr := w.Calls[0].Request
			if cr.Name != tc.wantName || cr.Namespace != ct.Namespace {
				t.Errorf("request %s/%s, want %s/%s", cr.Namespace, cr.Name, ct.Namespace, tc.wantName)
			}
			wantAnn := map[string]string{
				api.AnnotationRevision:             tc.wantRev,
				api.AnnotationCertificateName:      ct.CertName,
				api.AnnotationPrivateKeySecretName: nextKeyName,
			}
			if !reflect.DeepEqual(cr.Annotations, wantAnn) {
				t.Errorf("annotations = %v, want %v", cr.Annotations, wantAnn)
			}
			owner := cr.ControllerOf()
			if owner == nil || owner.Kind != api.KindCertificate || owner.Name != ct.CertName || owner.UID != ct.CertUID {
				t.Errorf("controller owner = %+v", owner)
			}
			if cr.Spec.Username != env.Username || cr.Spec.UID != env.UID || !reflect.DeepEqual(cr.Spec.Groups, env.Groups) {
				t.Errorf("identity = %q/%q/%v, want certfn's %q/%q/%v", cr.Spec.Username, cr.Spec.UID, cr.Spec.Groups, env.Username, env.UID, env.Groups)
			}
			csr, err := pki.ParseCSRPEM(cr.Spec.Request)
			if err != nil {
				t.Fatalf("spec.request: %v", err)
			}
			if !pki.PublicKeysEqual(csr.PublicKey, f.key.Public()) {
				t.Error("CSR is not signed by the next private key")
			}
			if bad, err := pki.RequestMatchesSpec(cr, &f.crt.Spec); err != nil || len(bad) > 0 {
				t.Errorf("created request does not match the spec: %v %v", bad, err)
			}
			if cr.Spec.IsCA != f.crt.Spec.IsCA || !reflect.DeepEqual(cr.Spec.Usages, f.crt.Spec.Usages) ||
				!reflect.DeepEqual(cr.Spec.Duration, f.crt.Spec.Duration) || cr.Spec.IssuerRef != f.crt.Spec.IssuerRef {
				t.Errorf("spec not copied: %+v", cr.Spec)
			}
		})
	}
}

func TestRequestManagerStepDeletesStaleRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		reqs func(t *testing.T, f *requestFixture) []*api.CertificateRequest
		want string // the deleted request
	}{
		{"no revision annotation", func(t *testing.T, f *requestFixture) []*api.CertificateRequest {
			return []*api.CertificateRequest{ct.Request(t, f.crt, f.key, 1, ct.WithName("legacy"), ct.WithoutRevision())}
		}, "legacy"},
		{"revision ahead of the next one", func(t *testing.T, f *requestFixture) []*api.CertificateRequest {
			return []*api.CertificateRequest{ct.Request(t, f.crt, f.key, 1), ct.Request(t, f.crt, f.key, 5)}
		}, "web-5"},
		{"duplicates for the same revision: all but the first by name", func(t *testing.T, f *requestFixture) []*api.CertificateRequest {
			return []*api.CertificateRequest{ct.Request(t, f.crt, f.key, 1, ct.WithName("web-1-b")), ct.Request(t, f.crt, f.key, 1)}
		}, "web-1-b"},
		{"public key does not match the next private key", func(t *testing.T, f *requestFixture) []*api.CertificateRequest {
			return []*api.CertificateRequest{ct.Request(t, f.crt, ct.Key(t, nil), 1)}
		}, "web-1"},
		{"spec changed since the request was made", func(t *testing.T, f *requestFixture) []*api.CertificateRequest {
			old := ct.Cert(ct.WithDNSNames("old.example.com"))
			return []*api.CertificateRequest{ct.Request(t, old, f.key, 1)}
		}, "web-1"},
		{"issuer changed since the request was made", func(t *testing.T, f *requestFixture) []*api.CertificateRequest {
			old := ct.Cert(ct.WithIssuerRef("old", api.KindClusterIssuer))
			return []*api.CertificateRequest{ct.Request(t, old, f.key, 1)}
		}, "web-1"},
		{"failed before the issuance was triggered", func(t *testing.T, f *requestFixture) []*api.CertificateRequest {
			return []*api.CertificateRequest{ct.Request(t, f.crt, f.key, 1, ct.Failed("old failure", issuingAt.Add(-time.Hour)))}
		}, "web-1"},
		{"denied before the issuance was triggered", func(t *testing.T, f *requestFixture) []*api.CertificateRequest {
			return []*api.CertificateRequest{ct.Request(t, f.crt, f.key, 1, ct.Denied("no", issuingAt.Add(-time.Hour)))}
		}, "web-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRequestFixture(t)
			w := &ct.Writer{}
			env, _, _ := ct.Env(f.secrets, w)
			out, err := certificates.RequestManagerStep(context.Background(), env, ct.State(f.crt, nil, tc.reqs(t, f)...))
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			// One deletion per invocation, nothing else.
			if !out.Wrote || len(w.Calls) != 1 || w.Calls[0].Op != "DeleteRequest" || w.Calls[0].Key.Name != tc.want {
				t.Fatalf("outcome %+v, calls %+v; want DeleteRequest %s only", out, w.Calls, tc.want)
			}
		})
	}
}

func TestRequestManagerStepLeavesAMatchingRequestAlone(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  func(f *requestFixture) func(*api.CertificateRequest)
	}{
		{"pending", func(*requestFixture) func(*api.CertificateRequest) { return func(*api.CertificateRequest) {} }},
		{"approved", func(*requestFixture) func(*api.CertificateRequest) { return ct.Approved(ct.T0) }},
		{"failed after the trigger (issuing records it)", func(*requestFixture) func(*api.CertificateRequest) {
			return ct.Failed("boom", issuingAt.Add(time.Second))
		}},
		{"issued", func(*requestFixture) func(*api.CertificateRequest) { return ct.Issued([]byte("x"), nil, ct.T0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRequestFixture(t, ct.WithRevision(1))
			current := ct.Request(t, f.crt, ct.Key(t, nil), 1) // history: another key, older revision
			next := ct.Request(t, f.crt, f.key, 2, tc.opt(f))
			w := &ct.Writer{}
			env, _, _ := ct.Env(f.secrets, w)
			out, err := certificates.RequestManagerStep(context.Background(), env, ct.State(f.crt, nil, current, next))
			if err != nil || out.Wrote || !out.RequeueAt.IsZero() || len(w.Calls) != 0 {
				t.Fatalf("outcome %+v, err %v, calls %v; want nothing", out, err, w.Ops())
			}
		})
	}
}

func TestRequestManagerStepNothingWithoutANextKey(t *testing.T) {
	for _, tc := range []struct {
		name    string
		crt     *api.Certificate
		secrets func(t *testing.T, crt *api.Certificate) *ct.MemSecrets
	}{
		{"not issuing", ct.Cert(ct.WithNextKey(nextKeyName)), func(t *testing.T, crt *api.Certificate) *ct.MemSecrets {
			return ct.NewMemSecrets(ct.NextKeySecret(t, crt, ct.Key(t, nil)))
		}},
		{"status.nextPrivateKeySecretName unset", ct.Cert(ct.WithIssuing("Renewing", issuingAt)),
			func(t *testing.T, crt *api.Certificate) *ct.MemSecrets {
				return ct.NewMemSecrets(ct.NextKeySecret(t, crt, ct.Key(t, nil)))
			}},
		{"next key secret missing", ct.Cert(ct.WithIssuing("Renewing", issuingAt), ct.WithNextKey(nextKeyName)),
			func(*testing.T, *api.Certificate) *ct.MemSecrets { return ct.NewMemSecrets() }},
		{"next key undecodable", ct.Cert(ct.WithIssuing("Renewing", issuingAt), ct.WithNextKey(nextKeyName)),
			func(t *testing.T, crt *api.Certificate) *ct.MemSecrets {
				s := ct.NextKeySecret(t, crt, ct.Key(t, nil))
				s.Data["tls.key"] = []byte("garbage")
				return ct.NewMemSecrets(s)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &ct.Writer{}
			env, _, _ := ct.Env(tc.secrets(t, tc.crt), w)
			stale := ct.Request(t, tc.crt, ct.Key(t, nil), 9) // would be deleted if the step ran
			out, err := certificates.RequestManagerStep(context.Background(), env, ct.State(tc.crt, nil, stale))
			if err != nil || out.Wrote || len(w.Calls) != 0 {
				t.Fatalf("outcome %+v, err %v, calls %v; want nothing", out, err, w.Ops())
			}
		})
	}
}

// A Certificate that does not own spec.secretName (another Certificate of
// the namespace names it and owns it) creates and deletes no request,
// even while Issuing is True: the trigger stops its issuance.
func TestRequestManagerStepNotOwnerMakesNoRequest(t *testing.T) {
	other := ct.Cert(ct.Named("api")) // same creationTimestamp: first by name
	for _, tc := range []struct {
		name string
		reqs func(t *testing.T, f *requestFixture) []*api.CertificateRequest
	}{
		{"first issuance (would be created)", func(*testing.T, *requestFixture) []*api.CertificateRequest { return nil }},
		{"a stale request (would be deleted)", func(t *testing.T, f *requestFixture) []*api.CertificateRequest {
			return []*api.CertificateRequest{ct.Request(t, f.crt, ct.Key(t, nil), 9)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRequestFixture(t)
			w := &ct.Writer{}
			env, _, _ := ct.Env(f.secrets, w)
			out, err := certificates.RequestManagerStep(context.Background(), env, ct.Sharing(ct.State(f.crt, nil, tc.reqs(t, f)...), other))
			if err != nil || out.Wrote || len(w.Calls) != 0 || !strings.Contains(out.Why, "not the owner") {
				t.Fatalf("outcome %+v, err %v, calls %v; want nothing", out, err, w.Ops())
			}
		})
	}
}

func TestRequestManagerStepErrors(t *testing.T) {
	boom := errors.New("unavailable")
	for _, tc := range []struct {
		name   string
		reqs   func(t *testing.T, f *requestFixture) []*api.CertificateRequest
		setup  func(w *ct.Writer, s *ct.MemSecrets)
		target error
		ctx    string
	}{
		{"create loses a race", nil, func(w *ct.Writer, _ *ct.MemSecrets) { w.Err = ports.ErrConflict },
			ports.ErrConflict, "create CertificateRequest default/web-1"},
		{"delete loses a race", func(t *testing.T, f *requestFixture) []*api.CertificateRequest {
			return []*api.CertificateRequest{ct.Request(t, f.crt, f.key, 4)}
		}, func(w *ct.Writer, _ *ct.MemSecrets) { w.Err = ports.ErrConflict }, ports.ErrConflict, "delete CertificateRequest default/web-4"},
		{"next key unreadable", nil, func(_ *ct.Writer, s *ct.MemSecrets) { s.GetErr = boom }, boom, "read next private key secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRequestFixture(t)
			w := &ct.Writer{}
			tc.setup(w, f.secrets)
			var reqs []*api.CertificateRequest
			if tc.reqs != nil {
				reqs = tc.reqs(t, f)
			}
			env, _, _ := ct.Env(f.secrets, w)
			out, err := certificates.RequestManagerStep(context.Background(), env, ct.State(f.crt, nil, reqs...))
			if !errors.Is(err, tc.target) || !strings.Contains(err.Error(), tc.ctx) || out.Wrote {
				t.Fatalf("Step = %+v, %v; want %v with %q", out, err, tc.target, tc.ctx)
			}
		})
	}
}
