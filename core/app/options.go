package app

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// ListOptions are the Kubernetes list parameters List and ListPage
// honour. Both selectors are Kubernetes': LabelSelector in the full label
// selector syntax (key=value, key==value, key!=value, key, !key, key in
// (a,b), key notin (a,b), key>N, key<N; requirements joined by commas,
// all must hold), FieldSelector on metadata.name and metadata.namespace
// — and for Events also involvedObject.kind, involvedObject.namespace,
// involvedObject.name, involvedObject.uid, involvedObject.apiVersion,
// reason, type, source and reportingComponent, as the Kubernetes API
// server offers them for core/v1 Events — with =, == and != (any other
// field is refused, "field label not supported", as the Kubernetes API
// server refuses it). Empty selects everything.
type ListOptions struct {
	LabelSelector string
	FieldSelector string
}

// selector is a parsed ListOptions.
type selector struct {
	labels labels.Selector
	fields fields.Selector
}

// eventFieldLabels are the field selector's fields of Events beyond
// metadata.*, the Kubernetes API server's for core/v1 Events.
var eventFieldLabels = []string{"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
	"involvedObject.uid", "involvedObject.apiVersion", "reason", "type", "source", "reportingComponent"}

// eventFields is an Event's field set for a field selector.
func eventFields(e *api.Event) fields.Set {
	return fields.Set{"metadata.name": e.Name, "metadata.namespace": e.Namespace,
		"involvedObject.kind": e.InvolvedObject.Kind, "involvedObject.namespace": e.InvolvedObject.Namespace,
		"involvedObject.name": e.InvolvedObject.Name, "involvedObject.uid": e.InvolvedObject.UID,
		"involvedObject.apiVersion": e.InvolvedObject.APIVersion, "reason": e.Reason, "type": e.Type,
		"source": e.Source.Component, "reportingComponent": e.ReportingComponent}
}

// usesField says whether the field selector has a requirement on field.
func (s selector) usesField(field string) bool {
	if s.fields == nil {
		return false
	}
	for _, r := range s.fields.Requirements() {
		if r.Field == field {
			return true
		}
	}
	return false
}

// pinned is the object a selector of Events pins down with equalities
// on involvedObject.kind and involvedObject.name (and
// involvedObject.namespace, else namespace): ok false when it pins none.
func (s selector) pinned(namespace string) (api.Key, bool) {
	var k api.Key
	nsSet := false
	for _, r := range s.fields.Requirements() {
		if r.Operator == selection.NotEquals {
			continue
		}
		switch r.Field {
		case "involvedObject.kind":
			k.Kind = r.Value
		case "involvedObject.name":
			k.Name = r.Value
		case "involvedObject.namespace":
			k.Namespace, nsSet = r.Value, true
		}
	}
	if k.Kind == "" || k.Name == "" {
		return api.Key{}, false
	}
	info, ok := api.KindInfoFor(k.Kind)
	if !ok || info.Kind == api.KindEvent {
		return api.Key{}, false
	}
	k.Kind = info.Kind
	switch {
	case !info.Namespaced:
		k.Namespace = ""
	case !nsSet:
		k.Namespace = namespace
	}
	if info.Namespaced && k.Namespace == "" {
		return api.Key{}, false
	}
	return k, true
}

// FieldError is a bad request about one parameter or field: Field names
// it (e.g. labelSelector, preconditions.uid), for a transport's error
// body. It is ErrBadRequest (errors.Is).
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Msg }

// Is makes a FieldError ErrBadRequest.
func (e *FieldError) Is(target error) bool { return target == ErrBadRequest }

