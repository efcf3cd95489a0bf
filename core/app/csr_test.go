package app_test

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/certificaterequests"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/certificatesigningrequests"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// csrSpec builds a CertificateSigningRequest manifest.
type csrSpec struct {
	name, signer, dnsName string
	expirationSeconds     int // 0: unset
	annotations           string
	extra                 string // more spec lines
}

func (s csrSpec) yaml(t *testing.T) string {
	if s.dnsName == "" {
		s.dnsName = "www.team-a.example.com"
	}
	exp := ""
	if s.expirationSeconds != 0 {
		exp = fmt.Sprintf("  expirationSeconds: %d\n", s.expirationSeconds)
	}
	ann := ""
	if s.annotations != "" {
		ann = ", annotations: {" + s.annotations + "}"
	}
	return fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: %s%s}
spec:
  request: %s
  signerName: %s
  usages: [digital signature, key encipherment, server auth]
%s%s`, s.name, ann, apptest.B64(ct.BareCSR(t, s.dnsName)), s.signer, exp, s.extra)
}

func csrKey(name string) api.Key { return api.Key{Kind: api.KindCertificateSigningRequest, Name: name} }

func getCSR(r *apptest.Rig, name string) *api.CertificateSigningRequest {
	return r.Get(csrKey(name)).(*api.CertificateSigningRequest)
}

// readyCA makes Issuer default/ca Ready with a CA key pair, its maximum
// lifetime max (0: none).
func readyCA(t *testing.T, r *apptest.Rig, max time.Duration) {
	t.Helper()
	if err := r.Secrets.Put(r.Ctx, ct.NewCA(t).Secret(t, "default", "ca-key-pair")); err != nil {
		t.Fatal(err)
	}
	m := apptest.CAIssuerYAML
	if max > 0 {
		m = strings.Replace(m, "namespace: default}", fmt.Sprintf("namespace: default, annotations: {certfn.io/max-duration: %s}}", max), 1)
	}
	r.Apply(m)
	r.Drain()
}

func applyAs(r *apptest.Rig, caller app.Caller, manifest string) ([]app.ApplyResult, error) {
	objs, err := api.Decode([]byte(manifest))
	if err != nil {
		r.T.Fatalf("decode: %v", err)
	}
	return r.Service.Apply(r.Ctx, caller, objs)
}

// The requester identity comes from the caller, never from the body
// (docs/design/certificates-api.md: the API server asserts it); the spec is immutable afterwards; a
// status in the body is dropped on create.
func TestCSRApplyRecordsRequesterAndKeepsSpec(t *testing.T) {
	r := apptest.NewRig(t)
	r.Approver.Set(certificaterequests.Unmatched)
	m := csrSpec{name: "web", signer: "issuers.cert-manager.io/default.ca", expirationSeconds: 600,
		extra: "  username: mallory\n  uid: forged\n  groups: [system:masters]\n  extra: {scopes: [all]}\nstatus:\n  conditions: [{type: Approved, status: \"True\"}]\n"}.yaml(t)
	r.Apply(m)
	c := getCSR(r, "web")
	if c.Spec.Username != apptest.Caller.Username || c.Spec.UID != apptest.Caller.UID ||
		strings.Join(c.Spec.Groups, ",") != strings.Join(apptest.Caller.Groups, ",") || c.Spec.Extra != nil {
		t.Fatalf("requester = %q %q %v %v; want the caller's", c.Spec.Username, c.Spec.UID, c.Spec.Groups, c.Spec.Extra)
	}
	if len(c.Status.Conditions) != 0 {
		t.Fatalf("status from the body was stored: %+v", c.Status)
	}
	// Re-applying the same spec with another identity in the body changes nothing.
	other := app.Caller{Username: "carol", Groups: []string{app.SuperuserGroup}}
	if _, err := applyAs(r, other, m); err != nil {
		t.Fatalf("re-apply: %v", err)
	}
	if c := getCSR(r, "web"); c.Spec.Username != apptest.Caller.Username {
		t.Fatalf("the requester changed on update: %q", c.Spec.Username)
	}
	// A changed spec field is refused, naming it.
	changed := strings.Replace(m, "issuers.cert-manager.io/default.ca", "clusterissuers.cert-manager.io/ca", 1)
	_, err := applyAs(r, apptest.Caller, changed)
	if err == nil || !strings.Contains(err.Error(), "spec.signerName: field is immutable") {
		t.Fatalf("changed signerName: err = %v", err)
	}
	if c := getCSR(r, "web"); c.Spec.SignerName != "issuers.cert-manager.io/default.ca" {
		t.Fatalf("the signer name changed: %q", c.Spec.SignerName)
	}
}

// Bad input is refused with the field and the rule, and nothing is stored
// (the valid object of the same batch neither).
func TestCSRBadInputStoresNothing(t *testing.T) {
	r := apptest.NewRig(t)
	cases := []struct{ name, manifest, field, rule string }{
		{"expirationSeconds below 600 (docs/design/request-duration.md)", csrSpec{name: "short", signer: "clusterissuers.cert-manager.io/ca", expirationSeconds: 599}.yaml(t),
			"spec.expirationSeconds", "less than 600 seconds"},
		{"no signerName", strings.Replace(csrSpec{name: "nosigner", signer: "x"}.yaml(t), "  signerName: x\n", "", 1), "spec.signerName", "required"},
		{"request not a CSR", strings.Replace(csrSpec{name: "bad", signer: "a.b/c"}.yaml(t), "  request: ", "  request: aGVsbG8=\n  #", 1), "spec.request", "not PEM"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			valid := csrSpec{name: fmt.Sprintf("valid-%d", i), signer: "a.b/c"}.yaml(t)
			_, err := applyAs(r, apptest.Caller, valid+"---\n"+tc.manifest)
			var verr *app.ValidationError
			if !errors.As(err, &verr) || len(verr.Details) != 1 || verr.Details[0].Field != tc.field || !strings.Contains(verr.Details[0].Error, tc.rule) {
				t.Fatalf("err = %v (%+v); want %s: %s", err, verr, tc.field, tc.rule)
			}
			recs, err := r.Store.List(r.Ctx, ports.ListOptions{Kind: api.KindCertificateSigningRequest})
			if err != nil || len(recs) != 0 {
				t.Fatalf("stored %d CSRs (%v); want none", len(recs), err)
			}
		})
	}
}

const approverRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: csr-requester}
rules:
- {apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests], verbs: [create, get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-requests}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: csr-requester}
subjects: [{kind: User, name: bob}, {kind: User, name: ann}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: approve-default-ca}
rules:
- {apiGroups: [certificates.k8s.io], resources: [signers], verbs: [approve], resourceNames: [issuers.cert-manager.io/default.ca]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ann-approves-default-ca}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: approve-default-ca}
subjects: [{kind: User, name: ann}]
`

