package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/policy"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/repo"
)

// Caller is the authenticated identity behind an API or CLI call. It is
// recorded on the CertificateRequests it creates (docs/design/certificates-api.md: never taken
// from the submitted body).
type Caller struct {
	Username string
	UID      string
	Groups   []string
	Extra    map[string][]string
}

// SuperuserGroup bypasses authorization, as Kubernetes' system:masters.
// The local CLI user is a member unless it impersonates another identity.
const SuperuserGroup = "system:masters"

// Service performs certfn's use cases (apply, get, list, delete, renew,
// approve, status, revoke) on behalf of a caller: every front end — the
// CLI's local client, the HTTP API on every deployment — calls it, so
// each checks the same permissions and answers with the same domain
// errors (errors.go). Every method checks the caller's permission with the
// bindings before it reads or writes anything else. Each call decides
// against one snapshot of the RBAC objects (built at its first check), so
// an apply of N objects lists the RBAC kinds once and a batch cannot grant
// itself rights half-way. It never returns key material.
type Service struct {
	// repo is what the service reads; objects is how it writes (the
	// kernel's direct handle: each write wakes what it concerns).
	repo    *repo.Repo
	objects writes
	clock   ports.Clock
	// evaluator is the one policy evaluator (Apply validates policies
	// with it, a dry run decides with it); identity is certfn's requester
	// identity on the requests of Certificates.
	evaluator *policy.Evaluator
	identity  rbac.Identity
	secrets   ports.SecretStore
	// readSecrets lets Status describe the secret's tls.crt and Revoke
	// read it (local mode); the cloud APIs never read the secret store.
	readSecrets bool
	// deletesSecrets lets Delete remove a Certificate's next private key
	// (every role with the secret store).
	deletesSecrets bool
	// writesSecrets lets Apply and Delete write Secret manifests into the
	// secret store (local mode; role.ServiceWritesSecrets).
	writesSecrets bool
	accounts      *acme.Accounts
	log           *slog.Logger
	// quotas: Apply enforces ObjectsPerNamespace.
	quotas Quotas
	// secretRef names a secret in the secret store (Ports.SecretReference).
	secretRef func(namespace, name string) string
}

// writes are the service's writes, through the kernel (kernel.Kernel.Direct).
type writes interface {
	CreateObject(ctx context.Context, obj api.Object, next time.Time) (int64, error)
	UpdateObject(ctx context.Context, obj api.Object, version int64, next time.Time) (int64, error)
	DeleteObject(ctx context.Context, key api.Key, version int64, owner api.Key) error
	Enqueue(ctx context.Context, key api.Key, delay time.Duration) error
}

// authz is one call's authorization: the RBAC snapshot, built on first use.
type authz struct {
	objs rbac.Lister
	az   *rbac.Authorizer
}

func (s *Service) authz() *authz { return &authz{objs: s.repo} }

func identity(c Caller) rbac.Identity {
	return rbac.Identity{Username: c.Username, UID: c.UID, Groups: c.Groups, Extra: c.Extra}.WithImplicitGroups()
}

func isSuperuser(id rbac.Identity) bool {
	for _, g := range id.Groups {
		if g == SuperuserGroup {
			return true
		}
	}
	return false
}

func (a *authz) authorizer(ctx context.Context) (*rbac.Authorizer, error) {
	if a.az == nil {
		az, err := rbac.Load(ctx, a.objs)
		if err != nil {
			return nil, err
		}
		a.az = az
	}
	return a.az, nil
}

// check checks that caller may perform verb on key (create, get, list,
// update, delete). Members of SuperuserGroup may do everything.
func (a *authz) check(ctx context.Context, caller Caller, verb string, key api.Key) error {
	attrs, err := rbac.AttributesFor(verb, key)
	if err != nil {
		return err
	}
	id := identity(caller)
	if isSuperuser(id) {
		return nil
	}
	az, err := a.authorizer(ctx)
	if err != nil {
		return err
	}
	if ok, why := az.Allowed(id, attrs); !ok {
		return forbidden(fmt.Errorf("%s may not %s %s: %s", id.Username, verb, key, why))
	}
	return nil
}

