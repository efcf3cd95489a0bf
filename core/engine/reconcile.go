package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/issuers"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/step"
)

// certSteps is docs/design/certificate-controllers.md's controller order; issuing's output refresh runs
// on a certificate that needs no issuance, then certfn's ACM import and
// notifications (last: they see a settled Certificate).
var certSteps = []step.Func[*certificates.Env, *certificates.State]{
	certificates.TriggerStep, certificates.KeyManagerStep, certificates.RequestManagerStep, certificates.IssuingStep, certificates.ReadinessStep, certificates.OutputsStep,
	certificates.ACMImportStep, // certfn extension: certfn.io/acm-import
	certificates.NotifyStep,    // certfn extension: events about Certificates
}

// certStepNames name certSteps in debug logs.
var certStepNames = []string{"trigger", "keymanager", "requestmanager", "issuing", "readiness", "outputs", "acmimport", "notify"}

func (e *run) reconcileCertificate(ctx context.Context, rec ports.Record) error {
	obj, err := decode(rec)
	if err != nil {
		return err
	}
	st := &certificates.State{Cert: obj.(*api.Certificate), Version: rec.Version, NextRunAt: rec.NextRunAt, Now: e.cfg.Clock.Now()}
	st.SecretLoader = func(ctx context.Context) (*ports.Secret, error) {
		sec, err := e.cfg.Secrets.Get(ctx, st.Cert.Namespace, st.Cert.Spec.SecretName)
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
		return e.certificatesNaming(ctx, st.Cert.Namespace, st.Cert.Spec.SecretName, st.Cert.Name)
	}
	st.SecretUsesLoader = func(ctx context.Context, certs bool) ([]api.SecretUse, error) {
		return e.secretUses(ctx, st.Cert.Namespace, st.Cert.Spec.SecretName, st.Cert.Name, certs)
	}
	st.FileBounds = e.cfg.SecretFileBounds
	reqs, err := e.cfg.Store.List(ctx, ports.ListOptions{Kind: api.KindCertificateRequest, Namespace: st.Cert.Namespace, Owner: rec.Key})
	if err != nil {
		return fmt.Errorf("list requests of %s: %w", rec.Key, err)
	}
	for _, r := range reqs {
		o, err := decode(r)
		if err != nil {
			return err
		}
		st.Requests = append(st.Requests, certificates.Request{CR: o.(*api.CertificateRequest), Version: r.Version})
	}
	env := &certificates.Env{
		Clock: e.cfg.Clock, Secrets: e.cfg.Secrets, Writer: &certWriter{e}, Metrics: e.cfg.Metrics,
		Username: e.cfg.Identity.Username, UID: e.cfg.Identity.UID, Groups: e.cfg.Identity.Groups, WaitPoll: e.cfg.WaitPoll,
		Importer: e.cfg.CertificateImporter, Notifier: e.cfg.Notifier, NotifyExpiryWindow: e.cfg.NotifyExpiryWindow,
		Keys: e.cfg.Keys, KeyPolicy: e.keyPolicy,
	}
	res, err := step.Run(ctx, env, st, certSteps, certStepNames)
	if err != nil || res.Wrote {
		return err
	}
	e.why = res.Why
	want := res.Want
	rec.Version = st.Version
	if !st.IsIssuing() {
		// Nothing wrote; readiness has read the secret, so the certificate is settled.
		want = certificates.Earliest(want, st.Now.Add(e.cfg.ResyncInterval))
	}
	return e.settle(ctx, rec, want)
}

type certWriter struct{ e *run }

func (w *certWriter) UpdateCertificate(ctx context.Context, st *certificates.State, next time.Time) error {
	if !st.IsIssuing() {
		// A settled certificate is looked at again within the resync interval.
		next = certificates.Earliest(next, w.e.cfg.Clock.Now().Add(w.e.cfg.ResyncInterval))
	}
	v, err := w.e.update(ctx, st.Cert, st.Version, next)
	if err != nil {
		return err
	}
	st.Version, st.NextRunAt = v, next
	return nil
}