// Approval is its own permission (docs/design/certificates-api.md): a requester who may create
// CSRs cannot approve them; an approver for one signer cannot approve for
// another; Approved and Denied are mutually exclusive and permanent.
func TestCSRApprovalPermission(t *testing.T) {
	r := apptest.NewRig(t)
	r.Approver.Set(certificaterequests.Unmatched)
	r.Apply(approverRBAC)
	bob := app.Caller{Username: "bob", Groups: []string{"system:authenticated"}}
	ann := app.Caller{Username: "ann", Groups: []string{"system:authenticated"}}
	if _, err := applyAs(r, bob, csrSpec{name: "a", signer: "issuers.cert-manager.io/default.ca"}.yaml(t)); err != nil {
		t.Fatalf("bob may create CSRs: %v", err)
	}
	if _, err := applyAs(r, bob, csrSpec{name: "b", signer: "clusterissuers.cert-manager.io/selfsigned"}.yaml(t)); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	if _, err := r.Service.ApproveCSR(r.Ctx, bob, "a", true, "", "", ""); !errors.Is(err, app.ErrForbidden) {
		t.Fatalf("the requester approved its own CSR: err = %v", err)
	}
	if _, err := r.Service.ApproveCSR(r.Ctx, ann, "b", true, "", "", ""); !errors.Is(err, app.ErrForbidden) ||
		!strings.Contains(err.Error(), "clusterissuers.cert-manager.io/selfsigned") {
		t.Fatalf("an approver of issuers.cert-manager.io/default.ca approved for another signer: err = %v", err)
	}
	c, err := r.Service.ApproveCSR(r.Ctx, ann, "a", true, "", "", "")
	if err != nil {
		t.Fatalf("ann approves for her signer: %v", err)
	}
	if cond := c.Status.Condition(api.CSRConditionApproved); cond == nil || cond.Status != api.ConditionTrue || cond.Message != "manually approved by ann" {
		t.Fatalf("conditions %+v", c.Status.Conditions)
	}
	for _, approve := range []bool{false, true} {
		if _, err := r.Service.ApproveCSR(r.Ctx, ann, "a", approve, "", "", ""); !errors.Is(err, app.ErrConflict) {
			t.Fatalf("second decision (approve=%v): err = %v; want ErrConflict", approve, err)
		}
	}
	// A superuser denies b; it cannot be approved afterwards.
	if _, err := r.Service.ApproveCSR(r.Ctx, apptest.Caller, "b", false, "Nope", "not today", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Service.ApproveCSR(r.Ctx, apptest.Caller, "b", true, "", "", ""); !errors.Is(err, app.ErrConflict) {
		t.Fatalf("approve after deny: err = %v", err)
	}
	if c := getCSR(r, "b"); !c.Status.Has(api.CSRConditionDenied) || c.Status.Has(api.CSRConditionApproved) {
		t.Fatalf("b: %+v", c.Status.Conditions)
	}
	// An unknown CSR, asked by someone who may not read it, answers as a forbidden one.
	eve := app.Caller{Username: "eve"}
	if _, err := r.Service.ApproveCSR(r.Ctx, eve, "nope", true, "", "", ""); !errors.Is(err, app.ErrForbidden) {
		t.Fatalf("eve: err = %v", err)
	}
}

// Signing: the CA issuer signs an approved CSR; honoured ≤ requested,
// both recorded in status and counted by docs/design/request-duration.md's metrics.
func TestCSRSignedHonouredAtMostRequested(t *testing.T) {
	cases := []struct {
		name              string
		max               time.Duration
		expirationSeconds int
		annotations       string
		requested         time.Duration
		honoured          time.Duration
		honoredMetric     float64
	}{
		{"honoured as requested", 0, 600, "", 10 * time.Minute, 10 * time.Minute, 1},
		{"shortened to the issuer's maximum", 20 * time.Minute, 3600, "", time.Hour, 20 * time.Minute, 0},
		{"request-duration annotation without expirationSeconds", 0, 0, "experimental.cert-manager.io/request-duration: 2h", 2 * time.Hour, 2 * time.Hour, 0},
		{"expirationSeconds wins over the annotation", 0, 900, "experimental.cert-manager.io/request-duration: 2h", 15 * time.Minute, 15 * time.Minute, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := apptest.NewRig(t)
			readyCA(t, r, tc.max)
			r.Apply(csrSpec{name: "web", signer: "issuers.cert-manager.io/default.ca", expirationSeconds: tc.expirationSeconds, annotations: tc.annotations}.yaml(t))
			r.Drain()
			c := getCSR(r, "web")
			if !c.IsIssued() || !c.Status.Has(api.CSRConditionApproved) {
				t.Fatalf("not issued: %+v", c.Status.Conditions)
			}
			chain, err := pki.ParseChainPEM(c.Status.Certificate)
			if err != nil {
				t.Fatal(err)
			}
			if got := chain[0].NotAfter.Sub(chain[0].NotBefore); got != tc.honoured {
				t.Fatalf("certificate lifetime %s, want %s", got, tc.honoured)
			}
			if c.Status.RequestedDuration.Duration != tc.requested || c.Status.HonouredDuration.Duration != tc.honoured {
				t.Fatalf("recorded requested %s honoured %s; want %s, %s", c.Status.RequestedDuration, c.Status.HonouredDuration, tc.requested, tc.honoured)
			}
			reqWant := 0.0
			if tc.expirationSeconds != 0 {
				reqWant = 1
			}
			if got := r.Metrics.Get(certificatesigningrequests.MetricRequestedDuration + "{signerName=issuers.cert-manager.io}"); got != reqWant {
				t.Fatalf("%s = %v, want %v", certificatesigningrequests.MetricRequestedDuration, got, reqWant)
			}
			if got := r.Metrics.Get(certificatesigningrequests.MetricHonoredDuration); got != tc.honoredMetric {
				t.Fatalf("%s = %v, want %v", certificatesigningrequests.MetricHonoredDuration, got, tc.honoredMetric)
			}
		})
	}
}