// checkAttrs checks attrs for caller as check does for a key.
func (a *authz) checkAttrs(ctx context.Context, caller Caller, attrs rbac.Attributes) error {
	id := identity(caller)
	if isSuperuser(id) {
		return nil
	}
	az, err := a.authorizer(ctx)
	if err != nil {
		return err
	}
	if ok, why := az.Allowed(id, attrs); !ok {
		target := attrs.Resource + "/" + attrs.Name
		if attrs.Namespace != "" {
			target += " in namespace " + attrs.Namespace
		}
		return forbidden(fmt.Errorf("%s may not %s %s: %s", id.Username, attrs.Verb, target, why))
	}
	return nil
}

// checkApproval checks the `approve` permission on the signer of cr
// (docs/design/certificates-api.md: approving is separate from signing).
func (a *authz) checkApproval(ctx context.Context, caller Caller, cr *api.CertificateRequest) error {
	id := identity(caller)
	if isSuperuser(id) {
		return nil
	}
	az, err := a.authorizer(ctx)
	if err != nil {
		return err
	}
	if ok, why := az.CanApprove(id, cr.Spec.IssuerRef, cr.Namespace); !ok {
		return forbidden(fmt.Errorf("%s may not approve or deny requests for signer %v: %s", id.Username,
			rbac.SignerResourceNames(cr.Spec.IssuerRef, cr.Namespace)[0], why))
	}
	return nil
}

// Authorize checks that caller may perform verb on key, against a fresh
// RBAC snapshot (a front end's own checks, e.g. a dry run).
func (s *Service) Authorize(ctx context.Context, caller Caller, verb string, key api.Key) error {
	return s.authz().check(ctx, caller, verb, key)
}

// Get returns the object at key if caller may get it. An Event about an
// object (api.EventKey) may also be read by whoever may get that
// object: it says why the object failed or waits, as a status would (a
// CertificateSigningRequest has no condition for it), and `get` on
// events in the Event's namespace ("default" for a cluster-scoped
// object) is not what a requester is granted.
func (s *Service) Get(ctx context.Context, caller Caller, key api.Key) (api.Object, error) {
	az := s.authz()
	if err := az.check(ctx, caller, rbac.VerbGet, key); err != nil {
		involved, isEvent := api.InvolvedKeyFor(key)
		if !isEvent || !errors.Is(err, ErrForbidden) || az.check(ctx, caller, rbac.VerbGet, involved) != nil {
			return nil, err
		}
	}
	if secretStoreKind(key.Kind) {
		sec, err := s.secretSummary(ctx, key)
		if err != nil {
			return nil, err
		}
		return sec, nil
	}
	return s.repo.Get(ctx, key)
}

// List returns the objects of kind in namespace ("" = every namespace, or
// a cluster-scoped kind) that opts select, if caller may list them there.
// A malformed or unsupported selector is a *FieldError (ErrBadRequest)
// naming it, checked before anything is read.
func (s *Service) List(ctx context.Context, caller Caller, kind, namespace string, opts ListOptions) ([]api.Object, error) {
	info, ok := api.KindInfoFor(kind)
	if !ok {
		return nil, notFoundf("unknown kind %q", kind)
	}
	sel, err := opts.parse(kind)
	if err != nil {
		return nil, err
	}
	if !info.Namespaced {
		namespace = ""
	}
	if of, ok, err := s.authorizeList(ctx, caller, kind, namespace, sel); err != nil {
		return nil, err
	} else if ok {
		evs, err := s.repo.EventsOf(ctx, of)
		if err != nil {
			return nil, err
		}
		objs := make([]api.Object, 0, len(evs))
		for i := range evs {
			if namespace == "" || evs[i].Namespace == namespace {
				objs = append(objs, &evs[i])
			}
		}
		return sel.filter(s.involvedUIDs(ctx, sel, objs)), nil
	}
	var objs []api.Object
	if info.InSecretStore {
		objs, err = s.secretSummaries(ctx, namespace)
	} else {
		objs, err = s.repo.List(ctx, kind, namespace)
	}
	if err != nil {
		return nil, err
	}
	return sel.filter(s.involvedUIDs(ctx, sel, objs)), nil
}

