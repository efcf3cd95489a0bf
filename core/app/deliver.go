package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/repo"
)

// BatchQueue is a work queue that can send many keys in one call (SQS
// SendMessageBatch, a Pub/Sub publish batch).
type BatchQueue interface {
	ports.Queue
	EnqueueBatch(ctx context.Context, keys []api.Key, delay time.Duration) error
}

// Deliverer runs the keys a queue-driven cloud role receives (the worker
// and the signer functions), the same on every cloud: routing between the
// worker and the signer (docs/design/roles.md: the worker must not read CA keys,
// the signer must not approve), and the follow-ups of one delivery.
//
// Routing, decided per received key before any step runs, reading the
// record (which the kernel then reuses, kernel.Message.Loaded):
//   - a role that hands off (Role.HandsOff) sends to HandOff a
//     CertificateRequest that is approved, not denied and not final, whose
//     issuer exists and is of a type it hands off, and an Issuer or
//     ClusterIssuer with spec.ca (its readiness check reads the CA key pair);
//   - a CertificateSigningRequest goes to HandOff likewise when it is
//     approved, not final, names an issuer of a type handed off, and its
//     requester may reference that issuer (csrSignerWork);
//   - a role that takes only signer work (Role.SignerWorkOnly) takes
//     CertificateRequests, CertificateSigningRequests and CA issuers and
//     drops (acknowledges with a reason) anything else;
//   - everything else is reconciled here.
//
// Routing by state, not by who wrote last, cannot loop: a key goes to the
// signer only while it is the signer's work. A signer-only role sends the
// keys its writes wake to Queue, except the key it is handling: every
// write the signer makes leaves its request final (its owner is woken) or
// waiting with a nextRunAt, and an issuer it writes keeps its own recheck
// time, so that wake-up would only cost a worker invocation that hands the
// key straight back.
//
// Follow-ups (FollowUps > 0): every write wakes the written key and, when
// it cares, its owner; with one step per message an ACME issuance is some
// twenty messages. The keys woken at once while handling a message are run
// in the same invocation instead, one step each exactly as if they had
// come from the queue, up to FollowUps steps and while more than Reserve
// of the context's time is left; what remains is sent to Queue. Waits
// still go to the queue, so nothing sleeps. If the invocation dies with
// follow-ups not yet handled, they are lost like a message lost between a
// write and its enqueue (docs/design/one-step.md): the records' nextRunAt brings them
// back through the sweep.
type Deliverer struct {
	App *App
	// Queue is the worker queue: woken keys not run here go there.
	Queue BatchQueue
	// HandOff is the signer queue of a role that hands off.
	HandOff ports.Queue
	// FollowUps bounds the follow-up steps of one delivery (0: none).
	FollowUps int
	// Reserve is the context time follow-ups leave unused.
	Reserve time.Duration
	// Metrics counts hand-offs and follow-ups (optional).
	Metrics ports.Metrics
	// Log receives follow-up outcomes (optional).
	Log *slog.Logger
}

// Deliver runs one delivered key, then (with FollowUps) the keys its step
// wakes, and returns what to do with the message. A failure to send woken
// keys turns an acknowledged disposition into a retry: the message is
// handled again, and its step wakes the keys again.
func (d *Deliverer) Deliver(ctx context.Context, key api.Key, attempt int) kernel.Disposition {
	var fu *followUps
	if d.FollowUps > 0 && !d.App.Role.SignerWorkOnly {
		fu = &followUps{pending: map[api.Key]bool{}}
	}
	disp := d.route(ctx, key, attempt, d.Handle(ctx, key, attempt), fu)
	if fu == nil {
		return disp
	}
	n, err := d.runFollowUps(ctx, fu)
	if err != nil && disp.Ack {
		// Handle this message again: its follow-ups were not all sent.
		disp = kernel.Disposition{RetryAfter: kernel.RetryBackoff(attempt), Err: err}
	}
	if n > 0 && d.Log != nil {
		d.Log.Debug("follow-ups", "key", key.String(), "handled", n)
	}
	return disp
}

// DeliverOne runs one delivered key and sends the keys its step woke to
// Queue (no follow-ups), and returns what to do with the message.
func (d *Deliverer) DeliverOne(ctx context.Context, key api.Key, attempt int) kernel.Disposition {
	return d.route(ctx, key, attempt, d.Handle(ctx, key, attempt), nil)
}

