package policy

import (
	"context"
	"errors"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
)

// Pending finds the requests a change of a decision's inputs may decide
// now (core/repo.Repo is one).
type Pending interface {
	// PendingRequests returns the CertificateRequests not yet approved or
	// denied and not final.
	PendingRequests(ctx context.Context) ([]api.Key, error)
	// PendingCSRs returns the CertificateSigningRequests of certfn's
	// signers that are not final.
	PendingCSRs(ctx context.Context) ([]api.Key, error)
}

// Controller is the controller of CertificateRequestPolicies: it keeps a
// policy's Ready condition (a policy whose CEL or patterns do not compile
// is not Ready and never approves) and wakes the pending requests it may
// now decide.
type Controller struct {
	ev      *Evaluator
	pending Pending
}

// NewController returns the policy controller over ev, the evaluator that
// decides (its compiled policies are what Ready says).
func NewController(ev *Evaluator, pending Pending) (*Controller, error) {
	if ev == nil {
		// The one evaluator (with its plugins) is built by the composition
		// root, core/app.Build; a default here would be a second wiring.
		return nil, errors.New("policy controller: Evaluator is required")
	}
	return &Controller{ev: ev, pending: pending}, nil
}

var _ kernel.Controller = (*Controller)(nil)

// Reconcile implements kernel.Controller: one write of the Ready condition
// when it changed, else the pending requests are woken.
func (c *Controller) Reconcile(ctx context.Context, o kernel.Objects, rec ports.Record) error {
	p, err := kernel.DecodeAs[*api.CertificateRequestPolicy](o, rec)
	if err != nil {
		return err
	}
	if api.SetCondition(&p.Status.Conditions, c.ev.ReadyCondition(p), o.Now()) {
		_, err := o.UpdateObject(ctx, p, rec.Version, time.Time{})
		return err
	}
	if err := wakePending(ctx, o, c.pending); err != nil {
		return err
	}
	return o.Settle(ctx, rec, time.Time{})
}

// InputController is the controller of the other objects a decision
// reads: Roles, ClusterRoles, RoleBindings and ClusterRoleBindings (who
// may `use` which policy) and Namespaces (the labels a policy selects
// on). A change of one has pending requests decided again; the objects
// themselves have no status.
type InputController struct{ pending Pending }

// NewInputController returns the controller of a decision's other inputs.
func NewInputController(pending Pending) *InputController { return &InputController{pending: pending} }

var _ kernel.Controller = (*InputController)(nil)

// Reconcile implements kernel.Controller: it wakes the pending requests
// and writes nothing.
func (c *InputController) Reconcile(ctx context.Context, o kernel.Objects, rec ports.Record) error {
	if err := wakePending(ctx, o, c.pending); err != nil {
		return err
	}
	return o.Settle(ctx, rec, time.Time{})
}

// InputKinds are the kinds of InputController.
var InputKinds = []string{api.KindRole, api.KindClusterRole, api.KindRoleBinding, api.KindClusterRoleBinding, api.KindNamespace}

// wakePending enqueues every pending CertificateRequest, then every
// pending CertificateSigningRequest (one List each).
func wakePending(ctx context.Context, o kernel.Objects, p Pending) error {
	for _, list := range []func(context.Context) ([]api.Key, error){p.PendingRequests, p.PendingCSRs} {
		keys, err := list(ctx)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := o.Enqueue(ctx, k, 0); err != nil {
				return err
			}
		}
	}
	return nil
}
