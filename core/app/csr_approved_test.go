package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/certificatesigningrequests"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// noCAPolicy lets team-a have leaf certificates for its names from Issuer
// default/ca, for at most 90 days; isCA is not allowed (unset).
const noCAPolicy = `apiVersion: policy.cert-manager.io/v1alpha1
kind: CertificateRequestPolicy
metadata: {name: team-a}
spec:
  allowed:
    commonName: {value: "*.team-a.example.com"}
    dnsNames: {values: ["*.team-a.example.com"]}
    usages: ["digital signature", "key encipherment", "server auth"]
  constraints: {maxDuration: 2160h}
  selector:
    issuerRef: {name: ca, kind: Issuer}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: use-team-a}
rules:
- {apiGroups: [policy.cert-manager.io], resources: [certificaterequestpolicies], verbs: [use], resourceNames: [team-a]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: team-a-uses-team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: use-team-a}
subjects: [{kind: Group, name: team-a}]
`

// The attack on CSR annotations: a team whose policy forbids isCA has its
// CSR approved while signing is stalled (its Issuer is missing), then
// re-applies it with request-is-ca "true" and a ten-year duration, then
// repairs the Issuer. The re-apply is refused naming the annotation, and
// what is signed is the approved leaf certificate: CA:FALSE, within the
// policy's 90 days. Had the annotations been changed behind the API's
// back (in the store), the signing step refuses the CSR instead of
// signing the changed view.
func TestCSRChangedAfterApprovalIsNotSigned(t *testing.T) {
	r := apptest.NewPolicyRig(t)
	r.Apply(noCAPolicy)
	r.Drain()
	const isCA, duration = "experimental.cert-manager.io/request-is-ca", "experimental.cert-manager.io/request-duration"
	approved := duration + ": 720h"
	web := csrSpec{name: "web", signer: "issuers.cert-manager.io/default.ca", annotations: approved}.yaml(t)
	store := csrSpec{name: "store", signer: "issuers.cert-manager.io/default.ca", annotations: approved}.yaml(t)
	r.Apply(web)
	r.Apply(store)
	r.Drain()
	for _, n := range []string{"web", "store"} {
		if c := getCSR(r, n); !c.Status.Has(api.CSRConditionApproved) || c.IsFinal() {
			t.Fatalf("%s: want approved and waiting for its Issuer, got %+v", n, c.Status.Conditions)
		}
	}

	// Through the API: refused, naming the annotation; nothing stored.
	for _, tc := range []struct{ attack, field string }{
		{isCA + `: "true", ` + duration + ": 87600h", duration},
		{isCA + `: "true", ` + approved, isCA},
	} {
		m := strings.Replace(web, approved, tc.attack, 1)
		_, err := applyAs(r, apptest.Caller, m)
		var verr *app.ValidationError
		if !errors.As(err, &verr) || len(verr.Details) == 0 || verr.Details[0].Field != `metadata.annotations["`+tc.field+`"]` ||
			!strings.Contains(err.Error(), "immutable") {
			t.Fatalf("re-apply with %s after approval: err = %v; want a validation error at metadata.annotations[%q]", tc.attack, err, tc.field)
		}
	}
	if c := getCSR(r, "web"); c.Annotations[isCA] != "" || c.Annotations[duration] != "720h" {
		t.Fatalf("the annotations were stored: %v", c.Annotations)
	}

	// Behind the API's back: the stored CSR changed after approval.
	c := getCSR(r, "store")
	c.Annotations = map[string]string{isCA: "true", duration: "87600h"}
	if _, err := r.Objects.UpdateObject(r.Ctx, c, r.Rec(csrKey("store")).Version, r.Clock.Now()); err != nil {
		t.Fatal(err)
	}

	readyCA(t, r, 0)
	r.Drain()
	c = getCSR(r, "web")
	if !c.IsIssued() {
		t.Fatalf("web not issued: %+v", c.Status.Conditions)
	}
	chain, err := pki.ParseChainPEM(c.Status.Certificate)
	if err != nil {
		t.Fatal(err)
	}
	if leaf := chain[0]; leaf.IsCA || leaf.NotAfter.Sub(leaf.NotBefore) > 720*time.Hour+time.Hour {
		t.Fatalf("signed: isCA %v, lifetime %v; want the approved leaf", leaf.IsCA, leaf.NotAfter.Sub(leaf.NotBefore))
	}
	c = getCSR(r, "store")
	if f := c.Status.Condition(api.CSRConditionFailed); c.IsIssued() || f == nil || f.Reason != certificatesigningrequests.ReasonChangedAfterApproval || !strings.Contains(f.Message, isCA) {
		t.Fatalf("store: issued %v, failed %+v; want Failed %s naming %s", c.IsIssued(), f, certificatesigningrequests.ReasonChangedAfterApproval, isCA)
	}
}

// racingApprover approves every request and, on its first decision, runs
// change first: a write to the CSR between the approval step's read and
// its write.
type racingApprover struct {
	change func()
	done   bool
}

func (a *racingApprover) Decide(context.Context, *api.CertificateRequest) (certificaterequests.Decision, error) {
	if !a.done {
		a.done = true
		a.change()
	}
	return certificaterequests.Decision{Result: certificaterequests.Approved, Reason: "test", Message: "approved"}, nil
}

// The approver's write is conditional on the version it evaluated: a CSR
// changed while the approver decided is not approved from the old view
// (the write loses, ErrConflict), and the next reconcile evaluates the
// stored version and records that one (status.approved.resourceVersion is
// the version just before the approval's write).
func TestCSRApprovalWriteIsConditional(t *testing.T) {
	var r *apptest.Rig
	racing := &racingApprover{}
	r = apptest.NewRig(t, func(s *app.Settings) { s.Approver = racing })
	m := csrSpec{name: "web", signer: "clusterissuers.cert-manager.io/ca"}.yaml(t)
	racing.change = func() {
		if _, err := applyAs(r, apptest.Caller, strings.Replace(m, "metadata: {name: web}", "metadata: {name: web, labels: {a: b}}", 1)); err != nil {
			t.Fatal(err)
		}
	}
	r.Apply(m)
	err := r.Kernel.Reconcile(r.Ctx, csrKey("web"))
	if !errors.Is(err, ports.ErrConflict) {
		t.Fatalf("approval over a concurrent change: err = %v; want the write to lose (ErrConflict)", err)
	}
	c := getCSR(r, "web")
	if c.Status.Has(api.CSRConditionApproved) || c.Labels["a"] != "b" {
		t.Fatalf("after the lost race: conditions %+v, labels %v", c.Status.Conditions, c.Labels)
	}
	changed := c.ResourceVersion
	r.Reconcile(csrKey("web"))
	c = getCSR(r, "web")
	if a := c.Status.Approved; !c.Status.Has(api.CSRConditionApproved) || a == nil || a.ResourceVersion != changed {
		t.Fatalf("approved %+v; want the record of version %s", a, changed)
	}
}
