package awsmode_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/signers"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
)

// routeEnv is a deployment with a CA ClusterIssuer "ops-ca" (its key pair
// installed by an operator in cert-manager/ops-ca) and a selfSigned
// ClusterIssuer "selfsigned", both Ready unless a case says otherwise.
type routeEnv struct {
	*awstest.Env
	worker, signer *awsmode.Runtime
	ca             *ct.CA
}

func newRouteEnv(t *testing.T, issuersReady bool) *routeEnv {
	t.Helper()
	e := awstest.New(t)
	r := &routeEnv{Env: e, worker: e.Runtime(app.Worker.Name), signer: e.Runtime(app.Signer.Name), ca: ct.NewCA(t)}
	e.InstallSecret(r.ca.Secret(t, "cert-manager", "ops-ca"), "ca")
	put(t, r.worker, clusterIssuer("ops-ca", api.IssuerSpec{CA: &api.CAIssuer{SecretName: "ops-ca"}}, issuersReady))
	put(t, r.worker, clusterIssuer("selfsigned", api.IssuerSpec{SelfSigned: &api.SelfSignedIssuer{}}, issuersReady))
	return r
}

// request builds the CertificateRequest default/web-1 for issuer, owned by
// Certificate default/web.
func request(t *testing.T, issuer string, opts ...func(*api.CertificateRequest)) *api.CertificateRequest {
	return ct.Request(t, ct.Cert(ct.WithIssuerRef(issuer, api.KindClusterIssuer)), ct.Key(t, nil), 1, opts...)
}

var webReq = api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "web-1"}

func TestWorkerRoutesTheSignersWork(t *testing.T) {
	approved := ct.Approved(ct.T0)
	for _, tc := range []struct {
		name     string
		obj      func(t *testing.T, r *routeEnv) api.Object
		key      api.Key
		toSigner bool  // sent to the signer queue, nothing written
		write    bool  // the worker reconciled it and wrote
		reads    int64 // when > 0: the state store reads of the whole message
	}{
		{"approved request of a CA issuer", func(t *testing.T, r *routeEnv) api.Object { return request(t, "ops-ca", approved) }, webReq, true, false, 2},
		{"approved request of a selfSigned issuer", func(t *testing.T, r *routeEnv) api.Object { return request(t, "selfsigned", approved) }, webReq, true, false, 2},
		{"CA issuer", nil, api.Key{Kind: api.KindClusterIssuer, Name: "ops-ca"}, true, false, 1},
		{"approved request of a missing issuer", func(t *testing.T, r *routeEnv) api.Object { return request(t, "nope", approved) }, webReq, false, true, 0},
		{"request without a decision", func(t *testing.T, r *routeEnv) api.Object { return request(t, "ops-ca") }, webReq, false, true, 0},
		// Nothing to do: the router's read (the engine reuses it), then the
		// owner's: a final request reconciled again wakes its Certificate
		// while that still issues (a redelivery after a lost wake-up).
		{"issued request", func(t *testing.T, r *routeEnv) api.Object {
			_, chain := r.ca.Issue(t, ct.Cert(), ct.Key(t, nil), ct.Leaf{NotBefore: ct.T0})
			return request(t, "ops-ca", ct.Issued(chain, r.ca.PEM, ct.T0))
		}, webReq, false, false, 2},
		{"denied request (already recorded)", func(t *testing.T, r *routeEnv) api.Object { return request(t, "ops-ca", ct.Denied("no", ct.T0)) }, webReq, false, false, 2},
		{"selfSigned issuer", nil, api.Key{Kind: api.KindClusterIssuer, Name: "selfsigned"}, false, true, 0},
		{"certificate", nil, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "missing"}, false, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRouteEnv(t, tc.key.Kind != api.KindClusterIssuer)
			if tc.obj != nil {
				put(t, r.worker, tc.obj(t, r))
			}
			before := int64(0)
			if tc.key.Kind != api.KindCertificate {
				_, before = load(t, r.worker, tc.key)
			}
			r.worker.Store.ResetCounts()
			d := r.worker.Handle(r.Ctx, tc.key, 1)
			if !d.Ack || d.Err != nil {
				t.Fatalf("disposition %+v, want acknowledged without error", d)
			}
			if tc.reads > 0 {
				if n := r.worker.Store.Counts().Reads; n != tc.reads {
					t.Errorf("state store reads = %d, want %d", n, tc.reads)
				}
			}
			signerQ := drain(t, r.Env, r.SignerQueueURL)
			if got := contains(signerQ, tc.key.String()); got != tc.toSigner {
				t.Fatalf("signer queue %v: holds %s = %v, want %v", signerQ, tc.key, got, tc.toSigner)
			}
			if tc.key.Kind == api.KindCertificate {
				return
			}
			_, after := load(t, r.worker, tc.key)
			if wrote := after != before; wrote != tc.write {
				t.Errorf("version %d -> %d: wrote = %v, want %v", before, after, wrote, tc.write)
			}
		})
	}
}

