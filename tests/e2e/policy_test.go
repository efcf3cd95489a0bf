package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/localmode"
)

// twoTeams: namespaces team-a and team-b, one policy each (DNS names under
// the team's zone, signed by the demo CA, requests in the team's namespace),
// each bound with `use` to the team's group; each team may create
// CertificateRequests in its namespace; nobody but the security group may
// approve for the demo CA.
const twoTeams = `
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {team: a}}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b, labels: {team: b}}
---
apiVersion: policy.cert-manager.io/v1alpha1
kind: CertificateRequestPolicy
metadata: {name: team-a}
spec:
  allowed:
    commonName: {value: "*.a.example.com"}
    dnsNames: {values: ["*.a.example.com"], required: true}
    usages: ["digital signature", "key encipherment", "server auth"]
  constraints: {maxDuration: 2160h, privateKey: {algorithm: ECDSA}}
  selector:
    issuerRef: {name: demo-ca, kind: ClusterIssuer}
    namespace: {matchLabels: {team: a}}
---
apiVersion: policy.cert-manager.io/v1alpha1
kind: CertificateRequestPolicy
metadata: {name: team-b}
spec:
  allowed:
    commonName: {value: "*.b.example.com"}
    dnsNames: {values: ["*.b.example.com"], required: true}
    usages: ["digital signature", "key encipherment", "server auth"]
  selector:
    issuerRef: {name: demo-ca, kind: ClusterIssuer}
    namespace: {matchNames: [team-b]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: use-team-policies}
rules:
- apiGroups: [policy.cert-manager.io]
  resources: [certificaterequestpolicies]
  verbs: [use]
  resourceNames: [team-a, team-b]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: team-a-use-policy}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: use-team-policies}
subjects: [{kind: Group, name: team-a}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: team-b-use-policy}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: use-team-policies}
subjects: [{kind: Group, name: team-b}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: request-certificates}
rules:
- apiGroups: [cert-manager.io]
  resources: [certificaterequests]
  verbs: [create, get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: team-a-requests, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: request-certificates}
subjects: [{kind: Group, name: team-a}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: team-b-requests, namespace: team-b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: request-certificates}
subjects: [{kind: Group, name: team-b}, {kind: User, name: mallory}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: approve-demo-ca}
rules:
- apiGroups: [cert-manager.io]
  resources: [signers]
  verbs: [approve]
  resourceNames: [clusterissuers.cert-manager.io/demo-ca]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: security-approves}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: approve-demo-ca}
subjects: [{kind: Group, name: security}]
`

