package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/policy"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
)

// policyApprover adapts policy.Approver (the opt-in auto-approve list, then
// CertificateRequestPolicies, docs/design/approval-policy.md) to the approval step: it loads the
// policies, the request's Namespace labels and the RBAC bindings from the
// store for each decision.
type policyApprover struct {
	e  *Engine
	ap *policy.Approver
}

// Reason recorded on Approved/Denied conditions decided by policy, as approver-policy does.
const policyReason = "policy.cert-manager.io"

func (p *policyApprover) Decide(ctx context.Context, cr *api.CertificateRequest) (certificaterequests.Decision, error) {
	in, err := p.e.PolicyInput(ctx, cr)
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
	e  *Engine
	ap *policy.Approver
}

func (k keyPolicy) RefuseKey(ctx context.Context, crt *api.Certificate) (string, error) {
	id := k.e.cfg.Identity
	cr := &api.CertificateRequest{
		ObjectMeta: api.ObjectMeta{Namespace: crt.Namespace, Name: crt.Name},
		Spec:       api.CertificateRequestSpec{IssuerRef: crt.Spec.IssuerRef, Username: id.Username, UID: id.UID, Groups: id.Groups},
	}
	in, err := k.e.PolicyInput(ctx, cr)
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

// Authorizer builds an RBAC authorizer from the stored Roles, ClusterRoles,
// RoleBindings and ClusterRoleBindings.
func (e *Engine) Authorizer(ctx context.Context) (*rbac.Authorizer, error) {
	var s rbac.Snapshot
	for _, kind := range []string{api.KindRole, api.KindClusterRole, api.KindRoleBinding, api.KindClusterRoleBinding} {
		objs, err := e.List(ctx, kind, "")
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			switch v := o.(type) {
			case *api.Role:
				s.Roles = append(s.Roles, *v)
			case *api.ClusterRole:
				s.ClusterRoles = append(s.ClusterRoles, *v)
			case *api.RoleBinding:
				s.RoleBindings = append(s.RoleBindings, *v)
			case *api.ClusterRoleBinding:
				s.ClusterRoleBindings = append(s.ClusterRoleBindings, *v)
			}
		}
	}
	return rbac.NewAuthorizer(s), nil
}

// PolicyInput is the evaluation input of cr as the approver builds it:
// every CertificateRequestPolicy, the RBAC snapshot (for `use`), and the
// labels of the request's Namespace object.
func (e *Engine) PolicyInput(ctx context.Context, cr *api.CertificateRequest) (policy.Input, error) {
	in := policy.Input{Request: cr}
	pols, err := e.List(ctx, api.KindCertificateRequestPolicy, "")
	if err != nil {
		return in, err
	}
	for _, o := range pols {
		in.Policies = append(in.Policies, o.(*api.CertificateRequestPolicy))
	}
	if in.Authorizer, err = e.Authorizer(ctx); err != nil {
		return in, err
	}
	nsObj, err := e.cfg.Store.Get(ctx, api.Key{Kind: api.KindNamespace, Name: cr.Namespace})
	switch {
	case err == nil:
		o, err := decode(nsObj)
		if err != nil {
			return in, err
		}
		in.NamespaceLabels = o.GetObjectMeta().Labels
	case !errors.Is(err, ports.ErrNotFound):
		return in, fmt.Errorf("read Namespace %s: %w", cr.Namespace, err)
	}
	return in, nil
}
