// Package kernel turns a reconcile key into one step (docs/design/one-step.md):
// it loads the record, hands it to the controller of its kind, and keeps
// what every kind shares: conditional writes that wake the written key and
// its owner, the due index (nextRunAt, plus a delayed message for short
// waits), the sweep, retries and their backoff, failures recorded as
// Events, cascade deletes and the wake-up of unfinished work after a
// restart.
//
// What a kind does is its controller's (Controller), registered in the
// table of Config.Controllers, one Row per kind: the kernel imports no
// kind's package (imports_test.go).
package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/repo"
)

// Controller reconciles the objects of a kind: one step per call, through
// o's writes (each conditional on the version given, waking what it
// concerns), and o.Settle with the time it wants to run again when it
// wrote nothing. A lost race is ports.ErrConflict; every error is
// classified by errs.Classify.
type Controller interface {
	Reconcile(ctx context.Context, o Objects, rec ports.Record) error
}

// Deleter is implemented by controllers whose objects hold something
// outside the store (a Challenge's DNS-01 record): BeforeDelete runs
// before every deletion of a record of the controller's kind, cascaded
// ones included (a CertificateRequest taking its Order and Challenges
// along). An error stops the deletion; it is retried.
type Deleter interface {
	BeforeDelete(ctx context.Context, o Objects, rec ports.Record) error
}

// Finalizer is implemented by kinds whose owner only needs waking once they
// reach a final state (CertificateRequest, Order, Challenge).
type Finalizer interface {
	IsFinal() bool
}

// Row is one line of the controller table: the kinds a controller
// reconciles, and what the kernel does for them besides.
type Row struct {
	// Kinds are the kinds of the row (Issuer and ClusterIssuer share one).
	Kinds []string
	// Controller reconciles them; nil when the role does not (the ACME
	// kinds in a role without the ACME issuer): a record of theirs then
	// only has its due time kept right.
	Controller Controller
	// Owns are the kinds whose records owned by one of the row's are
	// deleted with it, first (Record.Owner).
	Owns []string
	// Unfinished, when set, says which of the row's objects WakeUnfinished
	// wakes.
	Unfinished UnfinishedFunc
}

// Config wires the kernel.
type Config struct {
	Store   ports.Store
	Queue   ports.Queue
	Clock   ports.Clock
	Metrics ports.Metrics
	// MaxQueueDelay is the longest delay the queue supports (SQS: 15 min);
	// longer waits rely on nextRunAt and the scheduler (default 15 minutes).
	MaxQueueDelay time.Duration
	// DeferWakes makes Handle return the keys a reconcile wakes for an
	// immediate run (Disposition.Woken) instead of enqueueing them, so the
	// caller routes them (the AWS worker runs them in the same invocation,
	// the signer sends them to the worker queue). Delayed wake-ups and
	// writes outside Handle (through Direct) always enqueue.
	DeferWakes bool
	// Controllers is the controller table, one row per kind; its order is
	// the order in which WakeUnfinished wakes the rows' objects. A kind
	// without a row (Events, leases) only has its due time kept right.
	Controllers []Row
	// EventsExpire says the store expires Events itself (the cloud stores'
	// TTL, app.RetainEvents): a record a step deletes (a Challenge once
	// its Order is valid, a request beyond the revision history) then
	// leaves its Events to that TTL, as Kubernetes leaves Events to
	// theirs, instead of paying a delete per Event. Without it (local
	// mode's SQLite has no TTL) they are deleted with the record.
	EventsExpire bool
	// Logger receives every Event written (INFO for Normal, WARN for
	// Warning, with namespace, kind, name, reason and message) and the
	// Events that could not be written; nil: none.
	Logger *slog.Logger
}

// Kernel runs reconciles. It is safe for concurrent use by many workers as
// long as one key is not handled twice at the same time (and even then,
// conditional writes keep state consistent).
type Kernel struct {
	cfg  Config
	rows map[string]*Row
	repo *repo.Repo // reads of the handle (Objects.Get)
}

// New checks the configuration and returns a kernel.
func New(cfg Config) (*Kernel, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("kernel: Store is required")
	case cfg.Queue == nil:
		return nil, errors.New("kernel: Queue is required")
	case cfg.Clock == nil:
		return nil, errors.New("kernel: Clock is required")
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	if cfg.MaxQueueDelay <= 0 {
		cfg.MaxQueueDelay = 15 * time.Minute
	}
	k := &Kernel{cfg: cfg, rows: map[string]*Row{}, repo: repo.New(cfg.Store, api.IssuerScope{})}
	for i := range cfg.Controllers {
		row := &cfg.Controllers[i]
		if len(row.Kinds) == 0 {
			return nil, fmt.Errorf("kernel: controller table row %d names no kind", i)
		}
		for _, kind := range row.Kinds {
			if _, ok := api.KindInfoFor(kind); !ok {
				return nil, fmt.Errorf("kernel: controller table row %d: unknown kind %q", i, kind)
			}
			if _, dup := k.rows[kind]; dup {
				return nil, fmt.Errorf("kernel: controller table: kind %s has two rows", kind)
			}
			k.rows[kind] = row
		}
	}
	return k, nil
}

// Config returns the effective configuration.
func (k *Kernel) Config() Config { return k.cfg }

type nopMetrics struct{}

func (nopMetrics) Inc(string, ...string)              {}
func (nopMetrics) Observe(string, float64, ...string) {}

// Reconcile runs one step for key, enqueueing what it wakes. A missing
// resource is not an error (it was deleted). The returned error is
// classified by errs.Classify.
func (k *Kernel) Reconcile(ctx context.Context, key api.Key) error {
	r := &run{Kernel: k, buffer: true}
	err := r.reconcile(ctx, key, nil)
	r.flushEvents(ctx, err)
	return err
}

// Direct is the kernel's handle for writes outside a reconcile (the
// application service, tests): its wake-ups go to the queue at once. It
// is safe for concurrent use; Settle and RecordEvent belong to a
// controller's step and Explain does nothing on it.
func (k *Kernel) Direct() Objects { return k.direct() }

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
	if row := r.rows[key.Kind]; row != nil && row.Controller != nil {
		return row.Controller.Reconcile(ctx, r, rec)
	}
	// Nothing reconciles this kind here: only its due time is kept right.
	return r.settle(ctx, rec, time.Time{})
}
