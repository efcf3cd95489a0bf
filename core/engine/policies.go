package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// reconcilePolicy keeps a CertificateRequestPolicy's Ready condition (a
// policy whose CEL or patterns do not compile is not Ready and never
// approves) and wakes the pending requests it may now decide.
func (e *run) reconcilePolicy(ctx context.Context, rec ports.Record) error {
	obj, err := decode(rec)
	if err != nil {
		return err
	}
	p := obj.(*api.CertificateRequestPolicy)
	c := e.cfg.Evaluator.ReadyCondition(p)
	if api.SetCondition(&p.Status.Conditions, c, e.cfg.Clock.Now()) {
		_, err := e.update(ctx, p, rec.Version, time.Time{})
		return err
	}
	if err := e.wakePendingRequests(ctx); err != nil {
		return err
	}
	return e.settle(ctx, rec, time.Time{})
}

// wakePendingRequests enqueues every request not yet approved or denied.
func (e *run) wakePendingRequests(ctx context.Context) error {
	recs, err := e.cfg.Store.List(ctx, ports.ListOptions{Kind: api.KindCertificateRequest})
	if err != nil {
		return fmt.Errorf("list pending requests: %w", err)
	}
	for _, r := range recs {
		o, err := decode(r)
		if err != nil {
			return err
		}
		cr := o.(*api.CertificateRequest)
		if cr.IsFinal() || api.FindCondition(cr.Status.Conditions, api.CertificateRequestConditionApproved) != nil ||
			api.FindCondition(cr.Status.Conditions, api.CertificateRequestConditionDenied) != nil {
			continue
		}
		if err := e.enqueue(ctx, r.Key, 0); err != nil {
			return err
		}
	}
	return e.wakePendingCSRs(ctx)
}
