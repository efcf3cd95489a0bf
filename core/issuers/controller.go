package issuers

import (
	"context"
	"errors"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/step"
)

// Waiting finds what waits for an issuer (core/repo.Repo is one).
type Waiting interface {
	// RequestsWaitingFor returns the CertificateRequests that reference
	// iss and are not final.
	RequestsWaitingFor(ctx context.Context, iss api.GenericIssuer) ([]api.Key, error)
	// PendingCSRs returns the CertificateSigningRequests of certfn's
	// signers that are not final.
	PendingCSRs(ctx context.Context) ([]api.Key, error)
}

// Config configures the Issuer and ClusterIssuer controller.
type Config struct {
	// Secrets holds the CA key pairs (required).
	Secrets ports.SecretStore
	// Issuers is the deployment's issuer rule (where an issuer's secrets
	// live).
	Issuers api.IssuerScope
	// Waiting finds the requests an issuer that is Ready wakes (required).
	Waiting Waiting
	// WaitPoll is how long an issuer that is not Ready waits before
	// looking again by itself (default 10 minutes).
	WaitPoll time.Duration
	// ACMEReady is passed to the step (see Env).
	ACMEReady func(ctx context.Context, st *State) (bool, string, string, error)
}

// Controller reconciles Issuers and ClusterIssuers: one run of Step.
type Controller struct{ cfg Config }

// NewController checks cfg and returns the issuer controller.
func NewController(cfg Config) (*Controller, error) {
	switch {
	case cfg.Secrets == nil:
		return nil, errors.New("issuer controller: Secrets is required")
	case cfg.Waiting == nil:
		return nil, errors.New("issuer controller: Waiting is required")
	}
	if cfg.WaitPoll <= 0 {
		cfg.WaitPoll = 10 * time.Minute
	}
	return &Controller{cfg: cfg}, nil
}

// Config returns the effective configuration.
func (c *Controller) Config() Config { return c.cfg }

var _ kernel.Controller = (*Controller)(nil)

var (
	steps     = []step.Func[*Env, *State]{Step}
	stepNames = []string{"ready"}
)

// Reconcile implements kernel.Controller.
func (c *Controller) Reconcile(ctx context.Context, o kernel.Objects, rec ports.Record) error {
	iss, err := kernel.DecodeAs[api.GenericIssuer](o, rec)
	if err != nil {
		return err
	}
	st := &State{Issuer: iss, Version: rec.Version, NextRunAt: rec.NextRunAt, Now: o.Now(),
		SecretNamespace: c.cfg.Issuers.SecretNamespace(iss)}
	st.Events = func(n kernel.Note) { _ = o.RecordEvent(ctx, rec.Key, n, kernel.EventRepeat) }
	env := &Env{Secrets: c.cfg.Secrets, Writer: writer{o: o, waiting: c.cfg.Waiting}, WaitPoll: c.cfg.WaitPoll, ACMEReady: c.cfg.ACMEReady}
	res, err := step.Run(ctx, env, st, steps, stepNames)
	if err != nil || res.Wrote {
		return err
	}
	o.Explain(res.Why)
	rec.Version = st.Version
	return o.Settle(ctx, rec, res.Want)
}

// writer is the step's Writer over the kernel's handle.
type writer struct {
	o       kernel.Objects
	waiting Waiting
}

func (w writer) UpdateIssuer(ctx context.Context, st *State, next time.Time) error {
	v, err := w.o.UpdateObject(ctx, st.Issuer, st.Version, next)
	if err != nil {
		return err
	}
	st.Version, st.NextRunAt = v, next
	return nil
}

// IssuerReady wakes the requests that reference the issuer and are not
// final, then the pending CertificateSigningRequests.
func (w writer) IssuerReady(ctx context.Context, st *State) error {
	for _, list := range []func(context.Context) ([]api.Key, error){
		func(ctx context.Context) ([]api.Key, error) { return w.waiting.RequestsWaitingFor(ctx, st.Issuer) },
		w.waiting.PendingCSRs,
	} {
		keys, err := list(ctx)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := w.o.Enqueue(ctx, k, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// Unfinished is the issuers' kernel.UnfinishedFunc: the Issuers and
// ClusterIssuers that are not Ready.
func Unfinished(ctx context.Context, l *kernel.Listing) (first, rest []api.Key, err error) {
	for _, kind := range []string{api.KindIssuer, api.KindClusterIssuer} {
		objs, err := l.Objects(ctx, kind)
		if err != nil {
			return nil, nil, err
		}
		for _, it := range objs {
			if !api.IsTrue(it.Obj.(api.GenericIssuer).GetStatus().Conditions, api.IssuerConditionReady) {
				rest = append(rest, it.Rec.Key)
			}
		}
	}
	return nil, rest, nil
}
