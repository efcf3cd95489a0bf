// Package engine turns a reconcile key into one step (DESIGN.md §3): it
// loads the resource, runs the controllers of its kind in order, stops after
// the first write (one step per invocation), and records when the resource
// wants to run again (nextRunAt in the due index, plus a delayed message for
// short waits). Every write is conditional on the stored version and
// enqueues the written key and its owner.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/issuers"
	"github.com/certfn/certfn/core/policy"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/requests"
	"github.com/certfn/certfn/core/signers"
)

// Identity is certfn's own requester identity (seed 004: requests created by
// the certificate steps carry it, and policies must be bound to it).
type Identity struct {
	Username string
	UID      string
	Groups   []string
}

// DefaultIdentity is the identity the certificate steps use unless
// configured: system:serviceaccount:cert-manager:cert-manager, as
// cert-manager's controller, so policies written for cert-manager apply.
var DefaultIdentity = func() Identity {
	id := rbac.Controller()
	return Identity{Username: id.Username, UID: id.UID, Groups: id.Groups}
}()

// Config wires the engine.
type Config struct {
	Store   ports.Store
	Secrets ports.SecretStore
	Queue   ports.Queue
	Clock   ports.Clock
	Metrics ports.Metrics
	// Approver overrides the default approver (tests). When nil, requests
	// are decided by AutoApprove, then CertificateRequestPolicies (seed 001).
	Approver requests.Approver
	// AutoApprove lists signer names approved without a policy, as
	// cert-manager's approveSignerNames ("clusterissuers.cert-manager.io/ca",
	// "issuers.cert-manager.io/<ns>.<name>", "issuers.cert-manager.io/*").
	AutoApprove []string
	// Evaluator evaluates policies (its plugins are registered by the
	// caller); nil builds one without plugins.
	Evaluator *policy.Evaluator
	// Signers by issuer type ("selfSigned", "ca"). A deployment whose
	// worker must not read CA keys leaves "ca" out and runs a signer role.
	Signers map[string]signers.Signer
	// ClusterResourceNamespace holds ClusterIssuer secrets (default "cert-manager").
	ClusterResourceNamespace string
	// Identity used on requests the certificate steps create.
	Identity Identity
	// WaitPoll is how long a resource waiting on another one waits before
	// looking again by itself (default 10 minutes).
	WaitPoll time.Duration
	// MaxQueueDelay is the longest delay the queue supports (SQS: 15 min);
	// longer waits rely on nextRunAt and the scheduler (default 15 minutes).
	MaxQueueDelay time.Duration
	// ResyncInterval bounds how long a Ready Certificate goes unchecked:
	// its next run is min(renewal time, now + ResyncInterval), so a deleted
	// or altered secret is noticed (default 24 h; local mode uses 1 h).
	ResyncInterval time.Duration
	// Handlers reconcile further kinds (the ACME issuer's Order and Challenge).
	Handlers map[string]Handler
	// ACMEReady is passed to the issuer step (see issuers.Env).
	ACMEReady func(ctx context.Context, st *issuers.State) (bool, string, string, error)
	// CertificateImporter imports key pairs of Certificates annotated
	// certfn.io/acm-import into AWS Certificate Manager (nil: such
	// Certificates get a condition saying it is not configured).
	CertificateImporter ports.CertificateImporter
}

// Engine runs reconciles. It is safe for concurrent use by many workers as
// long as one key is not handled twice at the same time (and even then,
// conditional writes keep state consistent).
type Engine struct {
	cfg Config
}