// requestYAML is a CertificateRequest for dnsName with a fresh ECDSA key.
func requestYAML(t *testing.T, ns, name, dnsName string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: CertificateRequest
metadata: {name: %s, namespace: %s}
spec:
  request: %s
  duration: 720h
  usages: ["digital signature", "key encipherment", "server auth"]
  issuerRef: {name: demo-ca, kind: ClusterIssuer}
  username: forged-admin
  groups: [system:masters]
`, name, ns, base64.StdEncoding.EncodeToString(csr))
}

func TestPolicyApprovalForTwoTeams(t *testing.T) {
	// Only the bootstrap CA is auto-approved; everything else goes through policy.
	h := newHarness(t, func(o *localmode.Options) { o.AutoApprove = []string{"clusterissuers.cert-manager.io/selfsigned"} })
	h.applyFile("../../examples/01-selfsigned-clusterissuer.yaml")
	h.applyFile("../../examples/02-ca.yaml")
	h.apply(twoTeams)
	h.run()
	h.requireReady("cert-manager", "demo-ca")

	alice := app.Caller{Username: "alice", Groups: []string{"team-a"}}
	mallory := app.Caller{Username: "mallory"}
	bob := app.Caller{Username: "bob", Groups: []string{"team-b"}}
	submit := func(who app.Caller, manifest string) *api.CertificateRequest {
		t.Helper()
		objs, err := api.Decode([]byte(manifest))
		if err != nil {
			t.Fatal(err)
		}
		if err := h.rt.App.Service.Authorize(h.ctx, who, "create", api.KeyOf(objs[0])); err != nil {
			t.Fatalf("%s may not create the request: %v", who.Username, err)
		}
		if _, err := h.rt.App.Service.Apply(h.ctx, who, []api.Object{objs[0]}); err != nil {
			t.Fatal(err)
		}
		return objs[0].(*api.CertificateRequest)
	}
	get := func(ns, name string) *api.CertificateRequest {
		t.Helper()
		o, err := h.rt.Repo.Get(h.ctx, api.Key{Kind: api.KindCertificateRequest, Namespace: ns, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return o.(*api.CertificateRequest)
	}

	submit(alice, requestYAML(t, "team-a", "inside", "app.a.example.com"))
	submit(alice, requestYAML(t, "team-a", "outside", "app.b.example.com"))
	submit(mallory, requestYAML(t, "team-b", "unbound", "app.b.example.com"))
	h.run()

	inside := get("team-a", "inside")
	if !inside.IsIssued() {
		t.Fatalf("request inside policy not issued: %+v", inside.Status.Conditions)
	}
	if inside.Spec.Username != "alice" || len(inside.Spec.Groups) == 0 || inside.Spec.Groups[0] != "team-a" {
		t.Fatalf("requester identity not taken from the caller: %q %v", inside.Spec.Username, inside.Spec.Groups)
	}
	if c := api.FindCondition(inside.Status.Conditions, "Approved"); c == nil || !strings.Contains(c.Message, "team-a") {
		t.Fatalf("Approved condition does not name the policy: %+v", c)
	}

	outside := get("team-a", "outside")
	d := api.FindCondition(outside.Status.Conditions, "Denied")
	if d == nil || d.Status != api.ConditionTrue || !strings.Contains(d.Message, "team-a") || !strings.Contains(d.Message, "app.b.example.com") {
		t.Fatalf("request outside policy not denied with a clear reason: %+v", outside.Status.Conditions)
	}
	if outside.IsIssued() || !outside.IsFinal() {
		t.Fatal("denied request must be final and not issued")
	}

	unbound := get("team-b", "unbound")
	if api.FindCondition(unbound.Status.Conditions, "Approved") != nil || api.FindCondition(unbound.Status.Conditions, "Denied") != nil {
		t.Fatalf("unbound requester's request was decided: %+v", unbound.Status.Conditions)
	}
	if r := api.FindCondition(unbound.Status.Conditions, "Ready"); r == nil || r.Reason != "Pending" || !strings.Contains(r.Message, "mallory") {
		t.Fatalf("pending request has no visible reason naming the requester: %+v", r)
	}

	// bob may not approve for demo-ca: refused, nothing changes.
	before, _ := h.rt.Repo.Version(h.ctx, api.KeyOf(unbound))
	_, err := h.rt.App.Service.Approve(h.ctx, bob, api.KeyOf(unbound), true, "ByBob", "looks fine", "")
	if !errors.Is(err, app.ErrForbidden) {
		t.Fatalf("approval by bob = %v, want forbidden", err)
	}
	after, _ := h.rt.Repo.Version(h.ctx, api.KeyOf(unbound))
	if before != after {
		t.Fatalf("refused approval changed the request (version %d → %d)", before, after)
	}
	// The security group may approve; the approved request is then signed.
	if _, err := h.rt.App.Service.Approve(h.ctx, app.Caller{Username: "sam", Groups: []string{"security"}}, api.KeyOf(unbound), true, "Reviewed", "approved by security", ""); err != nil {
		t.Fatal(err)
	}
	h.run()
	if !get("team-b", "unbound").IsIssued() {
		t.Fatal("manually approved request not issued")
	}

	if got := h.counter("policy_approval_outcomes_total"); got < 3 {
		t.Fatalf("approval outcomes counted = %v, want >= 3", got)
	}
}