// involvedUIDs fills in, when sel selects on involvedObject.uid (kubectl
// describe does), the involved object's current uid in Events that do
// not record one, so that the selector compares with what the client
// read from the object. Each object is read once per listing; one that
// is gone leaves the uid empty, which no uid selects.
func (s *Service) involvedUIDs(ctx context.Context, sel selector, objs []api.Object) []api.Object {
	if !sel.usesField("involvedObject.uid") {
		return objs
	}
	uids := map[api.Key]string{}
	for _, o := range objs {
		ev, ok := o.(*api.Event)
		if !ok || ev.InvolvedObject.UID != "" {
			continue
		}
		key := api.Key{Kind: ev.InvolvedObject.Kind, Namespace: ev.InvolvedObject.Namespace, Name: ev.InvolvedObject.Name}
		uid, seen := uids[key]
		if !seen {
			if obj, err := s.repo.Get(ctx, key); err == nil {
				uid = obj.GetObjectMeta().UID
			}
			uids[key] = uid
		}
		ev.InvolvedObject.UID = uid
	}
	return objs
}

// authorizeList checks that caller may list kind in namespace. A caller
// who may not list Events there may still list the Events of one object
// it may get, pinned by the field selector (involvedObject.kind and
// involvedObject.name, as `kubectl describe` asks for them): ok is then
// true and of is that object, whose Events alone are listed. Otherwise
// the listing's own error is returned, whether the object exists or not.
func (s *Service) authorizeList(ctx context.Context, caller Caller, kind, namespace string, sel selector) (of api.Key, ok bool, err error) {
	az := s.authz()
	err = az.check(ctx, caller, rbac.VerbList, api.Key{Kind: kind, Namespace: namespace})
	if err == nil || kind != api.KindEvent || !errors.Is(err, ErrForbidden) {
		return api.Key{}, false, err
	}
	of, pinned := sel.pinned(namespace)
	if !pinned || (namespace != "" && api.EventNamespaceFor(of) != namespace) || az.check(ctx, caller, rbac.VerbGet, of) != nil {
		return api.Key{}, false, err
	}
	return of, true, nil
}

// mayReadEventsOf checks that caller may read the Events about key:
// whoever may get the object, or list Events in their namespace.
func (s *Service) mayReadEventsOf(ctx context.Context, az *authz, caller Caller, key api.Key) error {
	if err := az.check(ctx, caller, rbac.VerbGet, key); err == nil {
		return nil
	}
	return az.check(ctx, caller, rbac.VerbList, api.Key{Kind: api.KindEvent, Namespace: api.EventNamespaceFor(key)})
}

// maxSelectedFetches bounds the store pages one selected ListPage reads
// to fill its page; the page may then hold fewer than limit objects with
// a continue token, as the Kubernetes API allows.
const maxSelectedFetches = 8

// ListPage is List a page at a time, as Kubernetes lists with limit and
// continue: at most limit objects (0 = all that remain) that opts select,
// after the page that cont ("" = the first) continues, and the token of
// the next page ("" after the last). A page may hold fewer than limit
// objects while a token follows (the selector filtered some out).
// Secrets (listed from the secret store) come in one page whatever the
// limit, as a Kubernetes server may do. A malformed or foreign token is
// an error wrapping ports.ErrInvalidContinue.
func (s *Service) ListPage(ctx context.Context, caller Caller, kind, namespace string, opts ListOptions, limit int, cont string) ([]api.Object, string, error) {
	info, ok := api.KindInfoFor(kind)
	if !ok {
		return nil, "", notFoundf("unknown kind %q", kind)
	}
	sel, err := opts.parse(kind)
	if err != nil {
		return nil, "", err
	}
	if !info.Namespaced {
		namespace = ""
	}
	if _, ok, err := s.authorizeList(ctx, caller, kind, namespace, sel); err != nil {
		return nil, "", err
	} else if ok {
		if cont != "" {
			return nil, "", fmt.Errorf("continue: the Events of one object are listed in one page: %w", ports.ErrInvalidContinue)
		}
		objs, err := s.List(ctx, caller, kind, namespace, opts)
		return objs, "", err
	}
	if info.InSecretStore {
		if cont != "" {
			return nil, "", fmt.Errorf("continue: secrets are listed in one page: %w", ports.ErrInvalidContinue)
		}
		objs, err := s.secretSummaries(ctx, namespace)
		return sel.filter(objs), "", err
	}
	var out []api.Object
	for fetch := 0; ; fetch++ {
		want := 0
		if limit > 0 {
			want = limit - len(out)
		}
		objs, next, err := s.repo.ListPage(ctx, kind, namespace, want, cont)
		if err != nil {
			return nil, "", err
		}
		out = append(out, sel.filter(s.involvedUIDs(ctx, sel, objs))...)
		cont = next
		if cont == "" || limit == 0 || len(out) >= limit || fetch+1 >= maxSelectedFetches {
			return out, cont, nil
		}
	}
}