// A requester without `reference` on the namespaced Issuer's signer gets
// Failed/DeniedReference, even when approved (cert-manager's check);
// with the permission, the CSR is issued.
func TestCSRNamespacedIssuerNeedsReference(t *testing.T) {
	r := apptest.NewRig(t)
	readyCA(t, r, 0)
	r.Apply(approverRBAC)
	bob := app.Caller{Username: "bob", Groups: []string{"system:authenticated"}}
	if _, err := applyAs(r, bob, csrSpec{name: "a", signer: "issuers.cert-manager.io/default.ca"}.yaml(t)); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	c := getCSR(r, "a")
	if f := c.Status.Condition(api.CSRConditionFailed); f == nil || f.Reason != certificatesigningrequests.ReasonDeniedReference || c.IsIssued() {
		t.Fatalf("want Failed/DeniedReference, got %+v", c.Status.Conditions)
	}
	r.Apply(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reference-ca, namespace: default}
rules:
- {apiGroups: [cert-manager.io], resources: [signers], verbs: [reference], resourceNames: [ca]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-references-ca, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reference-ca}
subjects: [{kind: User, name: bob}]
`)
	if _, err := applyAs(r, bob, csrSpec{name: "b", signer: "issuers.cert-manager.io/default.ca"}.yaml(t)); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	if c := getCSR(r, "b"); !c.IsIssued() {
		t.Fatalf("b not issued: %+v", c.Status.Conditions)
	}
}

// Terminal signer errors are Failed (docs/design/certificates-api.md): a selfSigned issuer
// without the private key annotation; an ACME issuer that is not Ready
// leaves the CSR waiting (no Order); a signer name that is not certfn's is
// left alone.
func TestCSRFailedAndForeignSigners(t *testing.T) {
	r := apptest.NewRig(t)
	r.Apply(apptest.SelfSignedYAML)
	r.Apply(`apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: le}
