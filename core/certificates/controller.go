package certificates

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/repo"
	"github.com/certfn/certfn/core/step"
)

// steps is docs/design/certificate-controllers.md's controller order; issuing's output refresh runs
// on a certificate that needs no issuance, then certfn's ACM import and
// notifications (last: they see a settled Certificate).
var steps = []step.Func[*Env, *State]{
	TriggerStep, KeyManagerStep, RequestManagerStep, IssuingStep, ReadinessStep, OutputsStep,
	ACMImportStep, // certfn extension: certfn.io/acm-import
	NotifyStep,    // certfn extension: events about Certificates
}

// stepNames name steps in debug logs.
var stepNames = []string{"trigger", "keymanager", "requestmanager", "issuing", "readiness", "outputs", "acmimport", "notify"}

// Reads are the Certificate controller's reads of other objects
// (core/repo.Repo is one).
type Reads interface {
	Owned(ctx context.Context, kind string, owner api.Key) ([]repo.Stored, error)
	CertificatesNaming(ctx context.Context, namespace, secretName, except string) ([]*api.Certificate, error)
	SecretUses(ctx context.Context, namespace, name, except string, certs bool) ([]api.SecretUse, error)
	CAIssuersUsing(ctx context.Context, namespace, name string) ([]api.Key, error)
}

// Config configures the Certificate controller.
type Config struct {
	// Secrets is the secret store (required).
	Secrets ports.SecretStore
	// Reads are its reads of other objects (required).
	Reads Reads
	// Identity is certfn's requester identity on the requests the steps
	// create (default rbac.Controller()).
	Identity rbac.Identity
	// WaitPoll is how long a Certificate waiting on another resource waits
	// before looking again by itself (default 10 minutes).
	WaitPoll time.Duration
	// ResyncInterval bounds how long a Ready Certificate goes unchecked:
	// its next run is min(renewal time, now + ResyncInterval), so a deleted
	// or altered secret is noticed (default 24 h; local mode uses 1 h).
	ResyncInterval time.Duration
	// Importer imports key pairs of Certificates annotated
	// certfn.io/acm-import (nil: such Certificates get a condition saying
	// it is not configured).
	Importer ports.CertificateImporter
	// Notifier publishes events about Certificates (nil: none; see
	// NotifyStep), NotifyExpiryWindow how long before expiry
	// they are announced as expiring (0: never).
	Notifier           ports.Notifier
	NotifyExpiryWindow time.Duration
	// Keys generates the next private keys (nil: pki.GenerateKey,
	// unshared; core/app.Build sets a keygen.Stage, expensive keys shared
	// out per namespace).
	Keys KeyGenerator
	// KeyPolicy refuses a spec.privateKey before its key is generated
	// when no policy could allow it (nil: no check).
	KeyPolicy KeyPolicy
	// FileBounds bound the file permissions a spec.secretTemplate may ask
	// for (nil: not bounded; see State.FileBounds).
	FileBounds *api.SecretFileBounds
}

// Controller reconciles Certificates: the steps, in order, stopping after
// the first that writes (one write per call).
type Controller struct{ cfg Config }

// NewController checks cfg and returns the Certificate controller.
func NewController(cfg Config) (*Controller, error) {
	switch {
	case cfg.Secrets == nil:
		return nil, errors.New("certificate controller: Secrets is required")
	case cfg.Reads == nil:
		return nil, errors.New("certificate controller: Reads is required")
	}
	if cfg.Identity.Username == "" {
		cfg.Identity = rbac.Controller()
	}
	if cfg.WaitPoll <= 0 {
		cfg.WaitPoll = 10 * time.Minute
	}
	if cfg.ResyncInterval <= 0 {
		cfg.ResyncInterval = 24 * time.Hour
	}
	return &Controller{cfg: cfg}, nil
}

// Config returns the effective configuration.
func (c *Controller) Config() Config { return c.cfg }

var _ kernel.Controller = (*Controller)(nil)