// Delete removes the object at key and everything it owns
// (CertificateRequests of a Certificate, their Orders and Challenges),
// a Certificate's next-private-key secret and the object's Event, if
// caller may delete it. The Certificate's issued secret is kept, as
// cert-manager does by default, and the other Certificates naming that
// secret are woken: one of them may own it now. A missing object is
// ErrNotFound. opts.Preconditions that the stored object does not meet
// are ErrConflict, and the delete is then conditional on the version
// checked; with opts.DryRun every check is made and nothing is deleted.
func (s *Service) Delete(ctx context.Context, caller Caller, key api.Key, opts DeleteOptions) error {
	if err := s.authz().check(ctx, caller, rbac.VerbDelete, key); err != nil {
		return err
	}
	if secretStoreKind(key.Kind) {
		if !opts.Preconditions.IsZero() {
			return fieldErrorf("preconditions", "%s: preconditions: %v", key, errNoSecretVersions)
		}
		return s.deleteSecret(ctx, key, opts.DryRun)
	}
	var o api.Object
	for attempt := 1; ; attempt++ {
		var err error
		o, err = s.deleteChecked(ctx, key, opts)
		if err == nil {
			break
		}
		// A write between the check and the delete (a controller's status
		// update) is not the caller's conflict: the record is read and
		// checked again, as the Kubernetes API server's conditional delete
		// does, a bounded number of times.
		var race storeRace
		if !errors.As(err, &race) {
			return err
		}
		if attempt == deleteAttempts {
			return fmt.Errorf("%w: %s changed between each of %d checks and its delete: %w", ErrConflict, key, deleteAttempts, race.err)
		}
	}
	if opts.DryRun {
		return nil
	}
	if o != nil && key.Kind == api.KindCertificate {
		s.wakeSharers(ctx, key.Namespace, o.(*api.Certificate).Spec.SecretName)
	}
	// The Events about the object go with it (the kernel's delete takes
	// those of what it owns, and of the object itself when it deleted it).
	if err := kernel.DeleteEvents(ctx, s.repo.Store(), key); err != nil {
		return err
	}
	return nil
}

// deleteAttempts bounds Delete's re-reads when the stored object keeps
// changing between its check and its delete.
const deleteAttempts = 8

// storeRace is a conflict from the store on a delete conditional on the
// version Delete checked: the object changed after the check, so the
// check is worth making again.
type storeRace struct{ err error }

func (r storeRace) Error() string { return r.err.Error() }
func (r storeRace) Unwrap() error { return r.err }

// deleteChecked reads the record at key, checks opts.Preconditions on it
// and, unless opts.DryRun, deletes a Certificate's next private key and
// the object, conditional on the version read when a precondition was
// given. It returns the object as it was (nil when the record no longer
// decodes: such a record can still be deleted). A store conflict on the
// conditional delete is a storeRace.
func (s *Service) deleteChecked(ctx context.Context, key api.Key, opts DeleteOptions) (api.Object, error) {
	// The record, not the object: one that no longer decodes can be deleted.
	rec, err := s.repo.Store().Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	o, derr := repo.Decode(rec)
	if derr != nil {
		o = nil
	}
	var version int64 // unconditional unless a precondition was checked
	if !opts.Preconditions.IsZero() {
		if err := opts.Preconditions.check(key, rec, o); err != nil {
			return nil, err
		}
		version = rec.Version
	}
	if opts.DryRun {
		return o, nil
	}
	switch {
	case key.Kind == api.KindCertificate && !s.deletesSecrets:
		// A role without the secret store (the cloud APIs) may not touch
		// secrets: the next private key is left to its lifecycle.
		s.log.WarnContext(ctx, "secret left in place: this role has no access to the secret store",
			"namespace", key.Namespace, "name", certificates.NextKeySecretName(key.Name))
	case key.Kind == api.KindCertificate:
		// Deleting a missing secret is nil: a retry deletes it again.
		if err := s.secrets.Delete(ctx, key.Namespace, certificates.NextKeySecretName(key.Name)); err != nil {
			return nil, fmt.Errorf("delete next private key of %s: %w", key, err)
		}
	}
	if err := s.objects.DeleteObject(ctx, key, version, api.Key{}); err != nil {
		if version > 0 && errors.Is(err, ports.ErrConflict) {
			return nil, storeRace{err}
		}
		return nil, err
	}
	return o, nil
}

