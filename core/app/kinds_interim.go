package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/certificates/acmimport"
	"github.com/certfn/certfn/core/certificates/issuing"
	"github.com/certfn/certfn/core/certificates/keygen"
	"github.com/certfn/certfn/core/certificates/keymanager"
	"github.com/certfn/certfn/core/certificates/notify"
	"github.com/certfn/certfn/core/certificates/readiness"
	"github.com/certfn/certfn/core/certificates/requestmanager"
	"github.com/certfn/certfn/core/certificates/trigger"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/repo"
	"github.com/certfn/certfn/core/requests"
	"github.com/certfn/certfn/core/requests/approval"
	"github.com/certfn/certfn/core/requests/signing"
	"github.com/certfn/certfn/core/signers"
	"github.com/certfn/certfn/core/step"
)

// certSteps is docs/design/certificate-controllers.md's controller order; issuing's output refresh runs
// on a certificate that needs no issuance, then certfn's ACM import and
// notifications (last: they see a settled Certificate).
var certSteps = []step.Func[*certificates.Env, *certificates.State]{
	trigger.Step, keymanager.Step, requestmanager.Step, issuing.Step, readiness.Step, issuing.OutputsStep,
	acmimport.Step, // certfn extension: certfn.io/acm-import
	notify.Step,    // certfn extension: events about Certificates
}

// certStepNames name certSteps in debug logs.
var certStepNames = []string{"trigger", "keymanager", "requestmanager", "issuing", "readiness", "outputs", "acmimport", "notify"}

// CertificateReads are the reads of the Certificate controller besides
// its own record (core/repo.Repo is one).
type CertificateReads interface {
	Owned(ctx context.Context, kind string, owner api.Key) ([]repo.Stored, error)
	CertificatesNaming(ctx context.Context, namespace, secretName, except string) ([]*api.Certificate, error)
	SecretUses(ctx context.Context, namespace, name, except string, certs bool) ([]api.SecretUse, error)
	CAIssuersUsing(ctx context.Context, namespace, name string) ([]api.Key, error)
}

// CertificateConfig configures the Certificate controller.
type CertificateConfig struct {
	// Secrets is the secret store (required).
	Secrets ports.SecretStore
	// Reads are its reads of other objects (required).
	Reads CertificateReads
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
	// core/certificates/notify), NotifyExpiryWindow how long before expiry
	// they are announced as expiring (0: never).
	Notifier           ports.Notifier
	NotifyExpiryWindow time.Duration
	// Keys generates the next private keys (nil: a keygen.Stage on
	// pki.GenerateKey, expensive keys shared out per namespace).
	Keys certificates.KeyGenerator
	// KeyPolicy refuses a spec.privateKey before its key is generated
	// when no policy could allow it (nil: no check).
	KeyPolicy certificates.KeyPolicy
	// FileBounds bound the file permissions a spec.secretTemplate may ask
	// for (nil: not bounded; see certificates.State.FileBounds).
	FileBounds *api.SecretFileBounds
}

// CertificateController reconciles Certificates: the steps of certSteps,
// one write per call.
type CertificateController struct{ cfg CertificateConfig }

// NewCertificateController checks cfg and returns the Certificate controller.
func NewCertificateController(cfg CertificateConfig) (*CertificateController, error) {
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
	if cfg.Keys == nil {
		cfg.Keys = keygen.New(nil, 0)
	}
	return &CertificateController{cfg: cfg}, nil
}

// Config returns the effective configuration.
func (c *CertificateController) Config() CertificateConfig { return c.cfg }

var _ kernel.Controller = (*CertificateController)(nil)

// Reconcile implements kernel.Controller.
func (c *CertificateController) Reconcile(ctx context.Context, o kernel.Objects, rec ports.Record) error {
	cert, err := kernel.DecodeAs[*api.Certificate](o, rec)
	if err != nil {
		return err
	}
	st := &certificates.State{Cert: cert, Version: rec.Version, NextRunAt: rec.NextRunAt, Now: o.Now()}
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
		st.Requests = append(st.Requests, certificates.Request{CR: r.Obj.(*api.CertificateRequest), Version: r.Version})
	}
	id := c.cfg.Identity
	env := &certificates.Env{
		Clock: o, Secrets: c.cfg.Secrets, Writer: &certWriter{c: c, o: o}, Metrics: o.Metrics(),
		Username: id.Username, UID: id.UID, Groups: id.Groups, WaitPoll: c.cfg.WaitPoll,
		Importer: c.cfg.Importer, Notifier: c.cfg.Notifier, NotifyExpiryWindow: c.cfg.NotifyExpiryWindow,
		Keys: c.cfg.Keys, KeyPolicy: c.cfg.KeyPolicy,
	}
	res, err := step.Run(ctx, env, st, certSteps, certStepNames)
	if err != nil || res.Wrote {
		return err
	}
	o.Explain(res.Why)
	want := res.Want
	rec.Version = st.Version
	if !st.IsIssuing() {
		// Nothing wrote; readiness has read the secret, so the certificate is settled.
		want = certificates.Earliest(want, st.Now.Add(c.cfg.ResyncInterval))
	}
	return o.Settle(ctx, rec, want)
}

// certWriter is the steps' Writer over the kernel's handle.
type certWriter struct {
	c *CertificateController
	o kernel.Objects
}