func (w *certWriter) CreateRequest(ctx context.Context, st *certificates.State, cr *api.CertificateRequest) error {
	now := w.e.cfg.Clock.Now()
	cr.UID, cr.CreationTimestamp, cr.Generation = newUID(), api.NewTime(now), 1
	// Due at once, as the Orders and Challenges the ACME steps create: the
	// request is another key than the Certificate being handled, so if its
	// wake-up is lost (a failed enqueue, a process gone before sending it)
	// the Certificate's retry finds it existing and waits, and only the
	// sweep brings it back.
	_, err := w.e.create(ctx, cr, now)
	if err == nil {
		w.e.cfg.Metrics.Inc("certfn_requests_created_total", "namespace", cr.Namespace)
	}
	return err
}

func (w *certWriter) DeleteRequest(ctx context.Context, r certificates.Request) error {
	key := api.KeyOf(r.CR)
	if err := w.e.deleteTree(ctx, key, r.Version); err != nil {
		return err
	}
	return w.e.wake(ctx, api.OwnerKey(r.CR))
}

func (w *certWriter) SecretWritten(ctx context.Context, namespace, name string) error {
	return w.e.wakeIssuersUsing(ctx, namespace, name)
}

func (w *certWriter) Enqueue(ctx context.Context, key api.Key, delay time.Duration) error {
	return w.e.enqueue(ctx, key, delay)
}