func fieldErrorf(field, format string, a ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// supportedFieldLabels are the field selector's fields, as the
// Kubernetes API server offers them for custom resources.
var supportedFieldLabels = map[string]bool{"metadata.name": true, "metadata.namespace": true}

// parse checks both selectors for a listing of kind; an error is a
// FieldError naming labelSelector or fieldSelector and the rule.
func (o ListOptions) parse(kind string) (selector, error) {
	var sel selector
	var err error
	if sel.labels, err = labels.Parse(o.LabelSelector); err != nil {
		return sel, fieldErrorf("labelSelector", "labelSelector %q: %v", o.LabelSelector, err)
	}
	if sel.fields, err = fields.ParseSelector(o.FieldSelector); err != nil {
		return sel, fieldErrorf("fieldSelector", "fieldSelector %q: %v", o.FieldSelector, err)
	}
	supported := "metadata.name, metadata.namespace"
	if kind == api.KindEvent {
		supported += ", " + strings.Join(eventFieldLabels, ", ")
	}
	for _, r := range sel.fields.Requirements() {
		if !supportedFieldLabels[r.Field] && (kind != api.KindEvent || !slices.Contains(eventFieldLabels, r.Field)) {
			return sel, fieldErrorf("fieldSelector", "fieldSelector %q: field label not supported: %s (supported: %s)",
				o.FieldSelector, r.Field, supported)
		}
		switch r.Operator {
		case selection.Equals, selection.DoubleEquals, selection.NotEquals:
		default:
			return sel, fieldErrorf("fieldSelector", "fieldSelector %q: operator %q is not supported (want =, == or !=)", o.FieldSelector, r.Operator)
		}
	}
	return sel, nil
}

// empty reports whether the selector selects everything.
func (s selector) empty() bool { return s.labels.Empty() && s.fields.Empty() }

// matches reports whether o is selected.
func (s selector) matches(o api.Object) bool {
	m := o.GetObjectMeta()
	if !s.labels.Matches(labels.Set(m.Labels)) {
		return false
	}
	if e, ok := o.(*api.Event); ok {
		return s.fields.Matches(eventFields(e))
	}
	return s.fields.Matches(fields.Set{"metadata.name": m.Name, "metadata.namespace": m.Namespace})
}

// filter keeps the objects of objs that s selects, in order.
func (s selector) filter(objs []api.Object) []api.Object {
	if s.empty() {
		return objs
	}
	out := objs[:0]
	for _, o := range objs {
		if s.matches(o) {
			out = append(out, o)
		}
	}
	return out
}

// DeleteOptions are the Kubernetes DeleteOptions Delete honours.
type DeleteOptions struct {
	// DryRun (Kubernetes' dryRun=All): every check — authorization, the
	// object's existence, the preconditions — and nothing deleted.
	DryRun bool
	// Preconditions must hold on the stored object, or the delete is
	// refused (ErrConflict) and nothing is deleted.
	Preconditions Preconditions
}

// Preconditions are Kubernetes' delete preconditions: each one set must
// equal the stored object's.
type Preconditions struct {
	// UID is the object's metadata.uid.
	UID *string `json:"uid,omitempty"`
	// ResourceVersion is the object's metadata.resourceVersion.
	ResourceVersion *string `json:"resourceVersion,omitempty"`
}

// IsZero reports whether no precondition is set.
func (p Preconditions) IsZero() bool { return p.UID == nil && p.ResourceVersion == nil }

// check compares p with the stored record rec (decoded as o; nil when it
// does not decode) and returns a conflict naming the first mismatch.
func (p Preconditions) check(key api.Key, rec ports.Record, o api.Object) error {
	if p.ResourceVersion != nil {
		if have := strconv.FormatInt(rec.Version, 10); *p.ResourceVersion != have {
			return conflictf("%s: precondition failed: preconditions.resourceVersion %q, the object's metadata.resourceVersion is %q",
				key, *p.ResourceVersion, have)
		}
	}
	if p.UID != nil {
		if o == nil {
			return conflictf("%s: precondition failed: preconditions.uid cannot be checked: the stored object does not decode", key)
		}
		if have := o.GetObjectMeta().UID; *p.UID != have {
			return conflictf("%s: precondition failed: preconditions.uid %q, the object's metadata.uid is %q", key, *p.UID, have)
		}
	}
	return nil
}

// checkManifestVersion is apply's precondition: a manifest that carries
// metadata.resourceVersion updates only that version of the stored object
// (stored; nil when there is none), as `kubectl replace` and an update
// through the Kubernetes API do. Without one, apply writes whatever is
// stored.
func checkManifestVersion(obj, stored api.Object) error {
	rv := obj.GetObjectMeta().ResourceVersion
	if rv == "" {
		return nil
	}
	key := api.KeyOf(obj)
	if stored == nil {
		return conflictf("%s: metadata.resourceVersion %q: the object does not exist (a resourceVersion updates only that version of an existing object; leave it out to create)",
			key, rv)
	}
	if have := stored.GetObjectMeta().ResourceVersion; rv != have {
		return conflictf("%s: metadata.resourceVersion %q: the object has been modified (its resourceVersion is now %q); read it again and apply your changes to the latest version",
			key, rv, have)
	}
	return nil
}

// errNoSecretVersions refuses what needs a resource version on a kind the
// secret store keeps (which has none).
var errNoSecretVersions = errors.New("secrets in the secret store have no uid or resourceVersion")