// Reconcile implements kernel.Controller.
func (c *Controller) Reconcile(ctx context.Context, o kernel.Objects, rec ports.Record) error {
	cert, err := kernel.DecodeAs[*api.Certificate](o, rec)
	if err != nil {
		return err
	}
	st := &State{Cert: cert, Version: rec.Version, NextRunAt: rec.NextRunAt, Now: o.Now()}
	st.Events = func(n kernel.Note) { _ = o.RecordEvent(ctx, rec.Key, n, kernel.EventRepeat) }
	st.SecretLoader = func(ctx context.Context) (*ports.Secret, error) {
		sec, err := c.cfg.Secrets.Get(ctx, st.Cert.Namespace, st.Cert.Spec.SecretName)
		switch {
		case err == nil:
			return &sec, nil
		case errors.Is(err, ports.ErrNotFound):
			return nil, nil
		}
		return nil, fmt.Errorf("read secret %s/%s: %w", st.Cert.Namespace, st.Cert.Spec.SecretName, err)
	}
	st.SharersLoader = func(ctx context.Context) ([]*api.Certificate, error) {
		// One List of every Certificate of the namespace: its cost grows
		// with the namespace. The steps ask for it only when the secret
		// does not already name this Certificate (State.Ownership): when
		// it is missing (a first issuance, a deleted secret), and while
		// another Certificate owns it. A settled or renewing owner lists
		// nothing.
		return c.cfg.Reads.CertificatesNaming(ctx, st.Cert.Namespace, st.Cert.Spec.SecretName, st.Cert.Name)
	}
	st.SecretUsesLoader = func(ctx context.Context, certs bool) ([]api.SecretUse, error) {
		return c.cfg.Reads.SecretUses(ctx, st.Cert.Namespace, st.Cert.Spec.SecretName, st.Cert.Name, certs)
	}
	st.FileBounds = c.cfg.FileBounds
	reqs, err := c.cfg.Reads.Owned(ctx, api.KindCertificateRequest, rec.Key)
	if err != nil {
		return err
	}
	for _, r := range reqs {
		st.Requests = append(st.Requests, Request{CR: r.Obj.(*api.CertificateRequest), Version: r.Version})
	}
	id := c.cfg.Identity
	env := &Env{
		Clock: o, Secrets: c.cfg.Secrets, Writer: &writer{c: c, o: o}, Metrics: o.Metrics(),
		Username: id.Username, UID: id.UID, Groups: id.Groups, WaitPoll: c.cfg.WaitPoll,
		Importer: c.cfg.Importer, Notifier: c.cfg.Notifier, NotifyExpiryWindow: c.cfg.NotifyExpiryWindow,
		Keys: c.cfg.Keys, KeyPolicy: c.cfg.KeyPolicy,
	}
	res, err := step.Run(ctx, env, st, steps, stepNames)
	if err != nil || res.Wrote {
		return err
	}
	o.Explain(res.Why)
	want := res.Want
	rec.Version = st.Version
	if !st.IsIssuing() {
		// Nothing wrote; readiness has read the secret, so the certificate is settled.
		want = Earliest(want, st.Now.Add(c.cfg.ResyncInterval))
	}
	return o.Settle(ctx, rec, want)
}

// writer is the steps' Writer over the kernel's handle.
type writer struct {
	c *Controller
	o kernel.Objects
}

func (w *writer) UpdateCertificate(ctx context.Context, st *State, next time.Time) error {
	if !st.IsIssuing() {
		// A settled certificate is looked at again within the resync interval.
		next = Earliest(next, w.o.Now().Add(w.c.cfg.ResyncInterval))
	}
	v, err := w.o.UpdateObject(ctx, st.Cert, st.Version, next)
	if err != nil {
		return err
	}
	st.Version, st.NextRunAt = v, next
	return nil
}