spec: {acme: {server: "https://acme.invalid/dir", privateKeySecretRef: {name: le-key}, solvers: [{http01: {}}]}}
`)
	r.Drain()
	r.Apply(csrSpec{name: "acme", signer: "clusterissuers.cert-manager.io/le"}.yaml(t))
	r.Apply(csrSpec{name: "nokey", signer: "clusterissuers.cert-manager.io/selfsigned"}.yaml(t))
	r.Apply(csrSpec{name: "foreign", signer: "example.com/other"}.yaml(t))
	r.Drain()
	if c := getCSR(r, "acme"); !c.Status.Has(api.CSRConditionApproved) || c.IsFinal() || countOrders(t, r) != 0 {
		t.Fatalf("acme (issuer never Ready): want approved and waiting with no Order, got %+v", c.Status.Conditions)
	}
	if f := getCSR(r, "nokey").Status.Condition(api.CSRConditionFailed); f == nil || f.Reason != certificatesigningrequests.ReasonSigningError ||
		!strings.Contains(f.Message, "private-key-secret-name") {
		t.Fatalf("nokey: %+v", getCSR(r, "nokey").Status.Conditions)
	}
	if c := getCSR(r, "foreign"); len(c.Status.Conditions) != 0 {
		t.Fatalf("a foreign signer's CSR was touched: %+v", c.Status.Conditions)
	}
}

// selfSigned signs a CSR with the key named by
// experimental.cert-manager.io/private-key-secret-name, read where the
// ClusterIssuer's secrets live; request-is-ca makes it a CA.
func TestCSRSelfSignedWithKeyAnnotation(t *testing.T) {
	r := apptest.NewRig(t)
	r.Apply(apptest.SelfSignedYAML)
	r.Drain()
	key := ct.Key(t, nil)
	if err := r.Secrets.Put(r.Ctx, ports.Secret{Namespace: api.DefaultClusterResourceNamespace, Name: "my-key",
		Data: map[string][]byte{"tls.key": ct.KeyPEM(t, key)}}); err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "my root"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	m := fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: root
  annotations: {experimental.cert-manager.io/private-key-secret-name: my-key, experimental.cert-manager.io/request-is-ca: "true"}
spec:
  request: %s
  signerName: clusterissuers.cert-manager.io/selfsigned
  expirationSeconds: 86400
  usages: [digital signature, key encipherment, cert sign]
`, apptest.B64(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})))
	r.Apply(m)
	r.Drain()
	c := getCSR(r, "root")
	if !c.IsIssued() {
		t.Fatalf("not issued: %+v", c.Status.Conditions)
	}
	chain, _ := pki.ParseChainPEM(c.Status.Certificate)
	if !chain[0].IsCA || chain[0].Subject.CommonName != "my root" || chain[0].NotAfter.Sub(chain[0].NotBefore) != 24*time.Hour {
		t.Fatalf("certificate: CA %v, CN %q, lifetime %s", chain[0].IsCA, chain[0].Subject.CommonName, chain[0].NotAfter.Sub(chain[0].NotBefore))
	}
}

