package certificaterequests

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/signers"
	"github.com/certfn/certfn/core/step"
)

// steps are the approver, then the signer (docs/design/certificates-api.md).
var steps = []step.Func[*Env, *State]{ApprovalStep, SigningStep}

// stepNames name steps in debug logs.
var stepNames = []string{"approval", "signing"}

// Reads are the CertificateRequest controller's reads of other objects
// (core/repo.Repo is one).
type Reads interface {
	Issuer(ctx context.Context, namespace string, ref api.IssuerReference) (api.GenericIssuer, string, bool, error)
	RequestsIssuedSince(ctx context.Context, namespace string, since time.Time) (int, time.Time, error)
}

// Config configures the CertificateRequest controller.
type Config struct {
	// Approver decides requests (required).
	Approver Approver
	// Signers by issuer type ("selfSigned", "ca", "acme"). A deployment
	// whose worker must not read CA keys leaves "ca" out and runs a
	// signer role.
	Signers map[string]signers.Signer
	// Reads are its reads of other objects (required).
	Reads Reads
	// WaitPoll is how long a request waiting on its issuer waits before
	// looking again by itself (default 10 minutes).
	WaitPoll time.Duration
	// IssuancesPerHourPerNamespace is the issuance quota (0: unlimited;
	// see Env.IssuancesPerHour).
	IssuancesPerHourPerNamespace int
}

// Controller reconciles CertificateRequests: approval, then
// signing, one write per call.
type Controller struct{ cfg Config }

// NewController checks cfg and returns the CertificateRequest controller.
func NewController(cfg Config) (*Controller, error) {
	switch {
	case cfg.Approver == nil:
		return nil, errors.New("request controller: Approver is required")
	case cfg.Reads == nil:
		return nil, errors.New("request controller: Reads is required")
	case cfg.IssuancesPerHourPerNamespace < 0:
		return nil, fmt.Errorf("request controller: IssuancesPerHourPerNamespace is %d: want 0 (unlimited) or more", cfg.IssuancesPerHourPerNamespace)
	}
	if cfg.WaitPoll <= 0 {
		cfg.WaitPoll = 10 * time.Minute
	}
	return &Controller{cfg: cfg}, nil
}

var _ kernel.Controller = (*Controller)(nil)

// Reconcile implements kernel.Controller.
func (c *Controller) Reconcile(ctx context.Context, o kernel.Objects, rec ports.Record) error {
	cr, err := kernel.DecodeAs[*api.CertificateRequest](o, rec)
	if err != nil {
		return err
	}
	st := &State{CR: cr, Version: rec.Version, NextRunAt: rec.NextRunAt, Now: o.Now()}
	st.Events = func(n kernel.Note) { _ = o.RecordEvent(ctx, rec.Key, n, kernel.EventRepeat) }
	env := &Env{Clock: o, Writer: writer{o}, Approver: c.cfg.Approver, Issuers: IssuerFunc(c.cfg.Reads.Issuer),
		Signers: c.cfg.Signers, Objects: o, Metrics: o.Metrics(), WaitPoll: c.cfg.WaitPoll}
	if n := c.cfg.IssuancesPerHourPerNamespace; n > 0 {
		env.IssuancesPerHour, env.Quota = n, quotaFunc(c.cfg.Reads.RequestsIssuedSince)
	}
	res, err := step.Run(ctx, env, st, steps, stepNames)
	if err != nil || res.Wrote {
		return err
	}
	o.Explain(res.Why)
	rec.Version = st.Version
	return o.Settle(ctx, rec, res.Want)
}

type writer struct{ o kernel.Objects }

func (w writer) UpdateRequest(ctx context.Context, st *State, next time.Time) error {
	v, err := w.o.UpdateObject(ctx, st.CR, st.Version, next)
	if err != nil {
		return err
	}
	st.Version, st.NextRunAt = v, next
	return nil
}

// IssuerFunc is a function as Issuers.
type IssuerFunc func(ctx context.Context, namespace string, ref api.IssuerReference) (api.GenericIssuer, string, bool, error)

func (f IssuerFunc) Get(ctx context.Context, namespace string, ref api.IssuerReference) (api.GenericIssuer, string, bool, error) {
	return f(ctx, namespace, ref)
}

// quotaFunc is a function as Quota.
type quotaFunc func(ctx context.Context, namespace string, since time.Time) (int, time.Time, error)

func (f quotaFunc) IssuedSince(ctx context.Context, namespace string, since time.Time) (int, time.Time, error) {
	return f(ctx, namespace, since)
}

// Unfinished is the CertificateRequests' kernel.UnfinishedFunc: the
// requests that are not final.
func Unfinished(ctx context.Context, l *kernel.Listing) (first, rest []api.Key, err error) {
	reqs, err := l.Objects(ctx, api.KindCertificateRequest)
	if err != nil {
		return nil, nil, err
	}
	for _, it := range reqs {
		if !it.Obj.(*api.CertificateRequest).IsFinal() {
			rest = append(rest, it.Rec.Key)
		}
	}
	return nil, rest, nil
}
