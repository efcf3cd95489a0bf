package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/validation"
)

// ApplyResult reports what Apply did with one object.
type ApplyResult struct {
	Key     api.Key
	Created bool
	Changed bool
	// Ignored lists cert-manager fields present but not acted on.
	Ignored []string
}

// maxConflictRetries bounds reload-and-retry loops of the service's writes.
const maxConflictRetries = 5

// followUpGrace is when an object the service wrote is due if its wake-up
// message is lost (the scheduler's safety net).
const followUpGrace = certificates.FollowUpGrace

// Verbs that guard RBAC objects against privilege escalation, as in
// Kubernetes.
const (
	// VerbBind on a Role or ClusterRole (named by resourceNames) allows
	// writing bindings that grant it.
	VerbBind = "bind"
	// VerbEscalate on roles or clusterroles allows writing their rules.
	VerbEscalate = "escalate"
)

// MaxApplyObjects bounds one apply: a larger batch is refused before
// anything is read or validated.
const MaxApplyObjects = 1000

// machineKinds are written only by certfn itself, never through the
// service: the ACME issuer's Orders and Challenges (docs/design/acme-orders.md: "not
// intended to be created by users"; an Order or Challenge written by a
// caller would make certfn's ACME account validate and order names for
// it), the Challenge leases, and the Events failed reconciles record.
// Callers may read them and, with permission, delete them.
var machineKinds = map[string]string{
	api.KindOrder:          "certfn's ACME issuer",
	api.KindChallenge:      "certfn's ACME issuer",
	api.KindChallengeLease: "certfn's ACME issuer",
	api.KindEvent:          "certfn, when a reconcile fails or a CertificateSigningRequest waits",
}