// CertificateRequestPolicies and their `use` bindings decide CSRs as they
// decide CertificateRequests (docs/design/approval-policy.md): a bound requester's CSR the
// policy allows is approved and issued, one it does not allow is Denied,
// and the CSR of a requester bound to no policy is left undecided.
func TestCSRDecidedByPolicy(t *testing.T) {
	r := apptest.NewPolicyRig(t)
	readyCA(t, r, 0)
	r.Apply(teamAPolicy)
	r.Apply(approverRBAC)
	r.Drain()
	r.Apply(csrSpec{name: "allowed", signer: "issuers.cert-manager.io/default.ca", dnsName: "www.team-a.example.com"}.yaml(t))
	r.Apply(csrSpec{name: "refused", signer: "issuers.cert-manager.io/default.ca", dnsName: "www.team-b.example.com"}.yaml(t))
	bob := app.Caller{Username: "bob", Groups: []string{"system:authenticated"}}
	if _, err := applyAs(r, bob, csrSpec{name: "unbound", signer: "issuers.cert-manager.io/default.ca"}.yaml(t)); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	if c := getCSR(r, "allowed"); !c.IsIssued() || c.Status.Condition(api.CSRConditionApproved).Reason != "policy.cert-manager.io" {
		t.Fatalf("allowed: %+v", c.Status.Conditions)
	}
	if c := getCSR(r, "refused"); !c.Status.Has(api.CSRConditionDenied) || c.IsIssued() {
		t.Fatalf("refused: %+v", c.Status.Conditions)
	}
	if c := getCSR(r, "unbound"); len(c.Status.Conditions) != 0 {
		t.Fatalf("unbound: %+v", c.Status.Conditions)
	}
}

func countOrders(t *testing.T, r *apptest.Rig) int {
	t.Helper()
	recs, err := r.Store.List(context.Background(), ports.ListOptions{Kind: api.KindOrder})
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// A final CSR goes an hour after it ended (docs/design/request-duration.md, Kubernetes'
// csrcleaner), in every deployment: it is due then, and the sweep's
// reconcile deletes it with its Event; a pending one stays.
func TestFinalCSRCleanedAfterRetain(t *testing.T) {
	r := apptest.NewRig(t)
	readyCA(t, r, 0)
	r.Apply(csrSpec{name: "issued", signer: "issuers.cert-manager.io/default.ca"}.yaml(t))
	r.Apply(csrSpec{name: "pending", signer: "example.com/not-certfns"}.yaml(t))
	r.Drain()
	r.Approver.Set(certificaterequests.Unmatched) // nobody decides the next one: a person denies it
	r.Apply(csrSpec{name: "denied", signer: "clusterissuers.cert-manager.io/other"}.yaml(t))
	r.Drain()
	// Denied through the API, which leaves it due at its short safety net:
	// the hour counts from the Denied condition all the same.
	if _, err := r.Service.ApproveCSR(r.Ctx, apptest.Caller, "denied", false, "", "", ""); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	if !getCSR(r, "issued").IsIssued() {
		t.Fatalf("not issued: %+v", getCSR(r, "issued").Status.Conditions)
	}
	key := api.Key{Kind: api.KindCertificateSigningRequest, Name: "issued"}
	if due := r.Rec(key).NextRunAt; !due.Equal(r.Clock.Now().Add(app.RetainCSR)) {
		t.Fatalf("issued CSR due %v, want %v", due, r.Clock.Now().Add(app.RetainCSR))
	}
	r.Clock.Advance(app.RetainCSR - time.Second)
	if _, err := r.Kernel.Sweep(r.Ctx, 100); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	getCSR(r, "issued") // still there
	getCSR(r, "denied")
	r.Clock.Advance(2 * time.Second)
	if _, err := r.Kernel.Sweep(r.Ctx, 100); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	if _, err := r.Store.Get(r.Ctx, key); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("issued CSR an hour later: %v, want deleted", err)
	}
	if evs, err := r.Repo.EventsOf(r.Ctx, key); err != nil || len(evs) != 0 {
		t.Fatalf("its Events: %+v %v, want deleted", evs, err)
	}
	if _, err := r.Store.Get(r.Ctx, api.Key{Kind: api.KindCertificateSigningRequest, Name: "denied"}); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("denied CSR an hour later: %v, want deleted", err)
	}
	getCSR(r, "pending") // another signer's, never final: kept
}