// wakeSharers wakes the Certificates naming namespace/secretName after one
// stopped naming it: one of them may own the secret now
// (certificates.SecretOwner). The delete or update is done; a failure is
// logged, and a Certificate that does not own its secret looks again
// within its WaitPoll by itself.
func (s *Service) wakeSharers(ctx context.Context, namespace, secretName string) {
	if err := s.wakeCertificatesNaming(ctx, namespace, secretName); err != nil {
		s.log.WarnContext(ctx, "the Certificates sharing a secret were not woken; they look again within the wait poll",
			"namespace", namespace, "secret", secretName, "error", err)
	}
}

// wakeCertificatesNaming enqueues the Certificates of namespace whose
// spec.secretName is secretName, for one List of the namespace's
// Certificates.
func (s *Service) wakeCertificatesNaming(ctx context.Context, namespace, secretName string) error {
	certs, err := s.repo.CertificatesNaming(ctx, namespace, secretName, "")
	if err != nil {
		return err
	}
	for _, c := range certs {
		if err := s.objects.Enqueue(ctx, api.KeyOf(c), 0); err != nil {
			return err
		}
	}
	return nil
}

// RenewResult is what Renew did.
type RenewResult struct {
	// Certificate is the Certificate after the call.
	Certificate *api.Certificate `json:"certificate"`
	// InFlight: the Certificate was already being issued, so nothing was
	// written (cmctl renew sets the same condition again); instead the
	// objects of the issuance in flight were woken to run now.
	InFlight bool `json:"inFlight,omitempty"`
	// Woken lists, when InFlight, the objects enqueued to run now: the
	// Certificate and, of its request in flight, the CertificateRequest,
	// its ACME Order and Challenges that are not final.
	Woken []string `json:"woken,omitempty"`
}

// Renew forces the re-issuance of the Certificate at key by setting
// Issuing=True (as `cmctl renew`) if caller may update it, and returns
// the updated Certificate. While an issuance is already in progress it
// writes nothing and wakes that issuance instead (a wake-up
// lost in a crash left an Order waiting for its 10-minute safety net, and
// renew only refused): every object of the chain that is not final is
// enqueued to run now, as a Kubernetes status update makes the informers
// of cert-manager's controllers look again.
func (s *Service) Renew(ctx context.Context, caller Caller, key api.Key) (*RenewResult, error) {
	if key.Kind != api.KindCertificate {
		return nil, badRequestf("renew applies to certificates, not %s", key.Kind)
	}
	if err := s.authz().check(ctx, caller, rbac.VerbUpdate, key); err != nil {
		return nil, err
	}
	o, err := s.renew(ctx, key)
	if errors.Is(err, errInFlight) {
		return s.wakeInFlight(ctx, key)
	}
	if err != nil {
		return nil, err
	}
	return &RenewResult{Certificate: o.(*api.Certificate)}, nil
}

// errInFlight is renew's answer for a Certificate already being issued.
var errInFlight = errors.New("already being issued")

func (s *Service) renew(ctx context.Context, key api.Key) (api.Object, error) {
	return s.mutate(ctx, key, func(o api.Object) error {
		c := o.(*api.Certificate)
		if api.IsTrue(c.Status.Conditions, api.CertificateConditionIssuing) {
			return fmt.Errorf("%s is %w", key, errInFlight)
		}
		api.SetCondition(&c.Status.Conditions, api.Condition{Type: api.CertificateConditionIssuing, Status: api.ConditionTrue,
			Reason: "ManuallyTriggered", Message: "Certificate re-issuance manually triggered", ObservedGeneration: c.Generation}, s.clock.Now())
		return nil
	})
}