// Apply checks that caller may create (or update, when it exists) each
// object — reading each once, before any validation work — then validates
// every object once, and only then applies them in order, as `kubectl
// apply` does: a new object is created, an existing one gets the new spec,
// labels and annotations and keeps its status and identity. If any object
// is forbidden or invalid (*ValidationError, with every invalid object's
// field path; its text is bounded), nothing is stored. A
// CertificateRequest's spec is immutable; its identity fields come from
// caller. Orders, Challenges, Challenge leases and Events are refused
// (ErrForbidden) for every caller: only certfn writes them. With an
// objects quota (Quotas.ObjectsPerNamespace), a batch whose creates would
// take a namespace over it is refused whole (ErrForbidden, "exceeded
// quota"), after authorization and validation. An object whose manifest
// carries metadata.resourceVersion is written only over that version of
// the stored object (ErrConflict otherwise, also when it does not exist),
// as an update through the Kubernetes API; nothing of the batch is then
// stored if the check fails before the first write.
func (s *Service) Apply(ctx context.Context, caller Caller, objs []api.Object) ([]ApplyResult, error) {
	p, err := s.checkApply(ctx, caller, objs)
	if err != nil {
		return nil, err
	}
	out := make([]ApplyResult, 0, len(objs))
	for i, o := range objs {
		var res ApplyResult
		var err error
		if sec, ok := o.(*api.Secret); ok {
			res, err = s.applySecret(ctx, sec, p.oldSecrets[i])
		} else {
			res, err = s.applyObject(ctx, o, p.stored[i])
		}
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// checkedApply is what checkApply read: for each object, the stored one
// (nil: none) or, for a secret-store kind, the stored secret.
type checkedApply struct {
	stored     []api.Object
	oldSecrets []*ports.Secret
}

// checkApply makes every check of Apply — kinds, authorization (each
// object read once), validation, escalation, quota — and writes nothing.
func (s *Service) checkApply(ctx context.Context, caller Caller, objs []api.Object) (*checkedApply, error) {
	switch {
	case len(objs) == 0:
		return nil, badRequestf("no resources to apply")
	case len(objs) > MaxApplyObjects:
		return nil, badRequestf("%d objects in one apply: at most %d", len(objs), MaxApplyObjects)
	}
	for _, o := range objs {
		key := api.KeyOf(o)
		if secretStoreKind(key.Kind) {
			if err := s.refuseSecretWrites(key); err != nil {
				return nil, err
			}
		}
		if who, ok := machineKinds[key.Kind]; ok {
			info, _ := api.KindInfoFor(key.Kind)
			return nil, forbidden(fmt.Errorf("%s: %s are created and changed only by %s; you may read them and, with permission, delete them",
				key, info.Plural, who))
		}
	}
	az := s.authz()
	stored := make([]api.Object, len(objs))
	oldSecrets := make([]*ports.Secret, len(objs)) // for the secret-store kinds
	for i, o := range objs {
		key := api.KeyOf(o)
		if cr, ok := o.(*api.CertificateRequest); ok {
			cr.Spec.Username, cr.Spec.UID, cr.Spec.Groups, cr.Spec.Extra = caller.Username, caller.UID, caller.Groups, caller.Extra
		}
		setRequester(o, caller)
		if az.check(ctx, caller, rbac.VerbCreate, key) != nil && az.check(ctx, caller, rbac.VerbUpdate, key) != nil {
			// Neither verb: refused before the object is read, with one
			// message whether it exists or not.
			return nil, forbidden(fmt.Errorf("%s may not create or update %s", identity(caller).Username, key))
		}
		verb := rbac.VerbCreate
		if secretStoreKind(key.Kind) {
			sec, err := s.existingSecret(ctx, key)
			if err != nil {
				return nil, err
			}
			if oldSecrets[i] = sec; sec != nil {
				verb = rbac.VerbUpdate
			}
		} else {
			old, err := s.repo.Get(ctx, key)
			switch {
			case err == nil:
				verb, stored[i] = rbac.VerbUpdate, old
			case !errors.Is(err, ports.ErrNotFound):
				return nil, err
			}
		}
		if err := az.check(ctx, caller, verb, key); err != nil {
			if az.check(ctx, caller, rbac.VerbGet, key) != nil {
				// A caller who may not read the object learns nothing
				// about it: the same answer whether it exists or not.
				return nil, forbidden(fmt.Errorf("%s may not create or update %s", identity(caller).Username, key))
			}
			return nil, err
		}
		if secretStoreKind(key.Kind) {
			if rv := o.GetObjectMeta().ResourceVersion; rv != "" {
				return nil, fieldErrorf("metadata.resourceVersion", "%s: metadata.resourceVersion %q: %v; leave it out", key, rv, errNoSecretVersions)
			}
		} else if err := checkManifestVersion(o, stored[i]); err != nil {
			return nil, err
		}
	}
	verr := &ValidationError{}
	var msgs []string
	for i, o := range objs {
		field, err := s.validate(o)
		if err == nil && stored[i] != nil {
			field, err = validateUpdate(api.KeyOf(o), stored[i], o)
		}
		if err != nil {
			msgs = append(msgs, err.Error())
			verr.Details = append(verr.Details, ErrorDetail{Object: api.KeyOf(o).String(), Field: field, Error: api.Truncate(err.Error(), 4*api.MaxReportedLine)})
		}
	}
	if len(verr.Details) > 0 {
		verr.Message = api.JoinBounded(len(msgs), func(i int) string { return msgs[i] })
		verr.Message = strings.ReplaceAll(verr.Message, "\n", "; ")
		if len(verr.Details) > api.MaxReportedErrors {
			verr.Details = verr.Details[:api.MaxReportedErrors]
		}
		return nil, verr
	}
	for _, o := range objs {
		if err := s.checkEscalation(ctx, az, caller, o); err != nil {
			return nil, err
		}
	}
	if err := s.checkObjectQuota(ctx, objs, stored); err != nil {
		return nil, err
	}
	return &checkedApply{stored: stored, oldSecrets: oldSecrets}, nil
}

// QuotaKinds are the kinds Quotas.ObjectsPerNamespace counts: the
// namespaced kinds users create. Orders, Challenges and Events are
// certfn's own bookkeeping and are not counted.
var QuotaKinds = []string{api.KindCertificate, api.KindCertificateRequest, api.KindIssuer, api.KindRole, api.KindRoleBinding}

// checkObjectQuota refuses a batch whose creates would take a namespace
// over Quotas.ObjectsPerNamespace (ErrForbidden, "exceeded quota", naming
// the namespace, the count and the limit): the objects of QuotaKinds the
// namespace holds (one List per kind) plus the new ones of the batch
// (stored[i] == nil: not stored when Apply read it). Updates are not
// counted, so a namespace over its quota (lowered since) can still change
// what it holds. CertificateSigningRequests, cluster-scoped, count by
// requester against the same limit (checkCSRQuota). Without a quota nothing is listed. Two applies at the same
// moment may both pass: the quota bounds what one apply adds, not a race.
func (s *Service) checkObjectQuota(ctx context.Context, objs, stored []api.Object) error {
	limit := s.quotas.ObjectsPerNamespace
	if limit <= 0 {
		return nil
	}
	created := map[string]map[api.Key]bool{} // namespace → keys the batch creates
	for i, o := range objs {
		key := api.KeyOf(o)
		if stored[i] != nil || key.Namespace == "" || !slices.Contains(QuotaKinds, key.Kind) {
			continue
		}
		if created[key.Namespace] == nil {
			created[key.Namespace] = map[api.Key]bool{}
		}
		created[key.Namespace][key] = true
	}
	if err := s.checkCSRQuota(ctx, objs, stored, limit); err != nil {
		return err
	}
	for _, ns := range slices.Sorted(maps.Keys(created)) {
		held := 0
		for _, kind := range QuotaKinds {
			recs, err := s.repo.Store().List(ctx, ports.ListOptions{Kind: kind, Namespace: ns})
			if err != nil {
				return fmt.Errorf("count the %s of namespace %s for the objects quota: %w", kind, ns, err)
			}
			held += len(recs)
		}
		if n := len(created[ns]); held+n > limit {
			return forbidden(fmt.Errorf("exceeded quota: namespace %s holds %d objects and this apply would create %d more, over its quota of %d "+
				"(CERTFN_QUOTA_OBJECTS, --quota-objects; counting Certificates, CertificateRequests, Issuers, Roles and RoleBindings); nothing was applied",
				ns, held, n, limit))
		}
	}
	return nil
}

// checkCSRQuota is the objects quota for CertificateSigningRequests,
// which are cluster-scoped: by requester (spec.username, which Apply set
// from the caller), the same limit as a namespace's. A batch whose new
// CSRs would take a requester over it is refused (ErrForbidden, "exceeded
// quota", naming the requester, the count and the limit), after one List
// of every CSR; updates are not counted.
func (s *Service) checkCSRQuota(ctx context.Context, objs, stored []api.Object, limit int) error {
	created := map[string]int{} // requester → CSRs the batch creates
	for i, o := range objs {
		if c, ok := o.(*api.CertificateSigningRequest); ok && stored[i] == nil {
			created[c.Spec.Username]++
		}
	}
	if len(created) == 0 {
		return nil
	}
	recs, err := s.repo.Store().List(ctx, ports.ListOptions{Kind: api.KindCertificateSigningRequest})
	if err != nil {
		return fmt.Errorf("count the CertificateSigningRequests for the objects quota: %w", err)
	}
	held := map[string]int{}
	for _, rec := range recs {
		var c api.CertificateSigningRequest
		if err := json.Unmarshal(rec.Data, &c); err != nil {
			return fmt.Errorf("count the CertificateSigningRequests for the objects quota: decode %s: %w", rec.Key, err)
		}
		held[c.Spec.Username]++
	}
	for _, user := range slices.Sorted(maps.Keys(created)) {
		if n := created[user]; held[user]+n > limit {
			return forbidden(fmt.Errorf("exceeded quota: requester %q holds %d CertificateSigningRequests and this apply would create %d more, over its quota of %d "+
				"(CERTFN_QUOTA_OBJECTS, --quota-objects; CertificateSigningRequests count by requester); nothing was applied",
				user, held[user], n, limit))
		}
	}
	return nil
}

// validate runs the webhook-equivalent validation of obj: field rules for
// every kind, policy compilation (CEL, wildcards, plugins) and RBAC rules.
// It returns the path of the first field the error names, and the error.
func (s *Service) validate(obj api.Object) (field string, err error) {
	key := api.KeyOf(obj)
	if errl := validation.Object(obj); len(errl) > 0 {
		return errl[0].Path, errs.Permanent(fmt.Errorf("%s is invalid: %w", key, errl.Err()))
	}
	if n, err := api.EncodedSize(obj); err != nil {
		return "", errs.Permanent(fmt.Errorf("%s is invalid: %w", key, err))
	} else if n > api.MaxObjectBytes {
		return "", errs.Permanent(fmt.Errorf("%s is too large: %d bytes as JSON, over the limit of %d bytes an object may have (the limit every store can hold)",
			key, n, api.MaxObjectBytes))
	}
	switch o := obj.(type) {
	case *api.Secret:
		return validateSecret(o)
	case *api.CertificateRequestPolicy:
		if _, err := s.evaluator.Compile(o); err != nil {
			return "", errs.Permanent(fmt.Errorf("%s is invalid: %w", key, err))
		}
	case *api.Role, *api.ClusterRole, *api.RoleBinding, *api.ClusterRoleBinding:
		if err := rbac.Validate(obj); err != nil {
			field := ""
			var fe api.FieldErrors
			if errors.As(err, &fe) && len(fe) > 0 {
				field = fe[0].Path
			}
			return field, errs.Permanent(fmt.Errorf("%s is invalid: %w", key, err))
		}
	}
	return "", nil
}

// checkEscalation keeps create/update on RBAC objects from granting more
// than the caller may grant: writing a Role or ClusterRole also needs
// `escalate` on it, writing a binding also needs `bind` on the role it
// refers to. This is stricter than Kubernetes, which also accepts a caller
// who already holds every permission of the role; here such callers need
// an explicit grant (system:masters has all of them).
func (s *Service) checkEscalation(ctx context.Context, az *authz, caller Caller, o api.Object) error {
	var ref api.RoleRef
	ns := o.GetObjectMeta().Namespace
	switch v := o.(type) {
	case *api.Role, *api.ClusterRole:
		return az.check(ctx, caller, VerbEscalate, api.KeyOf(o))
	case *api.RoleBinding:
		ref = v.RoleRef
	case *api.ClusterRoleBinding:
		ref, ns = v.RoleRef, ""
	default:
		return nil
	}
	// As in Kubernetes, `bind` for a RoleBinding is checked in the
	// binding's namespace, also for a ClusterRole it refers to.
	info, ok := api.KindInfoFor(ref.Kind)
	if !ok {
		return fmt.Errorf("roleRef.kind %q is not a role kind", ref.Kind)
	}
	return az.checkAttrs(ctx, caller, rbac.Attributes{Verb: VerbBind, APIGroup: api.RBACGroup, Resource: info.Plural, Namespace: ns, Name: ref.Name})
}

// applyObject creates obj or updates the stored object, retrying lost
// races on a fresh read; stored is the object as Apply read it (nil:
// missing), used by the first attempt.
func (s *Service) applyObject(ctx context.Context, obj api.Object, stored api.Object) (ApplyResult, error) {
	key := api.KeyOf(obj)
	res := ApplyResult{Key: key, Ignored: api.IgnoredFields(obj)}
	if c, ok := obj.(*api.Certificate); ok {
		c.Status.IgnoredFields = res.Ignored
	}
	for attempt := 0; ; attempt++ {
		created, changed, err := s.applyOnce(ctx, obj, stored)
		if errors.Is(err, ports.ErrConflict) || errors.Is(err, ports.ErrAlreadyExists) {
			if attempt < maxConflictRetries {
				if stored, err = s.repo.Get(ctx, key); errors.Is(err, ports.ErrNotFound) {
					stored, err = nil, nil
				}
				if err == nil {
					continue
				}
			}
		}
		res.Created, res.Changed = created, changed
		return res, err
	}
}

func (s *Service) applyOnce(ctx context.Context, obj, old api.Object) (created, changed bool, err error) {
	key := api.KeyOf(obj)
	now := s.clock.Now()
	if err := checkManifestVersion(obj, old); err != nil {
		// Checked again on every attempt: a lost race is not retried
		// over a resourceVersion the caller named.
		return false, false, err
	}
	if old == nil {
		m := obj.GetObjectMeta()
		m.UID, m.CreationTimestamp, m.Generation, m.ResourceVersion = "", nil, 0, ""
		clearStatus(obj)
		if _, err := s.objects.CreateObject(ctx, obj, now.Add(followUpGrace)); err != nil {
			return false, false, fmt.Errorf("create %s: %w", key, err)
		}
		return true, true, nil
	}
	if _, err := validateUpdate(key, old, obj); err != nil {
		return false, false, err
	}
	om, nm := old.GetObjectMeta(), obj.GetObjectMeta()
	specChanged := !reflect.DeepEqual(specOf(old), specOf(obj))
	metaChanged := !mapsEqual(om.Labels, nm.Labels) || !mapsEqual(om.Annotations, nm.Annotations)
	ignoredChanged := false
	if c, ok := obj.(*api.Certificate); ok {
		oc := old.(*api.Certificate)
		ignoredChanged = !reflect.DeepEqual(oc.Status.IgnoredFields, c.Status.IgnoredFields)
		oc.Status.IgnoredFields = c.Status.IgnoredFields
	}
	if !specChanged && !metaChanged && !ignoredChanged {
		return false, false, nil
	}
	var leftSecret string // the secret a Certificate no longer names
	if c, ok := obj.(*api.Certificate); ok {
		if was := old.(*api.Certificate).Spec.SecretName; was != c.Spec.SecretName {
			leftSecret = was
		}
	}
	setSpec(old, obj)
	om.Labels, om.Annotations = nm.Labels, nm.Annotations
	if specChanged {
		om.Generation++
	}
	if _, err := s.objects.UpdateObject(ctx, old, versionOf(old), now.Add(followUpGrace)); err != nil {
		return false, false, fmt.Errorf("update %s: %w", key, err)
	}
	if leftSecret != "" {
		s.wakeSharers(ctx, key.Namespace, leftSecret)
	}
	return false, true, nil
}

// validateUpdate checks obj as an update of the stored old, for the kinds
// whose updates have rules of their own: a CertificateRequest keeps its
// creator's identity, and its spec and cert-manager annotations are
// immutable (validation.CertificateRequestUpdate); a
// CertificateSigningRequest as checkCSRUpdate says. It returns the path
// of the first field the error names, and the error. checkApply calls it
// before anything of the batch is written, applyOnce again on the object
// it writes over.
func validateUpdate(key api.Key, old, obj api.Object) (field string, err error) {
	if cr, ok := obj.(*api.CertificateRequest); ok {
		oldCR := old.(*api.CertificateRequest)
		// Identity stays the creator's; the rest of the spec is immutable.
		cr.Spec.Username, cr.Spec.UID, cr.Spec.Groups, cr.Spec.Extra = oldCR.Spec.Username, oldCR.Spec.UID, oldCR.Spec.Groups, oldCR.Spec.Extra
		if errl := validation.CertificateRequestUpdate(oldCR, cr); len(errl) > 0 {
			return errl[0].Path, errs.Permanent(fmt.Errorf("%s: %w", key, errl.Err()))
		}
	}
	return checkCSRUpdate(key, old, obj)
}

// versionOf is the stored version a read object carries.
func versionOf(o api.Object) int64 {
	v, _ := strconv.ParseInt(o.GetObjectMeta().ResourceVersion, 10, 64)
	return v
}

// specOf returns the value of obj's Spec field (nil when it has none).
func specOf(obj api.Object) any {
	v := reflect.ValueOf(obj).Elem().FieldByName("Spec")
	if !v.IsValid() {
		// Kinds without a spec (RBAC, Namespace): compare the whole object
		// minus metadata and status.
		b, _ := json.Marshal(obj)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		delete(m, "metadata")
		delete(m, "status")
		return m
	}
	return v.Interface()
}

func setSpec(dst, src api.Object) {
	dv := reflect.ValueOf(dst).Elem()
	if f := dv.FieldByName("Spec"); f.IsValid() {
		f.Set(reflect.ValueOf(src).Elem().FieldByName("Spec"))
		return
	}
	// No spec: copy every field but TypeMeta, ObjectMeta and Status.
	sv := reflect.ValueOf(src).Elem()
	for i := 0; i < dv.NumField(); i++ {
		switch dv.Type().Field(i).Name {
		case "TypeMeta", "ObjectMeta", "Status":
			continue
		}
		dv.Field(i).Set(sv.Field(i))
	}
}

func clearStatus(obj api.Object) {
	v := reflect.ValueOf(obj).Elem().FieldByName("Status")
	if !v.IsValid() {
		return
	}
	var keep []string
	c, isCert := obj.(*api.Certificate)
	if isCert {
		keep = c.Status.IgnoredFields
	}
	v.Set(reflect.Zero(v.Type()))
	if isCert {
		c.Status.IgnoredFields = keep
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
