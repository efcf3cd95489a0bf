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
	"github.com/certfn/certfn/core/signers"
)

// Routing between the worker and the signer (DESIGN.md §4: the worker must
// not read CA keys, the signer must not approve).
//
// The worker decides per received key, before any step runs, reading the
// record (which the engine then reuses, so nothing is read twice):
//
//   - a CertificateRequest that is approved, not denied and not final, whose
//     issuer exists and is of type ca or selfSigned, is sent to the signer
//     queue (one extra read: the issuer);
//   - an Issuer or ClusterIssuer with spec.ca is sent to the signer queue
//     (its readiness check reads the CA key pair);
//   - everything else is reconciled by the worker.
//
// Routing by state, not by who wrote last, cannot loop: a key goes to the
// signer only while it is the signer's work. The signer wakes owners
// (Certificates) and the requests an issuer was holding back on the worker
// queue; it does not send the key it is handling back (see signerOutQueue).
// Keys that reach the worker queue by the scheduler's sweep or the API are
// routed the same way, so no other function needs to know about the
// signer queue.

// peekKey is the context key of the record the router already read.
type peekKey struct{}

// peeked is one record read by the router, handed to the engine's first
// Get of that key.
type peeked struct {
	rec  ports.Record
	used bool
}

func withPeeked(ctx context.Context, rec ports.Record) context.Context {
	return context.WithValue(ctx, peekKey{}, &peeked{rec: rec})
}

// peekStore serves the first Get of the key the router read for this
// message from that read; every other call goes to the store. The engine
// handles one message per context, sequentially, so the peeked record is
// used by one goroutine.
type peekStore struct{ ports.Store }

// Get implements ports.Store.
func (s peekStore) Get(ctx context.Context, key api.Key) (ports.Record, error) {
	if p, ok := ctx.Value(peekKey{}).(*peeked); ok && !p.used && p.rec.Key == key {
		p.used = true
		return p.rec, nil
	}
	return s.Store.Get(ctx, key)
}

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
		ref := o.Spec.IssuerRef
		if ref.Group != "" && ref.Group != api.CertManagerGroup {
			return false, &rec, nil
		}
		ik := api.Key{Kind: api.KindIssuer, Namespace: o.Namespace, Name: ref.Name}
		switch ref.Kind {
		case "", api.KindIssuer:
		case api.KindClusterIssuer:
			ik = api.Key{Kind: api.KindClusterIssuer, Name: ref.Name}
		default:
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

// currentKey is the context key of the key a function is handling.
type currentKey struct{}

// signerOutQueue is the signer's engine queue: the worker queue, minus the
// immediate wake-up of the key being handled. Every write the signer makes
// leaves its request final (its owner is woken separately) or waiting with
// a nextRunAt (found again by the scheduler or a delayed message), and an
// issuer it writes keeps its own recheck time, so that wake-up would only
// cost a worker invocation that hands the key straight back.
type signerOutQueue struct{ q ports.Queue }

// Enqueue implements ports.Queue.
func (s signerOutQueue) Enqueue(ctx context.Context, key api.Key, delay time.Duration) error {
	if cur, ok := ctx.Value(currentKey{}).(api.Key); ok && delay <= 0 && cur == key {
		return nil
	}
	return s.q.Enqueue(ctx, key, delay)
}

// handoff is the worker's signer for the ca and selfSigned issuer types.
// The worker holds no CA key: the router normally sends such approved
// requests to the signer queue before any step runs, so the signing step
// reaches handoff only if the request or its issuer changed in between.
// It then sends the request to the signer queue and leaves it Pending with
// a fixed message (written once).
type handoff struct{ q ports.Queue }

// HandoffMessage is the Ready=False/Pending message of a request handed to
// the signer function by the signing step.
const HandoffMessage = "Waiting for the signer function"

// Sign implements signers.Signer.
func (h *handoff) Sign(ctx context.Context, req signers.Request) (signers.Result, error) {
	key := api.Key{Kind: api.KindCertificateRequest, Namespace: req.CR.Namespace, Name: req.CR.Name}
	if h.q == nil {
		return signers.Result{}, errs.Permanentf("no signer queue is configured (%s)", EnvSignerQueueURL)
	}
	if err := h.q.Enqueue(ctx, key, 0); err != nil {
		return signers.Result{}, fmt.Errorf("hand %s to the signer queue: %w", key, err)
	}
	return signers.Result{}, signers.Pending("%s", HandoffMessage)
}

// refuseApprover is the signer's approver: the signer function never
// approves (seed 004: approver and signer are separate actors). A request
// without a decision that reaches it is acknowledged with this error; the
// worker decides it.
type refuseApprover struct{}

// Decide implements requests.Approver.
func (refuseApprover) Decide(_ context.Context, cr *api.CertificateRequest) (requests.Decision, error) {
	return requests.Decision{}, errs.Permanentf("the signer function never approves: CertificateRequest %s/%s has no approval decision yet (the worker makes it)", cr.Namespace, cr.Name)
}

// denySecrets is the secret store of roles that must not read secrets
// (api, scheduler): every call fails permanently, naming the secret (never
// a value).
type denySecrets struct{ role Role }

func (d denySecrets) err(op, ns, name string) error {
	return errs.Permanentf("%s function: %s secret %s/%s: the secret store is not part of this role (DESIGN.md section 4)", d.role, op, ns, name)
}

// Get implements ports.SecretStore.
func (d denySecrets) Get(_ context.Context, ns, name string) (ports.Secret, error) {
	return ports.Secret{}, d.err("get", ns, name)
}

// Create implements ports.SecretStore.
func (d denySecrets) Create(_ context.Context, s ports.Secret) error {
	return d.err("create", s.Namespace, s.Name)
}

// Put implements ports.SecretStore.
func (d denySecrets) Put(_ context.Context, s ports.Secret) error {
	return d.err("put", s.Namespace, s.Name)
}

// Delete implements ports.SecretStore.
func (d denySecrets) Delete(_ context.Context, ns, name string) error {
	return d.err("delete", ns, name)
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

// Handle runs one received key for the worker or the signer and returns
// what to do with the message. The worker first routes (see forSigner);
// the signer takes CertificateRequests and CA issuers only and drops
// (acknowledges with a reason) anything else.
func (rt *Runtime) Handle(ctx context.Context, key api.Key, attempt int) engine.Disposition {
	if rt.Engine == nil {
		return engine.Disposition{Ack: true, Err: fmt.Errorf("%s: %w", rt.Role, errNoEngine)}
	}
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
		if rec != nil {
			ctx = withPeeked(ctx, *rec)
		}
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
			ctx = withPeeked(ctx, *rec)
		default:
			return engine.Disposition{Ack: true, Err: fmt.Errorf("signer: %s: only CertificateRequests and CA issuers are the signer's work: dropped", key)}
		}
		ctx = context.WithValue(ctx, currentKey{}, key)
	default:
		return engine.Disposition{Ack: true, Err: fmt.Errorf("the %s function consumes no queue: %s dropped", rt.Role, key)}
	}
	return rt.Engine.Handle(ctx, key.String(), attempt)
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