func (w *certWriter) UpdateCertificate(ctx context.Context, st *certificates.State, next time.Time) error {
	if !st.IsIssuing() {
		// A settled certificate is looked at again within the resync interval.
		next = certificates.Earliest(next, w.o.Now().Add(w.c.cfg.ResyncInterval))
	}
	v, err := w.o.UpdateObject(ctx, st.Cert, st.Version, next)
	if err != nil {
		return err
	}
	st.Version, st.NextRunAt = v, next
	return nil
}

func (w *certWriter) CreateRequest(ctx context.Context, st *certificates.State, cr *api.CertificateRequest) error {
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

func (w *certWriter) DeleteRequest(ctx context.Context, r certificates.Request) error {
	return w.o.DeleteObject(ctx, api.KeyOf(r.CR), r.Version, api.OwnerKey(r.CR))
}

// SecretWritten wakes the CA issuers whose key pair is namespace/name.
func (w *certWriter) SecretWritten(ctx context.Context, namespace, name string) error {
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

func (w *certWriter) Enqueue(ctx context.Context, key api.Key, delay time.Duration) error {
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
func (c *CertificateController) Unfinished(ctx context.Context, l *kernel.Listing) (first, rest []api.Key, err error) {
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
func (c *CertificateController) followUpPending(crt *api.Certificate) bool {
	if crt.Annotations[api.AnnotationACMImport] == "true" {
		return true
	}
	if c.cfg.Notifier == nil || crt.Status.Revision == nil {
		return false
	}
	return crt.Status.NotifiedRevision == nil || *crt.Status.NotifiedRevision != *crt.Status.Revision
}

var reqSteps = []step.Func[*requests.Env, *requests.State]{approval.Step, signing.Step}

// reqStepNames name reqSteps in debug logs.
var reqStepNames = []string{"approval", "signing"}

// RequestReads are the reads of the CertificateRequest controller
// besides its own record (core/repo.Repo is one).
type RequestReads interface {
	Issuer(ctx context.Context, namespace string, ref api.IssuerReference) (api.GenericIssuer, string, bool, error)
	RequestsIssuedSince(ctx context.Context, namespace string, since time.Time) (int, time.Time, error)
}

// RequestConfig configures the CertificateRequest controller.
type RequestConfig struct {
	// Approver decides requests (required).
	Approver requests.Approver
	// Signers by issuer type ("selfSigned", "ca", "acme"). A deployment
	// whose worker must not read CA keys leaves "ca" out and runs a
	// signer role.
	Signers map[string]signers.Signer
	// Reads are its reads of other objects (required).
	Reads RequestReads
	// WaitPoll is how long a request waiting on its issuer waits before
	// looking again by itself (default 10 minutes).
	WaitPoll time.Duration
	// IssuancesPerHourPerNamespace is the issuance quota (0: unlimited;
	// see requests.Env.IssuancesPerHour).
	IssuancesPerHourPerNamespace int
}

// RequestController reconciles CertificateRequests: approval, then
// signing, one write per call.
type RequestController struct{ cfg RequestConfig }

// NewRequestController checks cfg and returns the CertificateRequest controller.
func NewRequestController(cfg RequestConfig) (*RequestController, error) {
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
	return &RequestController{cfg: cfg}, nil
}

var _ kernel.Controller = (*RequestController)(nil)

// Reconcile implements kernel.Controller.
func (c *RequestController) Reconcile(ctx context.Context, o kernel.Objects, rec ports.Record) error {
	cr, err := kernel.DecodeAs[*api.CertificateRequest](o, rec)
	if err != nil {
		return err
	}
	st := &requests.State{CR: cr, Version: rec.Version, NextRunAt: rec.NextRunAt, Now: o.Now()}
	env := &requests.Env{Clock: o, Writer: reqWriter{o}, Approver: c.cfg.Approver, Issuers: issuerFunc(c.cfg.Reads.Issuer),
		Signers: c.cfg.Signers, Objects: o, Metrics: o.Metrics(), WaitPoll: c.cfg.WaitPoll}
	if n := c.cfg.IssuancesPerHourPerNamespace; n > 0 {
		env.IssuancesPerHour, env.Quota = n, quotaFunc(c.cfg.Reads.RequestsIssuedSince)
	}
	res, err := step.Run(ctx, env, st, reqSteps, reqStepNames)
	if err != nil || res.Wrote {
		return err
	}
	o.Explain(res.Why)
	rec.Version = st.Version
	return o.Settle(ctx, rec, res.Want)
}

type reqWriter struct{ o kernel.Objects }

func (w reqWriter) UpdateRequest(ctx context.Context, st *requests.State, next time.Time) error {
	v, err := w.o.UpdateObject(ctx, st.CR, st.Version, next)
	if err != nil {
		return err
	}
	st.Version, st.NextRunAt = v, next
	return nil
}

// issuerFunc is a function as requests.Issuers.
type issuerFunc func(ctx context.Context, namespace string, ref api.IssuerReference) (api.GenericIssuer, string, bool, error)

func (f issuerFunc) Get(ctx context.Context, namespace string, ref api.IssuerReference) (api.GenericIssuer, string, bool, error) {
	return f(ctx, namespace, ref)
}

// quotaFunc is a function as requests.Quota.
type quotaFunc func(ctx context.Context, namespace string, since time.Time) (int, time.Time, error)

func (f quotaFunc) IssuedSince(ctx context.Context, namespace string, since time.Time) (int, time.Time, error) {
	return f(ctx, namespace, since)
}

// UnfinishedRequests is the CertificateRequests' kernel.UnfinishedFunc:
// the requests that are not final.
func UnfinishedRequests(ctx context.Context, l *kernel.Listing) (first, rest []api.Key, err error) {
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
