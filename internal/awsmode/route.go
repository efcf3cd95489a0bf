package awsmode

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/certfn/certfn/adapters/aws/sqsq"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/engine"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/requests"
)

// Routing between the worker and the signer (DESIGN.md §4: the worker must
// not read CA keys, the signer must not approve).
//
// The worker decides per received key, before any step runs, reading the
// record (which the engine then reuses: engine.Message.Loaded, so nothing
// is read twice):
//
//   - a CertificateRequest that is approved, not denied and not final, whose
//     issuer exists and is of type ca or selfSigned, is sent to the signer
//     queue (one extra read: the issuer);
//   - an Issuer or ClusterIssuer with spec.ca is sent to the signer queue
//     (its readiness check reads the CA key pair);
//   - everything else is reconciled by the worker.
//
// Routing by state, not by who wrote last, cannot loop: a key goes to the
// signer only while it is the signer's work. The signer sends the keys its
// writes wake (owners, and the requests an issuer was holding back) to the
// worker queue, except the key it is handling: every write the signer
// makes leaves its request final (its owner is woken) or waiting with a
// nextRunAt, and an issuer it writes keeps its own recheck time, so that
// wake-up would only cost a worker invocation that hands the key straight
// back. Keys that reach the worker queue by the scheduler's sweep or the
// API are routed the same way, so no other function needs to know about
// the signer queue.

// forSigner reports whether key is the signer's work (see above) and
// returns the record it read (nil when missing or not read).
func (rt *Runtime) forSigner(ctx context.Context, key api.Key) (bool, *ports.Record, error) {
	switch key.Kind {
	case api.KindCertificateRequest, api.KindIssuer, api.KindClusterIssuer:
	default:
		return false, nil, nil
	}
	rec, err := rt.store.Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("read %s: %w", key, err)
	}
	obj, err := rt.Engine.Decode(rec)
	if err != nil {
		return false, &rec, nil // the engine reports it
	}
	switch o := obj.(type) {
	case api.GenericIssuer:
		return o.GetSpec().CA != nil, &rec, nil
	case *api.CertificateRequest:
		conds := o.Status.Conditions
		if !api.IsTrue(conds, api.CertificateRequestConditionApproved) || api.IsTrue(conds, api.CertificateRequestConditionDenied) || o.IsFinal() {
			return false, &rec, nil
		}
		ik, _, ok := rt.Engine.Issuers().Resolve(o.Namespace, o.Spec.IssuerRef)
		if !ok {
			return false, &rec, nil
		}
		irec, err := rt.store.Get(ctx, ik)
		if errors.Is(err, ports.ErrNotFound) {
			return false, &rec, nil // the worker records "issuer not found"
		}
		if err != nil {
			return false, nil, fmt.Errorf("read %s of %s: %w", ik, key, err)
		}
		iobj, err := rt.Engine.Decode(irec)
		if err != nil {
			return false, &rec, nil
		}
		typ := requests.IssuerType(iobj.(api.GenericIssuer).GetSpec())
		return typ == "ca" || typ == "selfSigned", &rec, nil
	}
	return false, &rec, nil
}

// batchQueue is the scheduler's engine queue: the sweep's immediate
// enqueues are collected and sent by Flush with SendMessageBatch (10 keys
// per request instead of one); delayed ones are sent at once.
type batchQueue struct {
	q    *sqsq.Queue
	mu   sync.Mutex
	keys []api.Key
}

// Enqueue implements ports.Queue.
func (b *batchQueue) Enqueue(ctx context.Context, key api.Key, delay time.Duration) error {
	if delay > 0 {
		return b.q.Enqueue(ctx, key, delay)
	}
	b.mu.Lock()
	b.keys = append(b.keys, key)
	b.mu.Unlock()
	return nil
}

// Flush sends the collected keys and returns how many it tried to send. A
// key that was not sent stays due and is found by the next sweep.
func (b *batchQueue) Flush(ctx context.Context) (int, error) {
	b.mu.Lock()
	keys := b.keys
	b.keys = nil
	b.mu.Unlock()
	if len(keys) == 0 {
		return 0, nil
	}
	return len(keys), b.q.EnqueueBatch(ctx, keys, 0)
}

// Handle runs one received key for the worker or the signer, sends the
// keys its step woke to the worker queue (see route) and returns what to
// do with the message.
func (rt *Runtime) Handle(ctx context.Context, key api.Key, attempt int) engine.Disposition {
	return rt.route(ctx, key, attempt, rt.handle(ctx, key, attempt), nil)
}

// handle runs one received key for the worker or the signer and returns
// what to do with the message; the keys its step woke are in
// Disposition.Woken, for the caller to route. The worker first routes the
// key itself (see forSigner); the signer takes CertificateRequests and CA
// issuers only and drops (acknowledges with a reason) anything else.
func (rt *Runtime) handle(ctx context.Context, key api.Key, attempt int) engine.Disposition {
	if rt.Engine == nil {
		return engine.Disposition{Ack: true, Err: fmt.Errorf("%s: %w", rt.Role, errNoEngine)}
	}
	m := engine.Message{Key: key, Attempt: attempt}
	switch rt.Role {
	case RoleWorker:
		toSigner, rec, err := rt.forSigner(ctx, key)
		if err != nil {
			return retryDisposition(err, attempt)
		}
		if toSigner {
			if err := rt.SignerQueue.Enqueue(ctx, key, 0); err != nil {
				return retryDisposition(fmt.Errorf("hand %s to the signer queue: %w", key, err), attempt)
			}
			rt.inc("certfn_handoffs_total", "kind", key.Kind)
			return engine.Disposition{Ack: true}
		}
		m.Loaded = rec
	case RoleSigner:
		switch key.Kind {
		case api.KindCertificateRequest:
		case api.KindIssuer, api.KindClusterIssuer:
			ok, rec, err := rt.forSigner(ctx, key)
			if err != nil {
				return retryDisposition(err, attempt)
			}
			if !ok {
				return engine.Disposition{Ack: true, Err: fmt.Errorf("signer: %s is not a CA issuer (or is gone): dropped, the worker handles it", key)}
			}
			m.Loaded = rec
		default:
			return engine.Disposition{Ack: true, Err: fmt.Errorf("signer: %s: only CertificateRequests and CA issuers are the signer's work: dropped", key)}
		}
	default:
		return engine.Disposition{Ack: true, Err: fmt.Errorf("the %s function consumes no queue: %s dropped", rt.Role, key)}
	}
	return rt.Engine.Handle(ctx, m)
}

// sendWoken sends the keys a step of key woke to the worker queue, minus
// key itself (the signer's rule, see above; the worker runs its woken keys
// as follow-ups instead).
func (rt *Runtime) sendWoken(ctx context.Context, key api.Key, woken []api.Key) error {
	var out []api.Key
	for _, k := range woken {
		if k != key || rt.Role != RoleSigner {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil
	}
	if err := rt.Queue.EnqueueBatch(ctx, out, 0); err != nil {
		return fmt.Errorf("send %d woken keys to the worker queue: %w", len(out), err)
	}
	return nil
}

// retryDisposition is the disposition of a routing failure: acknowledged
// when permanent, else retried with the engine's backoff.
func retryDisposition(err error, attempt int) engine.Disposition {
	if errs.IsPermanent(err) {
		return engine.Disposition{Ack: true, Err: err}
	}
	return engine.Disposition{RetryAfter: engine.RetryBackoff(attempt), Err: err}
}

func (rt *Runtime) inc(name string, labels ...string) {
	if rt.metrics != nil {
		rt.metrics.Inc(name, labels...)
	}
}