func TestSignerSignsButNeverApproves(t *testing.T) {
	t.Run("approved CA request is signed; owner woken, not the request", func(t *testing.T) {
		r := newRouteEnv(t, true)
		put(t, r.worker, request(t, "ops-ca", ct.Approved(ct.T0)))
		d := r.signer.Handle(r.Ctx, webReq, 1)
		if !d.Ack || d.Err != nil {
			t.Fatalf("disposition %+v", d)
		}
		o, _ := load(t, r.signer, webReq)
		cr := o.(*api.CertificateRequest)
		if !cr.IsIssued() || len(cr.Status.Certificate) == 0 {
			t.Fatalf("request not issued: %+v", cr.Status.Conditions)
		}
		if got := drain(t, r.Env, r.WorkerQueueURL); len(got) != 1 || got[0] != "Certificate/default/web" {
			t.Fatalf("worker queue %v, want only the owner Certificate/default/web", got)
		}
		if got := drain(t, r.Env, r.SignerQueueURL); len(got) != 0 {
			t.Fatalf("signer queue %v, want empty", got)
		}
	})
	// SQS delivers at least once: a second copy of a signed request's
	// message reaches the signer after the request is final. It must not
	// read the Certificate (the signer's IAM policy refuses it: the Env
	// fails the test at cleanup on any refusal, and every such copy used to
	// be retried into the dead-letter queue); the worker, which may read
	// it, gets the final request and wakes the Certificate if it still
	// issues.
	t.Run("a second delivery of a signed request goes to the worker, reading no Certificate", func(t *testing.T) {
		r := newRouteEnv(t, true)
		put(t, r.worker, request(t, "ops-ca", ct.Approved(ct.T0)))
		if d := r.signer.Handle(r.Ctx, webReq, 1); !d.Ack || d.Err != nil {
			t.Fatalf("first delivery: disposition %+v", d)
		}
		drain(t, r.Env, r.WorkerQueueURL)
		_, v := load(t, r.signer, webReq)
		d := r.signer.Handle(r.Ctx, webReq, 1)
		if !d.Ack || d.Err != nil {
			t.Fatalf("second delivery: disposition %+v", d)
		}
		if _, after := load(t, r.signer, webReq); after != v {
			t.Fatalf("the second delivery wrote the request (version %d -> %d)", v, after)
		}
		if got := drain(t, r.Env, r.WorkerQueueURL); len(got) != 1 || got[0] != "CertificateRequest/default/web-1" {
			t.Fatalf("worker queue %v, want the final request CertificateRequest/default/web-1", got)
		}
		if got := r.IAMDenied(); len(got) != 0 {
			t.Fatalf("calls the signer's IAM policy refuses: %v", got)
		}
	})
	t.Run("a request without a decision is acknowledged, not approved", func(t *testing.T) {
		r := newRouteEnv(t, true)
		v := put(t, r.worker, request(t, "ops-ca"))
		d := r.signer.Handle(r.Ctx, webReq, 1)
		if !d.Ack || d.Err == nil || !strings.Contains(d.Err.Error(), "never approves") {
			t.Fatalf("disposition %+v, want acknowledged with the refusal", d)
		}
		o, after := load(t, r.signer, webReq)
		if after != v || api.FindCondition(o.(*api.CertificateRequest).Status.Conditions, api.CertificateRequestConditionApproved) != nil {
			t.Fatalf("the signer wrote the request (version %d -> %d)", v, after)
		}
	})
	t.Run("a CA issuer is checked and made Ready", func(t *testing.T) {
		r := newRouteEnv(t, false)
		key := api.Key{Kind: api.KindClusterIssuer, Name: "ops-ca"}
		if d := r.signer.Handle(r.Ctx, key, 1); !d.Ack || d.Err != nil {
			t.Fatalf("disposition %+v", d)
		}
		o, _ := load(t, r.signer, key)
		if c := api.FindCondition(o.(*api.ClusterIssuer).Status.Conditions, api.IssuerConditionReady); c == nil || c.Reason != "KeyPairVerified" {
			t.Fatalf("issuer conditions %+v", o.(*api.ClusterIssuer).Status.Conditions)
		}
	})
	for _, tc := range []struct {
		name string
		key  api.Key
		want string
	}{
		{"certificate", api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}, "only CertificateRequests, CertificateSigningRequests and CA issuers"},
		{"selfSigned issuer", api.Key{Kind: api.KindClusterIssuer, Name: "selfsigned"}, "not a CA issuer"},
		{"policy", api.Key{Kind: api.KindCertificateRequestPolicy, Name: "p"}, "only CertificateRequests, CertificateSigningRequests and CA issuers"},
	} {
		t.Run("drops "+tc.name, func(t *testing.T) {
			r := newRouteEnv(t, true)
			writes := r.signer.Store.Counts().Writes
			d := r.signer.Handle(r.Ctx, tc.key, 1)
			if !d.Ack || d.Err == nil || !strings.Contains(d.Err.Error(), tc.want) {
				t.Fatalf("disposition %+v, want dropped: %q", d, tc.want)
			}
			if n := r.signer.Store.Counts().Writes - writes; n != 0 {
				t.Fatalf("%d writes", n)
			}
		})
	}
}