// wakeInFlight enqueues, to run now, the Certificate at key and the
// objects of its issuance in flight that are not final (the chain `certfn
// status` shows), and says which.
func (s *Service) wakeInFlight(ctx context.Context, key api.Key) (*RenewResult, error) {
	o, err := s.repo.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("renew %s: %w", key, err)
	}
	rep := &Report{Certificate: o.(*api.Certificate)}
	if err := requestChain(ctx, s.repo.Get, rep); err != nil {
		return nil, fmt.Errorf("renew %s: %w", key, err)
	}
	objs := []api.Object{rep.Certificate}
	if rep.Request != nil {
		objs = append(objs, rep.Request)
	}
	if rep.Order != nil {
		objs = append(objs, rep.Order)
	}
	for _, ch := range rep.Challenges {
		objs = append(objs, ch)
	}
	res := &RenewResult{Certificate: rep.Certificate, InFlight: true}
	for _, o := range objs {
		if f, ok := o.(kernel.Finalizer); ok && f.IsFinal() {
			continue
		}
		k := api.KeyOf(o)
		if err := s.objects.Enqueue(ctx, k, 0); err != nil {
			return nil, fmt.Errorf("renew %s: wake %s: %w", key, k, err)
		}
		res.Woken = append(res.Woken, k.String())
	}
	return res, nil
}

// DefaultApprovalMessage is the message recorded on an approval or denial
// that gives none: "manually approved by <username>".
func DefaultApprovalMessage(approve bool, username string) string {
	if approve {
		return "manually approved by " + username
	}
	return "manually denied by " + username
}

// Approve records an approval (approve=true) or a denial on the
// CertificateRequest at key if caller may approve for its signer
// (docs/design/certificates-api.md: `approve` on `signers`, separate from creating requests). Both are
// permanent: a request already approved, denied or final is refused
// (ErrConflict). An empty reason is "certfn"; an empty message becomes
// DefaultApprovalMessage. It returns the updated request.
//
// A caller who may not read the request learns nothing from the answer:
// the same ErrForbidden, with the same message, whether it exists or not
// and whichever signer it names. A non-empty resourceVersion is a
// precondition, as in Kubernetes: the decision applies only to that
// version of the request, and another is refused (ErrConflict, naming
// metadata.resourceVersion).
func (s *Service) Approve(ctx context.Context, caller Caller, key api.Key, approve bool, reason, message, resourceVersion string) (*api.CertificateRequest, error) {
	if key.Kind != api.KindCertificateRequest {
		return nil, badRequestf("approval applies to certificaterequests, not %s", key.Kind)
	}
	out, err := s.decide(ctx, caller, key, approve, reason, message, resourceVersion,
		func(ctx context.Context, az *authz, o api.Object) error {
			return az.checkApproval(ctx, caller, o.(*api.CertificateRequest))
		},
		func(o api.Object, t string, reason, message string) error {
			cr := o.(*api.CertificateRequest)
			for _, d := range []string{api.CertificateRequestConditionApproved, api.CertificateRequestConditionDenied} {
				if c := api.FindCondition(cr.Status.Conditions, d); c != nil {
					return conflictf("%s is already %s (%s); approval and denial are permanent", key, d, c.Reason)
				}
			}
			if cr.IsFinal() {
				return conflictf("%s is already final", key)
			}
			api.SetCondition(&cr.Status.Conditions, api.Condition{Type: t, Status: api.ConditionTrue, Reason: reason, Message: message}, s.clock.Now())
			return nil
		}, api.CertificateRequestConditionApproved, api.CertificateRequestConditionDenied)
	if err != nil {
		return nil, err
	}
	return out.(*api.CertificateRequest), nil
}

