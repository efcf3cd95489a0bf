// Package engine turns a reconcile key into one step (docs/design/one-step.md): it
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
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/certificates/keygen"
	"github.com/certfn/certfn/core/issuers"
	"github.com/certfn/certfn/core/policy"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/signers"
)

// Identity is certfn's own requester identity (docs/design/certificates-api.md: requests created by
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
	// are decided by AutoApprove, then CertificateRequestPolicies (docs/design/approval-policy.md).
	Approver certificaterequests.Approver
	// AutoApprove lists signer names approved without a policy, as
	// cert-manager's approveSignerNames ("clusterissuers.cert-manager.io/ca",
	// "issuers.cert-manager.io/<ns>.<name>", "issuers.cert-manager.io/*").
	AutoApprove []string
	// Evaluator evaluates policies; required. Its plugins are registered
	// by the caller (core/app.Build in every deployment).
	Evaluator *policy.Evaluator
	// Signers by issuer type ("selfSigned", "ca"). A deployment whose
	// worker must not read CA keys leaves "ca" out and runs a signer role.
	Signers map[string]signers.Signer
	// ClusterResourceNamespace holds ClusterIssuer secrets (default
	// api.DefaultClusterResourceNamespace).
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
	// DeferWakes makes Handle return the keys a reconcile wakes for an
	// immediate run (Disposition.Woken) instead of enqueueing them, so the
	// caller routes them (the AWS worker runs them in the same invocation,
	// the signer sends them to the worker queue). Delayed wake-ups and
	// writes outside Handle (Apply, Renew, approvals) always enqueue.
	DeferWakes bool
	// Handlers reconcile further kinds (the ACME issuer's Order and Challenge).
	Handlers map[string]Handler
	// ACMEReady is passed to the issuer step (see issuers.Env).
	ACMEReady func(ctx context.Context, st *issuers.State) (bool, string, string, error)
	// CertificateImporter imports key pairs of Certificates annotated
	// certfn.io/acm-import into AWS Certificate Manager (nil: such
	// Certificates get a condition saying it is not configured).
	CertificateImporter ports.CertificateImporter
	// Notifier publishes events about Certificates (nil: none; see
	// core/certificates/notify.go), NotifyExpiryWindow how long before expiry
	// they are announced as expiring (0: never).
	Notifier           ports.Notifier
	NotifyExpiryWindow time.Duration
	// IssuancesPerHourPerNamespace is the issuance quota: the most
	// CertificateRequests of one namespace the signing step lets be signed
	// in any rolling hour (0: unlimited; see certificaterequests.Env.IssuancesPerHour),
	// and of CertificateSigningRequests of one requester (certificatesigningrequests.Env).
	IssuancesPerHourPerNamespace int
	// Keys generates the next private keys of Certificates (nil: a
	// keygen.Stage on pki.GenerateKey, expensive keys shared out per
	// namespace).
	Keys certificates.KeyGenerator

	// SecretFileBounds bound the file permissions a Certificate's
	// spec.secretTemplate may ask for (nil: not bounded; see
	// certificates.State.FileBounds).
	SecretFileBounds *api.SecretFileBounds
}

// Engine runs reconciles. It is safe for concurrent use by many workers as
// long as one key is not handled twice at the same time (and even then,
// conditional writes keep state consistent).
type Engine struct {
	cfg Config
	// keyPolicy refuses a Certificate's spec.privateKey before its key is
	// generated when no policy could allow it; nil unless requests are
	// decided by the policy approver (cfg.Approver not overridden).
	keyPolicy certificates.KeyPolicy
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
	case cfg.Evaluator == nil:
		// The one evaluator (with its plugins) is built by the composition
		// root, core/app.Build; a default here would be a second wiring.
		return nil, errors.New("engine: Evaluator is required")
	case cfg.IssuancesPerHourPerNamespace < 0:
		return nil, fmt.Errorf("engine: IssuancesPerHourPerNamespace is %d: want 0 (unlimited) or more", cfg.IssuancesPerHourPerNamespace)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	e := &Engine{}
	if cfg.Approver == nil {
		ap, err := policy.NewApprover(cfg.Evaluator, cfg.AutoApprove)
		if err != nil {
			return nil, fmt.Errorf("engine: auto-approve list: %w", err)
		}
		cfg.Approver = &policyApprover{e: e, ap: ap}
		e.keyPolicy = keyPolicy{e: e, ap: ap}
	}
	if cfg.Keys == nil {
		cfg.Keys = keygen.New(nil, 0)
	}
	if cfg.ClusterResourceNamespace == "" {
		cfg.ClusterResourceNamespace = api.DefaultClusterResourceNamespace
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

// Reconcile runs one step for key, enqueueing what it wakes. A missing
// resource is not an error (it was deleted). The returned error is
// classified by errs.Classify.
func (e *Engine) Reconcile(ctx context.Context, key api.Key) error {
	return e.direct().reconcile(ctx, key, nil)
}

// reconcile runs one step for key; loaded, when it holds key's record,
// was read by the caller just before and is used instead of a read.
func (r *run) reconcile(ctx context.Context, key api.Key, loaded *ports.Record) error {
	var rec ports.Record
	if loaded != nil && loaded.Key == key {
		rec = *loaded
	} else {
		var err error
		rec, err = r.cfg.Store.Get(ctx, key)
		if errors.Is(err, ports.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("load %s: %w", key, err)
		}
	}
	r.cfg.Metrics.Inc("certfn_reconciles_total", "kind", key.Kind)
	switch key.Kind {
	case api.KindCertificate:
		return r.reconcileCertificate(ctx, rec)
	case api.KindCertificateRequest:
		return r.reconcileRequest(ctx, rec)
	case api.KindCertificateSigningRequest:
		return r.reconcileCSR(ctx, rec)
	case api.KindIssuer, api.KindClusterIssuer:
		return r.reconcileIssuer(ctx, rec)
	case api.KindCertificateRequestPolicy:
		return r.reconcilePolicy(ctx, rec)
	}
	if h, ok := r.cfg.Handlers[key.Kind]; ok {
		return h.Reconcile(ctx, r, rec)
	}
	switch key.Kind {
	case api.KindRole, api.KindClusterRole, api.KindRoleBinding, api.KindClusterRoleBinding, api.KindNamespace:
		// Who may use which policy (or a namespace's labels) changed:
		// pending requests are decided again.
		if err := r.wakePendingRequests(ctx); err != nil {
			return err
		}
		return r.settle(ctx, rec, time.Time{})
	default:
		// Nothing reconciles this kind (Events, leases): only its due time is kept right.
		return r.settle(ctx, rec, time.Time{})
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

// newUID returns a random UID for a created object.
func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Issuers is the engine's issuer rule (see api.IssuerScope).
func (e *Engine) Issuers() api.IssuerScope {
	return api.IssuerScope{ClusterResourceNamespace: e.cfg.ClusterResourceNamespace}
}

var _ certificates.Writer = (*certWriter)(nil)