// The worker's "ca" and "selfSigned" signers are hand-offs: reached only
// if a request or its issuer changed between routing and the signing step,
// they send the request to the signer queue and leave it Pending with a
// fixed message, without reading any secret.
func TestWorkerSignersHandOff(t *testing.T) {
	r := newRouteEnv(t, true)
	iss := clusterIssuer("ops-ca", api.IssuerSpec{CA: &api.CAIssuer{SecretName: "ops-ca"}}, true)
	for _, typ := range []string{"ca", "selfSigned"} {
		sig, ok := r.worker.App.Wiring().Signers[typ]
		if !ok {
			t.Fatalf("worker has no %s entry", typ)
		}
		r.SMCalls.Reset()
		res, err := sig.Sign(r.Ctx, signers.Request{CR: request(t, "ops-ca", ct.Approved(ct.T0)), Issuer: iss, SecretNamespace: "cert-manager"})
		if !errors.Is(err, signers.ErrPending) || err.Error() != app.HandoffMessage || len(res.Certificate) != 0 {
			t.Fatalf("%s: Sign = %+v, %v; want pending %q", typ, res, err, app.HandoffMessage)
		}
		if n := len(r.SMCalls.Counts()); n != 0 {
			t.Fatalf("%s: the hand-off called %d Secrets Manager operations: %v", typ, n, r.SMCalls.Counts())
		}
		if got := drain(t, r.Env, r.SignerQueueURL); len(got) != 1 || got[0] != webReq.String() {
			t.Fatalf("%s: signer queue %v, want [%s]", typ, got, webReq)
		}
	}
}