// decide is the approval path CertificateRequests and
// CertificateSigningRequests share (docs/design/certificates-api.md): the caller must be allowed
// by mayDecide on the stored object, and one who may not even read it
// learns nothing (the same ErrForbidden whether it exists or not); an
// empty reason is "certfn", an empty message DefaultApprovalMessage; then
// record writes condition approved or denied, refusing (ErrConflict) a
// request already decided or final, or — with a resourceVersion
// precondition — one whose version is another (checked on the object the
// write is conditional on, so a change after the check is refused too).
func (s *Service) decide(ctx context.Context, caller Caller, key api.Key, approve bool, reason, message, resourceVersion string,
	mayDecide func(ctx context.Context, az *authz, o api.Object) error,
	record func(o api.Object, condition, reason, message string) error, approved, denied string) (api.Object, error) {
	az := s.authz()
	canGet := az.check(ctx, caller, rbac.VerbGet, key) == nil
	generic := forbidden(fmt.Errorf("%s may not approve or deny %s", identity(caller).Username, key))
	o, err := s.repo.Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) && !canGet {
		return nil, generic
	}
	if err != nil {
		return nil, err
	}
	if err := mayDecide(ctx, az, o); err != nil {
		if !canGet && errors.Is(err, ErrForbidden) {
			return nil, generic
		}
		return nil, err
	}
	if strings.TrimSpace(message) == "" {
		message = DefaultApprovalMessage(approve, caller.Username)
	}
	if reason == "" {
		reason = "certfn"
	}
	condition := denied
	if approve {
		condition = approved
	}
	return s.mutate(ctx, key, func(o api.Object) error {
		if v := o.GetObjectMeta().ResourceVersion; resourceVersion != "" && v != resourceVersion {
			return conflictf("%s: metadata.resourceVersion: the precondition is version %q but the object is at version %q: "+
				"it was modified since you read it; read it again and decide on what it holds now", key, resourceVersion, v)
		}
		return record(o, condition, reason, message)
	})
}

// Status explains the Certificate at key (the report `certfn status`
// prints) if caller may get it. The request and issuer in the chain are
// shown only if caller may get them too; the secret only where the
// service reads secrets (local mode).
func (s *Service) Status(ctx context.Context, caller Caller, key api.Key) (*Report, error) {
	if key.Kind != api.KindCertificate {
		return nil, badRequestf("status applies to certificates, not %s", key.Kind)
	}
	az := s.authz()
	lookup := func(ctx context.Context, k api.Key) (api.Object, error) {
		if err := az.check(ctx, caller, rbac.VerbGet, k); err != nil {
			return nil, err
		}
		return s.repo.Get(ctx, k)
	}
	var secrets SecretReader
	if s.readSecrets {
		secrets = func(ctx context.Context, namespace, name string) ([]byte, error) {
			sec, err := s.secrets.Get(ctx, namespace, name)
			if err != nil {
				return nil, err
			}
			if sec.Annotations[api.AnnotationCertificateName] != key.Name {
				return nil, ErrSecretNotOwned
			}
			return sec.Data["tls.crt"], nil
		}
	}
	events := func(ctx context.Context, k api.Key) ([]api.Event, error) {
		if err := s.mayReadEventsOf(ctx, az, caller, k); err != nil {
			return nil, err
		}
		return s.repo.EventsOf(ctx, k)
	}
	rep, err := Explain(ctx, lookup, events, secrets, key)
	if err == nil && s.secretRef != nil && rep.Secret.Name != "" {
		rep.Secret.Reference = s.secretRef(rep.Secret.Namespace, rep.Secret.Name)
	}
	return rep, err
}

// CertificatePEM returns the tls.crt of the secret namespace/name (the
// certificate chain only), for Status and for a local front end that
// serves a certificate certfn issued for itself.
func (s *Service) CertificatePEM(ctx context.Context, namespace, name string) ([]byte, error) {
	sec, err := s.secrets.Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return sec.Data["tls.crt"], nil
}

// mutate loads key, applies fn and writes the object conditionally,
// retrying lost races (fn runs again on the fresh object), and returns
// the written object.
func (s *Service) mutate(ctx context.Context, key api.Key, fn func(o api.Object) error) (api.Object, error) {
	for attempt := 0; ; attempt++ {
		o, err := s.repo.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		if err := fn(o); err != nil {
			return nil, err
		}
		_, err = s.objects.UpdateObject(ctx, o, versionOf(o), s.clock.Now().Add(followUpGrace))
		if errors.Is(err, ports.ErrConflict) && attempt < maxConflictRetries {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("update %s: %w", key, err)
		}
		return o, nil
	}
}
