package certificatesigningrequests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/signers"
)

// noCAApprover approves a request only when it asks for no CA and at most
// 90 days: a CertificateRequestPolicy that forbids isCA, as a test double.
type noCAApprover struct{}

func (noCAApprover) Decide(_ context.Context, cr *api.CertificateRequest) (certificaterequests.Decision, error) {
	if d, ok := cr.Spec.RequestedDuration(); cr.Spec.IsCA || (ok && d > 90*24*time.Hour) {
		return certificaterequests.Decision{Result: certificaterequests.Denied, Reason: "policy", Message: "isCA or a long lifetime"}, nil
	}
	return certificaterequests.Decision{Result: certificaterequests.Approved, Reason: "policy", Message: "allowed"}, nil
}

// recordingSigner is a signer double that keeps the request it was asked
// to sign and answers with chain.
type recordingSigner struct {
	got   *api.CertificateRequest
	chain []byte
}

func (s *recordingSigner) Sign(_ context.Context, req signers.Request) (signers.Result, error) {
	s.got = req.CR
	return signers.Result{Certificate: s.chain}, nil
}

// An approval records what it approved, and the signing step signs that
// and nothing else: a CSR whose annotations (isCA, the requested
// duration, the selfSigned key) or spec changed after approval is Failed
// naming what changed, and the signer is never called — the attack of
// approving under a policy that forbids isCA, then re-applying the CSR
// with request-is-ca "true" and a ten-year duration before signing.
func TestSigningSignsOnlyWhatWasApproved(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ann := func(k, v string) func(*api.CertificateSigningRequest) {
		return func(c *api.CertificateSigningRequest) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[k] = v
		}
	}
	for _, tc := range []struct {
		name    string
		created []func(*api.CertificateSigningRequest) // before approval
		changed []func(*api.CertificateSigningRequest) // after approval, before signing
		field   string                                 // "" : signed as approved
	}{
		{name: "unchanged: signed with the approved parameters", created: []func(*api.CertificateSigningRequest){ann(api.AnnotationCSRDuration, "720h")}},
		{name: "a label changed: signed", changed: []func(*api.CertificateSigningRequest){func(c *api.CertificateSigningRequest) { c.Labels = map[string]string{"a": "b"} }}},
		{name: "request-is-ca added", changed: []func(*api.CertificateSigningRequest){ann(api.AnnotationCSRIsCA, "true")}, field: api.AnnotationCSRIsCA},
		{name: "request-is-ca and ten years added", changed: []func(*api.CertificateSigningRequest){ann(api.AnnotationCSRIsCA, "true"), ann(api.AnnotationCSRDuration, "87600h")},
			field: api.AnnotationCSRIsCA},
		{name: "request-duration lengthened", created: []func(*api.CertificateSigningRequest){ann(api.AnnotationCSRDuration, "720h")},
			changed: []func(*api.CertificateSigningRequest){ann(api.AnnotationCSRDuration, "87600h")}, field: api.AnnotationCSRDuration},
		{name: "private-key-secret-name added", changed: []func(*api.CertificateSigningRequest){ann(api.AnnotationCSRPrivateKeySecretName, "ca-key-pair")},
			field: api.AnnotationCSRPrivateKeySecretName},
		{name: "expirationSeconds changed", created: []func(*api.CertificateSigningRequest){func(c *api.CertificateSigningRequest) { c.Spec.ExpirationSeconds = i32(3600) }},
			changed: []func(*api.CertificateSigningRequest){func(c *api.CertificateSigningRequest) { c.Spec.ExpirationSeconds = i32(315360000) }}, field: "spec.expirationSeconds"},
		{name: "usages changed", changed: []func(*api.CertificateSigningRequest){func(c *api.CertificateSigningRequest) {
			c.Spec.Usages = []api.KeyUsage{"cert sign", "crl sign"}
		}}, field: "spec.usages"},
		{name: "request changed", changed: []func(*api.CertificateSigningRequest){func(c *api.CertificateSigningRequest) { c.Spec.Request = ct.BareCSR(t, "www.example.com") }},
			field: "spec.request"},
		{name: "requester changed", changed: []func(*api.CertificateSigningRequest){func(c *api.CertificateSigningRequest) { c.Spec.Groups = []string{"system:masters"} }},
			field: "the requester"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := csrWith("clusterissuers.cert-manager.io/ca", append([]func(*api.CertificateSigningRequest){func(c *api.CertificateSigningRequest) {
				c.Spec.Request = ct.BareCSR(t, "web.example.com")
				c.ResourceVersion = "3"
			}}, tc.created...)...)
			sig := &recordingSigner{}
			w := &keptWrites{}
			env := &Env{Writer: w, Approver: noCAApprover{}, Issuers: readyIssuer{}, Signers: map[string]signers.Signer{"ca": sig},
				ClusterResourceNamespace: "cert-manager", WaitPoll: time.Minute}
			st := &State{CSR: c, Version: 3, Now: t0}
			if out, err := ApprovalStep(context.Background(), env, st); err != nil || !out.Wrote || !c.Status.Has(api.CSRConditionApproved) {
				t.Fatalf("approval: %+v %v %+v", out, err, c.Status.Conditions)
			}
			if a := c.Status.Approved; a == nil || a.IsCA || a.ResourceVersion != "3" || a.Digest == "" {
				t.Fatalf("status.approved = %+v; want the approved view at version 3", a)
			}
			for _, f := range tc.changed {
				f(c)
			}
			out, err := SigningStep(context.Background(), env, st)
			if err != nil || !out.Wrote {
				t.Fatalf("signing: %+v %v", out, err)
			}
			if tc.field == "" {
				if sig.got == nil || sig.got.Spec.IsCA {
					t.Fatalf("signer got %+v; want the approved, non-CA request", sig.got)
				}
				if d, _ := sig.got.Spec.RequestedDuration(); len(tc.created) > 0 && d != 720*time.Hour {
					t.Fatalf("signer got duration %v, want the approved 720h", d)
				}
				return
			}
			if sig.got != nil {
				d, _ := sig.got.Spec.RequestedDuration()
				t.Fatalf("a request changed after approval was signed: isCA %v, duration %v, usages %v", sig.got.Spec.IsCA, d, sig.got.Spec.Usages)
			}
			f := c.Status.Condition(api.CSRConditionFailed)
			if f == nil || f.Reason != ReasonChangedAfterApproval || !strings.Contains(f.Message, tc.field) {
				t.Fatalf("failed = %+v; want %s naming %s", f, ReasonChangedAfterApproval, tc.field)
			}
		})
	}
}