// New checks the configuration and returns an engine.
func New(cfg Config) (*Engine, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("engine: Store is required")
	case cfg.Secrets == nil:
		return nil, errors.New("engine: Secrets is required")
	case cfg.Queue == nil:
		return nil, errors.New("engine: Queue is required")
	case cfg.Clock == nil:
		return nil, errors.New("engine: Clock is required")
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	if cfg.Evaluator == nil {
		ev, err := policy.NewEvaluator(policy.Options{Metrics: cfg.Metrics})
		if err != nil {
			return nil, err
		}
		cfg.Evaluator = ev
	}
	e := &Engine{}
	if cfg.Approver == nil {
		ap, err := policy.NewApprover(cfg.Evaluator, cfg.AutoApprove)
		if err != nil {
			return nil, fmt.Errorf("engine: auto-approve list: %w", err)
		}
		cfg.Approver = &policyApprover{e: e, ap: ap}
	}
	if cfg.ClusterResourceNamespace == "" {
		cfg.ClusterResourceNamespace = "cert-manager"
	}
	if cfg.Identity.Username == "" {
		cfg.Identity = DefaultIdentity
	}
	if cfg.WaitPoll <= 0 {
		cfg.WaitPoll = 10 * time.Minute
	}
	if cfg.ResyncInterval <= 0 {
		cfg.ResyncInterval = 24 * time.Hour
	}
	if cfg.MaxQueueDelay <= 0 {
		cfg.MaxQueueDelay = 15 * time.Minute
	}
	e.cfg = cfg
	return e, nil
}

// Config returns the effective configuration.
func (e *Engine) Config() Config { return e.cfg }

type nopMetrics struct{}

func (nopMetrics) Inc(string, ...string)              {}
func (nopMetrics) Observe(string, float64, ...string) {}

// Reconcile runs one step for key. A missing resource is not an error (it
// was deleted). The returned error is classified by errs.Classify.
func (e *Engine) Reconcile(ctx context.Context, key api.Key) error {
	rec, err := e.cfg.Store.Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load %s: %w", key, err)
	}
	e.cfg.Metrics.Inc("certfn_reconciles_total", "kind", key.Kind)
	switch key.Kind {
	case api.KindCertificate:
		return e.reconcileCertificate(ctx, rec)
	case api.KindCertificateRequest:
		return e.reconcileRequest(ctx, rec)
	case api.KindIssuer, api.KindClusterIssuer:
		return e.reconcileIssuer(ctx, rec)
	case api.KindCertificateRequestPolicy:
		return e.reconcilePolicy(ctx, rec)
	}
	if h, ok := e.cfg.Handlers[key.Kind]; ok {
		return h.Reconcile(ctx, e, rec)
	}
	switch key.Kind {
	case api.KindRole, api.KindClusterRole, api.KindRoleBinding, api.KindClusterRoleBinding, api.KindNamespace:
		// Who may use which policy (or a namespace's labels) changed:
		// pending requests are decided again.
		if err := e.wakePendingRequests(ctx); err != nil {
			return err
		}
		return e.settle(ctx, rec, time.Time{})
	default:
		return e.settle(ctx, rec, time.Time{})
	}
}

// decode unmarshals a record into a fresh object of its kind and fills in
// resourceVersion.
func decode(rec ports.Record) (api.Object, error) {
	info, ok := api.KindInfoFor(rec.Key.Kind)
	if !ok {
		return nil, fmt.Errorf("stored record %s has unknown kind", rec.Key)
	}
	obj := info.New()
	if err := json.Unmarshal(rec.Data, obj); err != nil {
		return nil, fmt.Errorf("decode stored %s: %w", rec.Key, err)
	}
	obj.GetObjectMeta().ResourceVersion = strconv.FormatInt(rec.Version, 10)
	return obj, nil
}

func encode(obj api.Object) ([]byte, error) {
	m := obj.GetObjectMeta()
	rv := m.ResourceVersion
	m.ResourceVersion = ""
	b, err := json.Marshal(obj)
	m.ResourceVersion = rv
	return b, err
}

func ownerKey(obj api.Object) api.Key {
	m := obj.GetObjectMeta()
	if ref := m.ControllerOf(); ref != nil {
		return api.Key{Kind: ref.Kind, Namespace: m.Namespace, Name: ref.Name}
	}
	return api.Key{}
}