// Handle runs one delivered key (routing first, see Deliverer) and
// returns what to do with the message; the keys its step woke are in
// Disposition.Woken, for the caller to route.
func (d *Deliverer) Handle(ctx context.Context, key api.Key, attempt int) kernel.Disposition {
	a := d.App
	if a.Kernel == nil {
		return kernel.Disposition{Ack: true, Err: fmt.Errorf("the %s role has no engine: %s dropped", a.Role.Name, key)}
	}
	m := kernel.Message{Key: key, Attempt: attempt}
	switch {
	case len(a.Role.HandsOff) > 0:
		toSigner, rec, err := d.signerWork(ctx, key)
		if err != nil {
			return retryDisposition(err, attempt)
		}
		if toSigner {
			if d.HandOff == nil {
				return kernel.Disposition{Ack: true, Err: errs.Permanentf("%s is the signer's work, but no signer queue is configured", key)}
			}
			if err := d.HandOff.Enqueue(ctx, key, 0); err != nil {
				return retryDisposition(fmt.Errorf("hand %s to the signer queue: %w", key, err), attempt)
			}
			d.inc("certfn_handoffs_total", "kind", key.Kind)
			return kernel.Disposition{Ack: true}
		}
		m.Loaded = rec
	case a.Role.SignerWorkOnly:
		switch key.Kind {
		case api.KindCertificateRequest:
			rec, err := a.Repo.Store().Get(ctx, key)
			if err != nil && !errors.Is(err, ports.ErrNotFound) {
				return retryDisposition(fmt.Errorf("read %s: %w", key, err), attempt)
			}
			if err == nil {
				if o, derr := repo.Decode(rec); derr == nil {
					if cr, ok := o.(*api.CertificateRequest); ok && cr.IsFinal() {
						return d.finalRequest(ctx, key, attempt)
					}
				}
				m.Loaded = &rec
			}
		case api.KindIssuer, api.KindClusterIssuer:
			ok, rec, err := d.signerWork(ctx, key)
			if err != nil {
				return retryDisposition(err, attempt)
			}
			if !ok {
				return kernel.Disposition{Ack: true, Err: fmt.Errorf("signer: %s is not a CA issuer (or is gone): dropped, the worker handles it", key)}
			}
			m.Loaded = rec
		case api.KindCertificateSigningRequest:
			// Reconciled here, final or not: a CSR has no owner to wake.
		default:
			return kernel.Disposition{Ack: true, Err: fmt.Errorf("signer: %s: only CertificateRequests, CertificateSigningRequests and CA issuers are the signer's work: dropped", key)}
		}
	}
	return a.Kernel.Handle(ctx, m)
}

// finalRequest handles, in a signer-only role, a request that is already
// final: a second delivery of its message (SQS delivers at least once), or
// a redelivery after an invocation died between the final write and the
// wake-up of the Certificate. The kernel would then wake the Certificate
// if it still issues, which takes reading it — a read the signer may not
// make (infra/terraform/aws/iam.tf: CertificateRequest and issuer items
// only), so every such delivery failed until the dead-letter queue. The
// request goes to the worker queue instead: the worker, which may read
// the Certificate, reconciles the final request and wakes its owner only
// if that still issues. It is no longer the signer's work, so the worker
// does not hand it back.
func (d *Deliverer) finalRequest(ctx context.Context, key api.Key, attempt int) kernel.Disposition {
	if d.Queue == nil {
		return kernel.Disposition{Ack: true, Err: fmt.Errorf("signer: %s is final and no worker queue is configured: dropped", key)}
	}
	if err := d.Queue.Enqueue(ctx, key, 0); err != nil {
		return retryDisposition(fmt.Errorf("send final %s to the worker queue: %w", key, err), attempt)
	}
	d.inc("certfn_final_requests_to_worker_total")
	return kernel.Disposition{Ack: true}
}

// signerWork reports whether key is the signer's work (see Deliverer) and
// returns the record it read (nil when missing or not read).
func (d *Deliverer) signerWork(ctx context.Context, key api.Key) (bool, *ports.Record, error) {
	switch key.Kind {
	case api.KindCertificateRequest, api.KindIssuer, api.KindClusterIssuer, api.KindCertificateSigningRequest:
	default:
		return false, nil, nil
	}
	rp := d.App.Repo
	rec, err := rp.Store().Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("read %s: %w", key, err)
	}
	obj, err := repo.Decode(rec)
	if err != nil {
		return false, &rec, nil // the kernel reports it
	}
	switch o := obj.(type) {
	case api.GenericIssuer:
		return o.GetSpec().CA != nil, &rec, nil
	case *api.CertificateSigningRequest:
		ok, err := d.csrSignerWork(ctx, o)
		if err != nil {
			return false, nil, fmt.Errorf("route %s: %w", key, err)
		}
		return ok, &rec, nil
	case *api.CertificateRequest:
		conds := o.Status.Conditions
		if !api.IsTrue(conds, api.CertificateRequestConditionApproved) || api.IsTrue(conds, api.CertificateRequestConditionDenied) || o.IsFinal() {
			return false, &rec, nil
		}
		ik, _, ok := rp.Issuers().Resolve(o.Namespace, o.Spec.IssuerRef)
		if !ok {
			return false, &rec, nil
		}
		irec, err := rp.Store().Get(ctx, ik)
		if errors.Is(err, ports.ErrNotFound) {
			return false, &rec, nil // the worker records "issuer not found"
		}
		if err != nil {
			return false, nil, fmt.Errorf("read %s of %s: %w", ik, key, err)
		}
		iobj, err := repo.Decode(irec)
		if err != nil {
			return false, &rec, nil
		}
		return d.App.Role.handsOff(certificaterequests.IssuerType(iobj.(api.GenericIssuer).GetSpec())) ||
			(d.App.Role.SignerWorkOnly && d.App.Role.signs(certificaterequests.IssuerType(iobj.(api.GenericIssuer).GetSpec()))), &rec, nil
	}
	return false, &rec, nil
}