func (w *writer) CreateRequest(ctx context.Context, st *State, cr *api.CertificateRequest) error {
	// Due at once, as the Orders and Challenges the ACME steps create: the
	// request is another key than the Certificate being handled, so if its
	// wake-up is lost (a failed enqueue, a process gone before sending it)
	// the Certificate's retry finds it existing and waits, and only the
	// sweep brings it back.
	_, err := w.o.CreateObject(ctx, cr, w.o.Now())
	if err == nil {
		w.o.Metrics().Inc("certfn_requests_created_total", "namespace", cr.Namespace)
	}
	return err
}

func (w *writer) DeleteRequest(ctx context.Context, r Request) error {
	return w.o.DeleteObject(ctx, api.KeyOf(r.CR), r.Version, api.OwnerKey(r.CR))
}

// SecretWritten wakes the CA issuers whose key pair is namespace/name.
func (w *writer) SecretWritten(ctx context.Context, namespace, name string) error {
	keys, err := w.c.cfg.Reads.CAIssuersUsing(ctx, namespace, name)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := w.o.Enqueue(ctx, k, 0); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) Enqueue(ctx context.Context, key api.Key, delay time.Duration) error {
	return w.o.Enqueue(ctx, key, delay)
}

// Unfinished is the Certificates' kernel.UnfinishedFunc. Woken: the
// Certificates that are issuing or not Ready, and Ready ones that still
// name a next-private-key secret (its deletion after the issuance was
// interrupted) or whose steps after the issuance may not have run
// (followUpPending: an ACM import, a notification).
//
// Certificates whose next revision's request is already issued go first:
// that is the one state in which the secret may hold the next revision's
// certificate while status.revision still names the previous one (a crash
// between the issuing step's secret write and its status write), so the
// status catches up with the secret before anything else runs.
func (c *Controller) Unfinished(ctx context.Context, l *kernel.Listing) (first, rest []api.Key, err error) {
	certs, err := l.Objects(ctx, api.KindCertificate)
	if err != nil {
		return nil, nil, err
	}
	reqs, err := l.Objects(ctx, api.KindCertificateRequest)
	if err != nil {
		return nil, nil, err
	}
	// issuedFor: the owner's revisions whose request is issued.
	issuedFor := map[api.Key]map[int]bool{}
	for _, it := range reqs {
		cr := it.Obj.(*api.CertificateRequest)
		if !cr.IsFinal() {
			continue
		}
		if rev, err := strconv.Atoi(cr.Annotations[api.AnnotationRevision]); err == nil && cr.IsIssued() && !it.Rec.Owner.IsZero() {
			if issuedFor[it.Rec.Owner] == nil {
				issuedFor[it.Rec.Owner] = map[int]bool{}
			}
			issuedFor[it.Rec.Owner][rev] = true
		}
	}
	for _, it := range certs {
		crt := it.Obj.(*api.Certificate)
		issuing := api.IsTrue(crt.Status.Conditions, api.CertificateConditionIssuing)
		if !issuing && api.IsTrue(crt.Status.Conditions, api.CertificateConditionReady) && crt.Status.NextPrivateKeySecretName == nil &&
			!c.followUpPending(crt) {
			continue
		}
		next := 1
		if crt.Status.Revision != nil {
			next = *crt.Status.Revision + 1
		}
		if issuing && issuedFor[it.Rec.Key][next] {
			first = append(first, it.Rec.Key)
			continue
		}
		rest = append(rest, it.Rec.Key)
	}
	return first, rest, nil
}

// followUpPending says whether a Ready Certificate may still owe a step
// that runs after its issuance completed: the import of an annotated
// Certificate (whether the stored certificate is the imported one takes a
// secret read, so every annotated one is woken: its step compares serials
// and imports nothing when they match), or, with notifications on, the
// announcement of its current revision. The completion write schedules the
// renewal, not these steps, so a crash right after it would leave them to
// the resync (an hour) without this.
func (c *Controller) followUpPending(crt *api.Certificate) bool {
	if crt.Annotations[api.AnnotationACMImport] == "true" {
		return true
	}
	if c.cfg.Notifier == nil || crt.Status.Revision == nil {
		return false
	}
	return crt.Status.NotifiedRevision == nil || *crt.Status.NotifiedRevision != *crt.Status.Revision
}
