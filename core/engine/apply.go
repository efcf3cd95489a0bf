package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/validation"
)

// Caller is the authenticated identity behind an API or CLI call. It is
// recorded on CertificateRequests it creates (seed 004: never taken from
// the submitted body).
type Caller struct {
	Username string
	UID      string
	Groups   []string
	Extra    map[string][]string
}

// ApplyResult reports what Apply did.
type ApplyResult struct {
	Key     api.Key
	Created bool
	Changed bool
	// Ignored lists cert-manager fields present but not acted on.
	Ignored []string
}

// maxConflictRetries bounds reload-and-retry loops of API-side writes.
const maxConflictRetries = 5

// Apply validates obj and creates it, or updates its spec, labels and
// annotations while keeping status and identity (kubectl apply semantics).
// Invalid input is rejected with field-path errors and nothing is stored.
// A CertificateRequest's spec is immutable; its identity fields come from
// the caller.
func (e *Engine) Apply(ctx context.Context, obj api.Object, caller Caller) (ApplyResult, error) {
	key := api.KeyOf(obj)
	if cr, ok := obj.(*api.CertificateRequest); ok {
		cr.Spec.Username, cr.Spec.UID, cr.Spec.Groups, cr.Spec.Extra = caller.Username, caller.UID, caller.Groups, caller.Extra
	}
	if err := e.validate(obj); err != nil {
		return ApplyResult{Key: key}, err
	}
	res := ApplyResult{Key: key, Ignored: api.IgnoredFields(obj)}
	if c, ok := obj.(*api.Certificate); ok {
		c.Status.IgnoredFields = res.Ignored
	}
	for attempt := 0; ; attempt++ {
		created, changed, err := e.applyOnce(ctx, obj)
		if errors.Is(err, ports.ErrConflict) || errors.Is(err, ports.ErrAlreadyExists) {
			if attempt < maxConflictRetries {
				continue
			}
		}
		res.Created, res.Changed = created, changed
		return res, err
	}
}

