package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/policy"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/requests"
)

// policyApprover adapts policy.Approver (the opt-in auto-approve list, then
// CertificateRequestPolicies, seed 001) to the approval step: it loads the
// policies, the request's Namespace labels and the RBAC bindings from the
// store for each decision.
type policyApprover struct {
	e  *Engine
	ap *policy.Approver
}

// Reason recorded on Approved/Denied conditions decided by policy, as approver-policy does.
const policyReason = "policy.cert-manager.io"

func (p *policyApprover) Decide(ctx context.Context, cr *api.CertificateRequest) (requests.Decision, error) {
	in := policy.Input{Request: cr}
	pols, err := p.e.List(ctx, api.KindCertificateRequestPolicy, "")
	if err != nil {
		return requests.Decision{}, err
	}
	for _, o := range pols {
		in.Policies = append(in.Policies, o.(*api.CertificateRequestPolicy))
	}
	if in.Authorizer, err = p.e.Authorizer(ctx); err != nil {
		return requests.Decision{}, err
	}
	nsObj, err := p.e.cfg.Store.Get(ctx, api.Key{Kind: api.KindNamespace, Name: cr.Namespace})
	switch {
	case err == nil:
		o, err := decode(nsObj)
		if err != nil {
			return requests.Decision{}, err
		}
		in.NamespaceLabels = o.GetObjectMeta().Labels
	case !errors.Is(err, ports.ErrNotFound):
		return requests.Decision{}, fmt.Errorf("read Namespace %s: %w", cr.Namespace, err)
	}
	d := p.ap.Decide(ctx, in)
	switch d.Result {
	case policy.Approved:
		return requests.Decision{Result: requests.Approved, Reason: policyReason, Message: d.Message}, nil
	case policy.Denied:
		return requests.Decision{Result: requests.Denied, Reason: policyReason, Message: d.Message}, nil
	}
	return requests.Decision{Result: requests.Unmatched, Message: d.Message}, nil
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

// authzScope is the context key of WithAuthorizationScope's cache.
type authzScope struct{}

type authzCache struct {
	mu sync.Mutex
	az *rbac.Authorizer
}

// WithAuthorizationScope returns a context in which Authorize and
// AuthorizeApproval build the RBAC snapshot (four lists) once and reuse it
// for every later check: one API request, or one CLI command, is decided
// against the roles and bindings as they were when its first check ran
// (so a batch cannot grant itself rights half-way, and an apply of N
// objects costs four lists, not 4N). Without it every check lists anew.
// A context already in a scope is returned as it is.
func WithAuthorizationScope(ctx context.Context) context.Context {
	if _, ok := ctx.Value(authzScope{}).(*authzCache); ok {
		return ctx
	}
	return context.WithValue(ctx, authzScope{}, &authzCache{})
}

// authorizer returns the scope's snapshot, building it on first use, or a
// fresh one outside a scope.
func (e *Engine) authorizer(ctx context.Context) (*rbac.Authorizer, error) {
	c, ok := ctx.Value(authzScope{}).(*authzCache)
	if !ok {
		return e.Authorizer(ctx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.az == nil {
		az, err := e.Authorizer(ctx)
		if err != nil {
			return nil, err
		}
		c.az = az
	}
	return c.az, nil
}

// Authorize checks that caller may perform verb on key (create, get, list,
// update, delete, or approve on a request's signer). Members of
// system:masters are allowed everything, as in Kubernetes.
func (e *Engine) Authorize(ctx context.Context, caller Caller, verb string, key api.Key) error {
	id := callerIdentity(caller)
	for _, g := range id.Groups {
		if g == SuperuserGroup {
			return nil
		}
	}
	az, err := e.authorizer(ctx)
	if err != nil {
		return err
	}
	attrs, err := rbac.AttributesFor(verb, key)
	if err != nil {
		return err
	}
	if ok, why := az.Allowed(id, attrs); !ok {
		return errs403(fmt.Errorf("%s may not %s %s: %s", id.Username, verb, key, why))
	}
	return nil
}

// AuthorizeApproval checks the `approve` permission on the signer of the
// request at key (seed 004: approving is separate from signing).
func (e *Engine) AuthorizeApproval(ctx context.Context, caller Caller, cr *api.CertificateRequest) error {
	id := callerIdentity(caller)
	for _, g := range id.Groups {
		if g == SuperuserGroup {
			return nil
		}
	}
	az, err := e.authorizer(ctx)
	if err != nil {
		return err
	}
	if ok, why := az.CanApprove(id, cr.Spec.IssuerRef, cr.Namespace); !ok {
		return errs403(fmt.Errorf("%s may not approve or deny requests for signer %v: %s", id.Username,
			rbac.SignerResourceNames(cr.Spec.IssuerRef, cr.Namespace)[0], why))
	}
	return nil
}

// RequestForApproval reads the CertificateRequest at key for caller to
// approve or deny it, after AuthorizeApproval. A request that does not
// exist is reported as not found only to callers who may get requests in
// its namespace; everyone else gets the same forbidden answer as for a
// request they may not approve (the same message too), so approvals
// cannot probe which requests exist or which signer they name.
func (e *Engine) RequestForApproval(ctx context.Context, caller Caller, key api.Key) (*api.CertificateRequest, error) {
	if key.Kind != api.KindCertificateRequest {
		return nil, errs.Permanentf("approval applies to CertificateRequests, not %s", key.Kind)
	}
	// A caller who may not read the request learns nothing from the
	// answer: the same 403, with the same message, whether it exists or
	// not and whichever signer it names.
	canGet := e.Authorize(ctx, caller, "get", key) == nil
	generic := errs403(fmt.Errorf("%s may not approve or deny %s", callerIdentity(caller).Username, key))
	o, err := e.Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		if !canGet {
			return nil, generic
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	cr := o.(*api.CertificateRequest)
	if err := e.AuthorizeApproval(ctx, caller, cr); err != nil {
		if !canGet && errors.Is(err, ErrForbidden) {
			return nil, generic
		}
		return nil, err
	}
	return cr, nil
}

// SuperuserGroup bypasses authorization, as Kubernetes' system:masters.
// The local CLI user is a member unless it impersonates another identity.
const SuperuserGroup = "system:masters"

// ErrForbidden marks an authorization failure (the API answers 403).
var ErrForbidden = errors.New("forbidden")

func errs403(err error) error { return fmt.Errorf("%w: %w", ErrForbidden, err) }

func callerIdentity(c Caller) rbac.Identity {
	return rbac.Identity{Username: c.Username, UID: c.UID, Groups: c.Groups, Extra: c.Extra}.WithImplicitGroups()
}