// An Approved CSR without a record of what was approved (status.approved)
// is not signed: the signer cannot tell what was approved.
func TestSigningRefusesAnApprovalWithoutRecord(t *testing.T) {
	c := csrWith("clusterissuers.cert-manager.io/ca", func(c *api.CertificateSigningRequest) {
		c.Spec.Request = ct.BareCSR(t, "web.example.com")
		c.Status.AddCondition(api.CSRConditionApproved, "r", "m", time.Unix(0, 0))
	})
	sig := &recordingSigner{}
	env := &Env{Writer: &keptWrites{}, Issuers: readyIssuer{}, Signers: map[string]signers.Signer{"ca": sig}, ClusterResourceNamespace: "cert-manager"}
	if _, err := SigningStep(context.Background(), env, &State{CSR: c, Now: time.Unix(10, 0)}); err != nil {
		t.Fatal(err)
	}
	if f := c.Status.Condition(api.CSRConditionFailed); sig.got != nil || f == nil || f.Reason != ReasonApprovalNotRecorded {
		t.Fatalf("signed %v, failed %+v; want %s", sig.got != nil, f, ReasonApprovalNotRecorded)
	}
}

// Approve records the view only once, with the first approval: a second
// call on an approved CSR changes nothing.
func TestApproveRecordsOnce(t *testing.T) {
	c := csrWith("clusterissuers.cert-manager.io/ca")
	Approve(c, "cert-manager", "r", "m", time.Unix(0, 0))
	first := *c.Status.Approved
	c.Annotations = map[string]string{api.AnnotationCSRIsCA: "true"}
	Approve(c, "cert-manager", "r2", "m2", time.Unix(1, 0))
	if c.Status.Approved.Digest != first.Digest || c.Status.Approved.IsCA || len(c.Status.Conditions) != 1 {
		t.Fatalf("second approval changed the record: %+v %+v", c.Status.Approved, c.Status.Conditions)
	}
	foreign := csrWith("example.com/other")
	Approve(foreign, "cert-manager", "r", "m", time.Unix(0, 0))
	if foreign.Status.Approved != nil || !foreign.Status.Has(api.CSRConditionApproved) {
		t.Fatalf("another signer's CSR: %+v", foreign.Status)
	}
}

// countingIssuers is a certificaterequests.Issuers double holding one issuer (nil:
// none) that counts its lookups.
type countingIssuers struct {
	iss   api.GenericIssuer
	reads int
}

func (f *countingIssuers) Get(context.Context, string, api.IssuerReference) (api.GenericIssuer, string, bool, error) {
	f.reads++
	return f.iss, "team-b", f.iss != nil, nil
}

// A requester without `reference` on another namespace's Issuer gets the
// same answer whether or not that Issuer exists (Failed DeniedReference,
// the same message), and the issuer is not even looked up: the reference
// check comes first, so an approved CSR is no oracle for which Issuers
// exist.
func TestSigningReferenceCheckBeforeIssuerLookup(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ready := &api.Issuer{ObjectMeta: api.ObjectMeta{Name: "ca", Namespace: "team-b"}, Spec: api.IssuerSpec{CA: &api.CAIssuer{SecretName: "s"}},
		Status: api.IssuerStatus{Conditions: []api.Condition{{Type: api.IssuerConditionReady, Status: api.ConditionTrue}}}}
	nobody := func(context.Context) (*rbac.Authorizer, error) { return rbac.NewAuthorizer(rbac.Snapshot{}), nil }
	var answers []string
	for _, tc := range []struct {
		name string
		iss  api.GenericIssuer
	}{{"the Issuer exists", ready}, {"no such Issuer", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			c := csrWith("issuers.cert-manager.io/team-b.ca", func(c *api.CertificateSigningRequest) { c.Spec.Request = ct.BareCSR(t, "web.example.com") })
			Approve(c, "cert-manager", "r", "m", now)
			iss := &countingIssuers{iss: tc.iss}
			sig := &recordingSigner{}
			env := &Env{Writer: &keptWrites{}, Issuers: iss, Signers: map[string]signers.Signer{"ca": sig}, Authorizer: nobody,
				ClusterResourceNamespace: "cert-manager", WaitPoll: time.Minute}
			out, err := SigningStep(context.Background(), env, &State{CSR: c, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			f := c.Status.Condition(api.CSRConditionFailed)
			if f == nil || f.Reason != ReasonDeniedReference || out.Waiting != nil || sig.got != nil {
				t.Fatalf("outcome %+v (waiting %+v), failed %+v; want Failed %s", out, out.Waiting, f, ReasonDeniedReference)
			}
			if iss.reads != 0 {
				t.Fatalf("the issuer was looked up %d times before the reference check", iss.reads)
			}
			answers = append(answers, f.Reason+": "+f.Message)
		})
	}
	if len(answers) != 2 || answers[0] != answers[1] {
		t.Fatalf("answers differ with the Issuer's existence: %q", answers)
	}
}