func (e *Engine) applyOnce(ctx context.Context, obj api.Object) (created, changed bool, err error) {
	key := api.KeyOf(obj)
	now := e.cfg.Clock.Now()
	rec, err := e.cfg.Store.Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		m := obj.GetObjectMeta()
		m.UID, m.CreationTimestamp, m.Generation, m.ResourceVersion = newUID(), api.NewTime(now), 1, ""
		clearStatus(obj)
		if _, err := e.direct().create(ctx, obj, now.Add(certificates.FollowUpGrace)); err != nil {
			return false, false, fmt.Errorf("create %s: %w", key, err)
		}
		return true, true, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("read %s: %w", key, err)
	}
	old, err := decode(rec)
	if err != nil {
		return false, false, err
	}
	if cr, ok := obj.(*api.CertificateRequest); ok {
		oldCR := old.(*api.CertificateRequest)
		// Identity stays the creator's; the rest of the spec is immutable.
		cr.Spec.Username, cr.Spec.UID, cr.Spec.Groups, cr.Spec.Extra = oldCR.Spec.Username, oldCR.Spec.UID, oldCR.Spec.Groups, oldCR.Spec.Extra
		if errl := validation.CertificateRequestUpdate(oldCR, cr); len(errl) > 0 {
			return false, false, errs.Permanent(fmt.Errorf("%s: %w", key, errl.Err()))
		}
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
	setSpec(old, obj)
	om.Labels, om.Annotations = nm.Labels, nm.Annotations
	if specChanged {
		om.Generation++
	}
	if _, err := e.direct().update(ctx, old, rec.Version, now.Add(certificates.FollowUpGrace)); err != nil {
		return false, false, fmt.Errorf("update %s: %w", key, err)
	}
	return false, true, nil
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
	keep := reflect.Value{}
	if c, ok := obj.(*api.Certificate); ok {
		keep = reflect.ValueOf(c.Status.IgnoredFields)
	}
	v.Set(reflect.Zero(v.Type()))
	if c, ok := obj.(*api.Certificate); ok && keep.IsValid() {
		c.Status.IgnoredFields = keep.Interface().([]string)
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

// Get returns one stored object.
func (e *Engine) Get(ctx context.Context, key api.Key) (api.Object, error) {
	rec, err := e.cfg.Store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return decode(rec)
}

// List returns the stored objects of a kind (namespace "" = all).
func (e *Engine) List(ctx context.Context, kind, namespace string) ([]api.Object, error) {
	recs, err := e.cfg.Store.List(ctx, ports.ListOptions{Kind: kind, Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", kind, err)
	}
	out := make([]api.Object, 0, len(recs))
	for _, r := range recs {
		o, err := decode(r)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// Delete removes a resource and everything it owns (CertificateRequests of
// a Certificate, and so on), plus a Certificate's next-private-key secret.
// The Certificate's issued secret is kept, as cert-manager does by default.
func (e *Engine) Delete(ctx context.Context, key api.Key) error {
	if key.Kind == api.KindCertificate {
		if err := e.cfg.Secrets.Delete(ctx, key.Namespace, certificates.NextKeySecretName(key.Name)); err != nil {
			return fmt.Errorf("delete next private key of %s: %w", key, err)
		}
	}
	if err := e.direct().deleteTree(ctx, key, 0); err != nil {
		return err
	}
	// The Event about the object goes with it (a user's delete; records
	// the steps delete themselves leave theirs to the store's TTL).
	if err := e.cfg.Store.Delete(ctx, api.EventKeyFor(key), 0); err != nil && !errors.Is(err, ports.ErrNotFound) {
		return fmt.Errorf("delete the Event of %s: %w", key, err)
	}
	return nil
}

// deleteTree deletes owned records first (so a crash leaves at worst an
// owner without children, which its steps recreate), then key.
func (e *run) deleteTree(ctx context.Context, key api.Key, version int64) error {
	for _, kind := range ownedKinds[key.Kind] {
		children, err := e.cfg.Store.List(ctx, ports.ListOptions{Kind: kind, Namespace: key.Namespace, Owner: key})
		if err != nil {
			return fmt.Errorf("list %s owned by %s: %w", kind, key, err)
		}
		for _, c := range children {
			if err := e.deleteTree(ctx, c.Key, 0); err != nil {
				return err
			}
		}
	}
	if d, ok := e.cfg.Handlers[key.Kind].(Deleter); ok {
		rec, err := e.cfg.Store.Get(ctx, key)
		if err == nil {
			err = d.BeforeDelete(ctx, e, rec)
		}
		if err != nil && !errors.Is(err, ports.ErrNotFound) {
			return fmt.Errorf("before deleting %s: %w", key, err)
		}
	}
	err := e.cfg.Store.Delete(ctx, key, version)
	if errors.Is(err, ports.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	e.cfg.Metrics.Inc("certfn_state_writes_total", "kind", key.Kind)
	return nil
}

// ownedKinds lists which kinds a kind may own.
var ownedKinds = map[string][]string{
	api.KindCertificate:        {api.KindCertificateRequest},
	api.KindCertificateRequest: {"Order"},
	"Order":                    {"Challenge"},
}

// mutate loads key, applies fn and writes the object conditionally,
// retrying lost races (fn runs again on the fresh object).
func (e *Engine) mutate(ctx context.Context, key api.Key, fn func(o api.Object) error) error {
	for attempt := 0; ; attempt++ {
		rec, err := e.cfg.Store.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("get %s: %w", key, err)
		}
		o, err := decode(rec)
		if err != nil {
			return err
		}
		if err := fn(o); err != nil {
			return err
		}
		_, err = e.direct().update(ctx, o, rec.Version, e.cfg.Clock.Now().Add(certificates.FollowUpGrace))
		if errors.Is(err, ports.ErrConflict) && attempt < maxConflictRetries {
			continue
		}
		return err
	}
}

// Renew forces a re-issuance by setting Issuing=True (as `cmctl renew`).
// It refuses while an issuance is already in progress.
func (e *Engine) Renew(ctx context.Context, key api.Key) error {
	return e.mutate(ctx, key, func(o api.Object) error {
		c := o.(*api.Certificate)
		if api.IsTrue(c.Status.Conditions, api.CertificateConditionIssuing) {
			return errs.Permanentf("%s is already being issued", key)
		}
		api.SetCondition(&c.Status.Conditions, api.Condition{Type: api.CertificateConditionIssuing, Status: api.ConditionTrue,
			Reason: "ManuallyTriggered", Message: "Certificate re-issuance manually triggered", ObservedGeneration: c.Generation}, e.cfg.Clock.Now())
		return nil
	})
}

// SetApproval records Approved (approve=true) or Denied on a request. Both
// are permanent: a request already approved or denied is refused. The
// caller's permission is checked by the API layer before this call.
func (e *Engine) SetApproval(ctx context.Context, key api.Key, approve bool, reason, message string) error {
	if reason == "" {
		reason = "certfn"
	}
	return e.mutate(ctx, key, func(o api.Object) error {
		cr := o.(*api.CertificateRequest)
		for _, t := range []string{api.CertificateRequestConditionApproved, api.CertificateRequestConditionDenied} {
			if c := api.FindCondition(cr.Status.Conditions, t); c != nil {
				return errs.Permanentf("%s is already %s (%s); approval and denial are permanent", key, t, c.Reason)
			}
		}
		if cr.IsFinal() {
			return errs.Permanentf("%s is already final", key)
		}
		t := api.CertificateRequestConditionDenied
		if approve {
			t = api.CertificateRequestConditionApproved
		}
		api.SetCondition(&cr.Status.Conditions, api.Condition{Type: t, Status: api.ConditionTrue, Reason: reason, Message: message}, e.cfg.Clock.Now())
		return nil
	})
}

// Version returns the stored version of key (for tests and the CLI).
func (e *Engine) Version(ctx context.Context, key api.Key) (int64, error) {
	rec, err := e.cfg.Store.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	return rec.Version, nil
}

// ValidateAll validates every object and returns all errors at once, so a
// caller can refuse a whole batch before storing any of it.
func (e *Engine) ValidateAll(objs []api.Object) error {
	var msgs []string
	for _, o := range objs {
		if err := e.validate(o); err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) > 0 {
		return errs.Permanent(errors.New(strings.Join(msgs, "; ")))
	}
	return nil
}

// validate runs the webhook-equivalent validation of obj: field rules for
// every kind, policy compilation (CEL, wildcards, plugins) and RBAC rules.
func (e *Engine) validate(obj api.Object) error {
	key := api.KeyOf(obj)
	if errl := validation.Object(obj); len(errl) > 0 {
		return errs.Permanent(fmt.Errorf("%s is invalid: %w", key, errl.Err()))
	}
	switch o := obj.(type) {
	case *api.CertificateRequestPolicy:
		if _, err := e.cfg.Evaluator.Compile(o); err != nil {
			return errs.Permanent(fmt.Errorf("%s is invalid: %w", key, err))
		}
	case *api.Role, *api.ClusterRole, *api.RoleBinding, *api.ClusterRoleBinding:
		if err := rbac.Validate(obj); err != nil {
			return errs.Permanent(fmt.Errorf("%s is invalid: %w", key, err))
		}
	}
	return nil
}