// update writes obj conditionally on version and enqueues it and its owner.
func (e *Engine) update(ctx context.Context, obj api.Object, version int64, next time.Time) (int64, error) {
	data, err := encode(obj)
	if err != nil {
		return 0, fmt.Errorf("encode %s: %w", api.KeyOf(obj), err)
	}
	key, owner := api.KeyOf(obj), ownerKey(obj)
	out, err := e.cfg.Store.Update(ctx, ports.Record{Key: key, Version: version, Owner: owner, NextRunAt: next, Data: data})
	if err != nil {
		return 0, err
	}
	obj.GetObjectMeta().ResourceVersion = strconv.FormatInt(out.Version, 10)
	e.cfg.Metrics.Inc("certfn_state_writes_total", "kind", key.Kind)
	if !ownerCares(obj) {
		owner = api.Key{}
	}
	return out.Version, e.wake(ctx, key, owner)
}

// ownerCares reports whether the owner has anything to do after obj was
// written: a Certificate only acts on its request once the request is final
// (issued, failed, denied), so earlier request writes do not wake it. The
// owner's own due time covers a lost message.
func ownerCares(obj api.Object) bool {
	if f, ok := obj.(Finalizer); ok {
		return f.IsFinal()
	}
	return true
}

// create stores a new object and enqueues it and its owner.
func (e *Engine) create(ctx context.Context, obj api.Object, next time.Time) (int64, error) {
	data, err := encode(obj)
	if err != nil {
		return 0, fmt.Errorf("encode %s: %w", api.KeyOf(obj), err)
	}
	key, owner := api.KeyOf(obj), ownerKey(obj)
	out, err := e.cfg.Store.Create(ctx, ports.Record{Key: key, Owner: owner, NextRunAt: next, Data: data})
	if err != nil {
		return 0, err
	}
	obj.GetObjectMeta().ResourceVersion = strconv.FormatInt(out.Version, 10)
	e.cfg.Metrics.Inc("certfn_state_writes_total", "kind", key.Kind)
	if !ownerCares(obj) {
		owner = api.Key{}
	}
	return out.Version, e.wake(ctx, key, owner)
}

func (e *Engine) wake(ctx context.Context, keys ...api.Key) error {
	for _, k := range keys {
		if k.IsZero() {
			continue
		}
		if err := e.enqueue(ctx, k, 0); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) enqueue(ctx context.Context, k api.Key, delay time.Duration) error {
	if delay > e.cfg.MaxQueueDelay {
		return nil // nextRunAt and the scheduler take it from here
	}
	if delay < 0 {
		delay = 0
	}
	if err := e.cfg.Queue.Enqueue(ctx, k, delay); err != nil {
		return fmt.Errorf("enqueue %s: %w", k, err)
	}
	e.cfg.Metrics.Inc("certfn_queue_messages_total")
	return nil
}

// settle is called when no step wrote: it keeps the due index right (a
// record whose due time passed, or that would wake too late, gets the time
// it wants now) and sends a delayed message for a short wait.
func (e *Engine) settle(ctx context.Context, rec ports.Record, want time.Time) error {
	now := e.cfg.Clock.Now()
	stale := !rec.NextRunAt.IsZero() && !rec.NextRunAt.After(now)
	late := !want.IsZero() && (rec.NextRunAt.IsZero() || rec.NextRunAt.After(want))
	if (stale || late) && !rec.NextRunAt.Equal(want) {
		rec.NextRunAt = want
		if _, err := e.cfg.Store.Update(ctx, rec); err != nil {
			return fmt.Errorf("reschedule %s: %w", rec.Key, err)
		}
		e.cfg.Metrics.Inc("certfn_state_writes_total", "kind", rec.Key.Kind)
	}
	if !want.IsZero() {
		return e.enqueue(ctx, rec.Key, want.Sub(now))
	}
	return nil
}

// newUID returns a random UID for a created object.
func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// issuerSecretNamespace is where an issuer's secrets live.
func (e *Engine) issuerSecretNamespace(iss api.GenericIssuer) string {
	if iss.GetTypeMeta().Kind == api.KindClusterIssuer {
		return e.cfg.ClusterResourceNamespace
	}
	return iss.GetObjectMeta().Namespace
}

var _ certificates.Writer = (*certWriter)(nil)