// certificatesNaming lists the Certificates of namespace whose
// spec.secretName is secretName, except the one called except.
func (e *run) certificatesNaming(ctx context.Context, namespace, secretName, except string) ([]*api.Certificate, error) {
	recs, err := e.cfg.Store.List(ctx, ports.ListOptions{Kind: api.KindCertificate, Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list Certificates of namespace %s: %w", namespace, err)
	}
	// Decoding every Certificate of the namespace is most of this call's
	// cost. encode writes compact JSON, where a Certificate naming a plain
	// secret name (a DNS name: nothing for JSON to escape) contains
	// "secretName":"<name>" exactly, so records without those bytes are
	// skipped undecoded; those with them are decoded and checked.
	var needle []byte
	if plainName(secretName) {
		needle = []byte(`"secretName":"` + secretName + `"`)
	}
	var out []*api.Certificate
	for _, r := range recs {
		if needle != nil && !bytes.Contains(r.Data, needle) {
			continue
		}
		o, err := decode(r)
		if err != nil {
			return nil, err
		}
		if c := o.(*api.Certificate); c.Spec.SecretName == secretName && c.Name != except {
			out = append(out, c)
		}
	}
	return out, nil
}

// plainName reports a non-empty name of lower-case letters, digits, '-'
// and '.', which JSON encodes as is.
func plainName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// WakeCertificatesNaming enqueues the Certificates of namespace whose
// spec.secretName is secretName, for one List of the namespace's
// Certificates. The application service calls it when a Certificate
// stops naming the secret (deleted, or its spec.secretName changed): one
// of the others may own the secret now (certificates.SecretOwner).
func (e *Engine) WakeCertificatesNaming(ctx context.Context, namespace, secretName string) error {
	r := e.direct()
	certs, err := r.certificatesNaming(ctx, namespace, secretName, "")
	if err != nil {
		return err
	}
	for _, c := range certs {
		if err := r.enqueue(ctx, api.KeyOf(c), 0); err != nil {
			return err
		}
	}
	return nil
}

// wakeIssuersUsing enqueues the CA issuers whose key pair is namespace/name.
func (e *run) wakeIssuersUsing(ctx context.Context, namespace, name string) error {
	kinds := []ports.ListOptions{{Kind: api.KindIssuer, Namespace: namespace}}
	if namespace == e.Issuers().ClusterNamespace() {
		kinds = append(kinds, ports.ListOptions{Kind: api.KindClusterIssuer})
	}
	for _, opts := range kinds {
		recs, err := e.cfg.Store.List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list %s: %w", opts.Kind, err)
		}
		for _, r := range recs {
			o, err := decode(r)
			if err != nil {
				return err
			}
			if ca := o.(api.GenericIssuer).GetSpec().CA; ca != nil && ca.SecretName == name {
				if err := e.enqueue(ctx, r.Key, 0); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// secretUses lists the references to secret namespace/name by the issuers
// whose secrets live in namespace (its Issuers, and the ClusterIssuers
// when namespace is the cluster resource namespace), and with certs by the
// keystores of namespace's Certificates other than except. Records that do
// not contain the name as a JSON string are skipped undecoded.
func (e *run) secretUses(ctx context.Context, namespace, name, except string, certs bool) ([]api.SecretUse, error) {
	kinds := []ports.ListOptions{{Kind: api.KindIssuer, Namespace: namespace}}
	if namespace == e.Issuers().ClusterNamespace() {
		kinds = append(kinds, ports.ListOptions{Kind: api.KindClusterIssuer})
	}
	if certs {
		kinds = append(kinds, ports.ListOptions{Kind: api.KindCertificate, Namespace: namespace})
	}
	var needle []byte
	if plainName(name) {
		needle = []byte(`"` + name + `"`)
	}
	var out []api.SecretUse
	for _, opts := range kinds {
		recs, err := e.cfg.Store.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", opts.Kind, err)
		}
		for _, r := range recs {
			if needle != nil && !bytes.Contains(r.Data, needle) {
				continue
			}
			o, err := decode(r)
			if err != nil {
				return nil, err
			}
			var uses []api.SecretUse
			switch o := o.(type) {
			case api.GenericIssuer:
				uses = api.IssuerSecretUses(o)
			case *api.Certificate:
				if o.Name != except {
					uses = api.CertificateSecretUses(o)
				}
			}
			for _, u := range uses {
				if u.Secret == name {
					out = append(out, u)
				}
			}
		}
	}
	return out, nil
}

var reqSteps = []step.Func[*certificaterequests.Env, *certificaterequests.State]{certificaterequests.ApprovalStep, certificaterequests.SigningStep}

// reqStepNames name reqSteps in debug logs.
var reqStepNames = []string{"approval", "signing"}

func (e *run) reconcileRequest(ctx context.Context, rec ports.Record) error {
	obj, err := decode(rec)
	if err != nil {
		return err
	}
	st := &certificaterequests.State{CR: obj.(*api.CertificateRequest), Version: rec.Version, NextRunAt: rec.NextRunAt, Now: e.cfg.Clock.Now()}
	env := &certificaterequests.Env{Clock: e.cfg.Clock, Writer: &reqWriter{e}, Approver: e.cfg.Approver, Issuers: &issuerGetter{e},
		Signers: e.cfg.Signers, Objects: e, Metrics: e.cfg.Metrics, WaitPoll: e.cfg.WaitPoll}
	if n := e.cfg.IssuancesPerHourPerNamespace; n > 0 {
		env.IssuancesPerHour, env.Quota = n, issuedCounter{e}
	}
	res, err := step.Run(ctx, env, st, reqSteps, reqStepNames)
	if err != nil || res.Wrote {
		return err
	}
	e.why = res.Why
	want := res.Want
	rec.Version = st.Version
	return e.settle(ctx, rec, want)
}

type reqWriter struct{ e *run }

func (w *reqWriter) UpdateRequest(ctx context.Context, st *certificaterequests.State, next time.Time) error {
	v, err := w.e.update(ctx, st.CR, st.Version, next)
	if err != nil {
		return err
	}
	st.Version, st.NextRunAt = v, next
	return nil
}

// issuedCounter counts a namespace's issuances for the issuance quota
// (certificaterequests.Quota) with one List of its CertificateRequests.
type issuedCounter struct{ e *run }

// IssuedSince implements certificaterequests.Quota: the requests whose Ready
// condition is True with reason Issued and changed after since. Requests
// deleted since they were issued (pruned beyond a Certificate's
// revisionHistoryLimit, or deleted by a user) are no longer counted.
func (q issuedCounter) IssuedSince(ctx context.Context, namespace string, since time.Time) (int, time.Time, error) {
	recs, err := q.e.cfg.Store.List(ctx, ports.ListOptions{Kind: api.KindCertificateRequest, Namespace: namespace})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("list CertificateRequests of namespace %s: %w", namespace, err)
	}
	n, oldest := 0, time.Time{}
	for _, r := range recs {
		o, err := decode(r)
		if err != nil {
			return 0, time.Time{}, err
		}
		c := api.FindCondition(o.(*api.CertificateRequest).Status.Conditions, api.CertificateRequestConditionReady)
		if c == nil || c.Status != api.ConditionTrue || c.Reason != api.CertificateRequestReasonIssued || c.LastTransitionTime == nil {
			continue
		}
		if at := c.LastTransitionTime.Time; at.After(since) {
			n++
			if oldest.IsZero() || at.Before(oldest) {
				oldest = at
			}
		}
	}
	return n, oldest, nil
}

type issuerGetter struct{ e *run }

func (g *issuerGetter) Get(ctx context.Context, namespace string, ref api.IssuerReference) (api.GenericIssuer, string, bool, error) {
	key, secretNS, ok := g.e.Issuers().Resolve(namespace, ref)
	if !ok {
		return nil, "", false, nil
	}
	rec, err := g.e.cfg.Store.Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, err
	}
	o, err := decode(rec)
	if err != nil {
		return nil, "", false, err
	}
	return o.(api.GenericIssuer), secretNS, true, nil
}

func (e *run) reconcileIssuer(ctx context.Context, rec ports.Record) error {
	obj, err := decode(rec)
	if err != nil {
		return err
	}
	iss := obj.(api.GenericIssuer)
	st := &issuers.State{Issuer: iss, Version: rec.Version, NextRunAt: rec.NextRunAt, Now: e.cfg.Clock.Now(),
		SecretNamespace: e.Issuers().SecretNamespace(iss)}
	w := &issuerWriter{e: e}
	want, err := issuers.Step(ctx, &issuers.Env{Secrets: e.cfg.Secrets, Writer: w, WaitPoll: e.cfg.WaitPoll, ACMEReady: e.cfg.ACMEReady}, st)
	if err != nil || w.wrote {
		return err
	}
	rec.Version = st.Version
	return e.settle(ctx, rec, want)
}

type issuerWriter struct {
	e     *run
	wrote bool
}

func (w *issuerWriter) UpdateIssuer(ctx context.Context, st *issuers.State, next time.Time) error {
	v, err := w.e.update(ctx, st.Issuer, st.Version, next)
	if err != nil {
		return err
	}
	st.Version, st.NextRunAt, w.wrote = v, next, true
	return nil
}

// IssuerReady wakes the requests that reference the issuer and are not final.
func (w *issuerWriter) IssuerReady(ctx context.Context, st *issuers.State) error {
	m := st.Issuer.GetObjectMeta()
	kind := st.Issuer.GetTypeMeta().Kind
	recs, err := w.e.cfg.Store.List(ctx, ports.ListOptions{Kind: api.KindCertificateRequest, Namespace: m.Namespace})
	if err != nil {
		return fmt.Errorf("list requests waiting for %s %s: %w", kind, m.Name, err)
	}
	for _, r := range recs {
		o, err := decode(r)
		if err != nil {
			return err
		}
		cr := o.(*api.CertificateRequest)
		refKind := cr.Spec.IssuerRef.Kind
		if refKind == "" {
			refKind = api.KindIssuer
		}
		if cr.Spec.IssuerRef.Name == m.Name && refKind == kind && !cr.IsFinal() {
			if err := w.e.enqueue(ctx, r.Key, 0); err != nil {
				return err
			}
		}
	}
	return w.e.wakePendingCSRs(ctx)
}
