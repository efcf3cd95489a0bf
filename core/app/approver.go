package app

import (
	"context"
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/policy"
	"github.com/certfn/certfn/core/rbac"
)

// policyApprover adapts policy.Approver (the opt-in auto-approve list, then
// CertificateRequestPolicies, docs/design/approval-policy.md) to the
// approval step: it loads the policies, the request's Namespace labels and
// the RBAC bindings through the repository for each decision
// (policy.LoadInput).
type policyApprover struct {
	objs policy.Objects
	ap   *policy.Approver
}

// Reason recorded on Approved/Denied conditions decided by policy, as approver-policy does.
const policyReason = "policy.cert-manager.io"

// Decide implements certificaterequests.Approver.
func (p *policyApprover) Decide(ctx context.Context, cr *api.CertificateRequest) (certificaterequests.Decision, error) {
	in, err := policy.LoadInput(ctx, p.objs, cr)
	if err != nil {
		return certificaterequests.Decision{}, err
	}
	d := p.ap.Decide(ctx, in)
	switch d.Result {
	case policy.Approved:
		return certificaterequests.Decision{Result: certificaterequests.Approved, Reason: policyReason, Message: d.Message()}, nil
	case policy.Denied:
		return certificaterequests.Decision{Result: certificaterequests.Denied, Reason: policyReason, Message: d.Message()}, nil
	}
	return certificaterequests.Decision{Result: certificaterequests.Unmatched, Message: d.Message(), Detail: d.Detail}, nil
}

// keyPolicy is the policy approver's certificates.KeyPolicy: the requests
// a Certificate's steps create carry its namespace and issuerRef and
// certfn's identity, so the policies that will decide them are known
// before the key exists; when some apply and none allows the key's
// algorithm and size, no key is generated (policy.Approver.RefusesKey).
type keyPolicy struct {
	objs     policy.Objects
	ap       *policy.Approver
	identity rbac.Identity
}

// RefuseKey implements certificates.KeyPolicy.
func (k keyPolicy) RefuseKey(ctx context.Context, crt *api.Certificate) (string, error) {
	id := k.identity
	cr := &api.CertificateRequest{
		ObjectMeta: api.ObjectMeta{Namespace: crt.Namespace, Name: crt.Name},
		Spec:       api.CertificateRequestSpec{IssuerRef: crt.Spec.IssuerRef, Username: id.Username, UID: id.UID, Groups: id.Groups},
	}
	in, err := policy.LoadInput(ctx, k.objs, cr)
	if err != nil {
		return "", err
	}
	alg, size := pki.KeyParams(crt.Spec.PrivateKey)
	why, refused := k.ap.RefusesKey(in, alg, size)
	if !refused {
		return "", nil
	}
	key := fmt.Sprintf("%s %d", alg, size)
	if size == 0 {
		key = string(alg)
	}
	return fmt.Sprintf("spec.privateKey: a %s key is not allowed by any CertificateRequestPolicy that applies to this Certificate's requests, "+
		"so no key was generated and no request created: %s", key, why), nil
}