// route delivers the keys the step of key woke (disp.Woken): as follow-ups
// when fu is set, else to Queue (a signer-only role leaves out key itself).
func (d *Deliverer) route(ctx context.Context, key api.Key, attempt int, disp kernel.Disposition, fu *followUps) kernel.Disposition {
	if fu != nil {
		for _, k := range disp.Woken {
			fu.add(k)
		}
		return disp
	}
	var out []api.Key
	for _, k := range disp.Woken {
		if k != key || !d.App.Role.SignerWorkOnly {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return disp
	}
	if err := d.Queue.EnqueueBatch(ctx, out, 0); err != nil && disp.Ack {
		return kernel.Disposition{RetryAfter: kernel.RetryBackoff(attempt), Err: fmt.Errorf("send %d woken keys to the worker queue: %w", len(out), err)}
	}
	return disp
}

// runFollowUps handles fu's keys (collecting the keys they wake in turn)
// within the step and time budget, and sends what is left to Queue. It
// returns how many it handled; an error means keys could not be sent.
func (d *Deliverer) runFollowUps(ctx context.Context, fu *followUps) (int, error) {
	steps := 0
	for {
		k, ok := fu.pop()
		if !ok {
			return steps, nil
		}
		if steps >= d.FollowUps || d.lowOnTime(ctx) {
			rest := append([]api.Key{k}, fu.drain()...)
			if err := d.Queue.EnqueueBatch(ctx, rest, 0); err != nil {
				return steps, fmt.Errorf("send %d follow-ups to the worker queue: %w", len(rest), err)
			}
			return steps, nil
		}
		steps++
		d.inc("certfn_follow_ups_total")
		disp := d.route(ctx, k, 1, d.Handle(ctx, k, 1), fu)
		switch {
		case disp.Ack && disp.Err != nil:
			d.logWarn("follow-up acknowledged without retry", "key", k.String(), "err", disp.Err)
		case !disp.Ack:
			d.logWarn("follow-up will retry", "key", k.String(), "retryAfter", disp.RetryAfter.String(), "err", disp.Err)
			// Straight to the queue: a retry is never a follow-up.
			if err := d.Queue.Enqueue(ctx, k, disp.RetryAfter); err != nil {
				return steps, fmt.Errorf("send follow-up %s back to the worker queue: %w", k, err)
			}
		}
	}
}

// lowOnTime reports whether ctx has less than Reserve left. Wall-clock
// time is right here: it measures the invocation's own deadline.
func (d *Deliverer) lowOnTime(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < d.Reserve
}

func (d *Deliverer) inc(name string, labels ...string) {
	if d.Metrics != nil {
		d.Metrics.Inc(name, labels...)
	}
}

func (d *Deliverer) logWarn(msg string, args ...any) {
	if d.Log != nil {
		d.Log.Warn(msg, args...)
	}
}

// retryDisposition is the disposition of a routing failure: acknowledged
// when permanent, else retried with the kernel's backoff.
func retryDisposition(err error, attempt int) kernel.Disposition {
	if errs.IsPermanent(err) {
		return kernel.Disposition{Ack: true, Err: err}
	}
	return kernel.Disposition{RetryAfter: kernel.RetryBackoff(attempt), Err: err}
}

// followUps is the FIFO of keys woken while handling one message (each
// key at most once while it waits).
type followUps struct {
	mu      sync.Mutex
	keys    []api.Key
	pending map[api.Key]bool
}

func (f *followUps) add(k api.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending[k] {
		return
	}
	f.pending[k] = true
	f.keys = append(f.keys, k)
}

func (f *followUps) pop() (api.Key, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.keys) == 0 {
		return api.Key{}, false
	}
	k := f.keys[0]
	f.keys = f.keys[1:]
	delete(f.pending, k)
	return k, true
}

func (f *followUps) drain() []api.Key {
	f.mu.Lock()
	defer f.mu.Unlock()
	ks := f.keys
	f.keys, f.pending = nil, map[api.Key]bool{}
	return ks
}
