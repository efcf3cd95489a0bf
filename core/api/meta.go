// Package api holds certfn's resource types. They carry cert-manager's own
// API groups and field names (cert-manager.io/v1, acme.cert-manager.io/v1,
// policy.cert-manager.io/v1alpha1, rbac.authorization.k8s.io/v1) so that
// existing cert-manager manifests decode unchanged. See docs/design/resources.md.
package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// TypeMeta is the apiVersion/kind pair every manifest carries.
type TypeMeta struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// OwnerReference points at the resource that owns this one (a Certificate
// owns its CertificateRequests, a CertificateRequest its Order, ...).
type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

// ObjectMeta keeps the Kubernetes metadata fields certfn honours.
// Namespace is empty for cluster-scoped kinds.
type ObjectMeta struct {
	Name              string            `json:"name,omitempty"`
	GenerateName      string            `json:"generateName,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	Generation        int64             `json:"generation,omitempty"`
	CreationTimestamp *Time             `json:"creationTimestamp,omitempty"`
	DeletionTimestamp *Time             `json:"deletionTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	OwnerReferences   []OwnerReference  `json:"ownerReferences,omitempty"`
	Finalizers        []string          `json:"finalizers,omitempty"`
	// ManagedFields is accepted (kubectl output carries it) and ignored.
	ManagedFields []json.RawMessage `json:"managedFields,omitempty"`
}

// ControllerOf returns the owner reference marked as controller, if any.
func (m *ObjectMeta) ControllerOf() *OwnerReference {
	for i := range m.OwnerReferences {
		if c := m.OwnerReferences[i].Controller; c != nil && *c {
			return &m.OwnerReferences[i]
		}
	}
	return nil
}

// OwnerKey returns the key of obj's controlling owner (zero if none): in
// obj's namespace, or cluster-wide when the owner's kind is cluster-scoped
// (a CertificateSigningRequest owning the ACME Order made for it, which
// lives in the issuer's namespace), as Kubernetes resolves owner
// references (a namespaced dependent may name a cluster-scoped owner).
func OwnerKey(obj Object) Key {
	m := obj.GetObjectMeta()
	ref := m.ControllerOf()
	if ref == nil {
		return Key{}
	}
	ns := m.Namespace
	if info, ok := KindInfoFor(ref.Kind); ok && !info.Namespaced {
		ns = ""
	}
	return Key{Kind: ref.Kind, Namespace: ns, Name: ref.Name}
}

// Object is implemented by every resource type.
type Object interface {
	GetTypeMeta() *TypeMeta
	GetObjectMeta() *ObjectMeta
}

// GetTypeMeta implements Object.
func (t *TypeMeta) GetTypeMeta() *TypeMeta { return t }

// GetObjectMeta implements Object.
func (m *ObjectMeta) GetObjectMeta() *ObjectMeta { return m }

// Key addresses a resource: kind/namespace/name, or kind/name for a
// cluster-scoped kind. It is the body of every queue message.
type Key struct {
	Kind      string
	Namespace string
	Name      string
}

// KeyOf returns the key of obj.
func KeyOf(obj Object) Key {
	m := obj.GetObjectMeta()
	return Key{Kind: obj.GetTypeMeta().Kind, Namespace: m.Namespace, Name: m.Name}
}

// String renders "Kind/namespace/name", or "Kind/name" when cluster-scoped.
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Kind + "/" + k.Name
	}
	return k.Kind + "/" + k.Namespace + "/" + k.Name
}

// IsZero reports whether k is the zero key.
func (k Key) IsZero() bool { return k == Key{} }

// Validate reports whether k can address a stored resource: kind and name
// are required, the namespace may be empty (cluster-scoped kinds), and no
// part may contain '/', so that SplitKey(k.String()) gives k back. Unlike
// ParseKey it accepts any kind: a store holds whatever it is given. The
// error names the part ("kind: must not be empty"); a caller prefixes the
// field that holds k ("owner.kind: ...") and marks the error permanent.
func (k Key) Validate() error {
	for _, p := range [...]struct{ name, value string }{{"kind", k.Kind}, {"namespace", k.Namespace}, {"name", k.Name}} {
		if p.name != "namespace" && p.value == "" {
			return fmt.Errorf("%s: must not be empty", p.name)
		}
		if strings.Contains(p.value, "/") {
			return fmt.Errorf("%s: %q must not contain '/'", p.name, p.value)
		}
	}
	return nil
}

// SplitKey parses the String form of a key that Validate accepts,
// "Kind/namespace/name" or "Kind/name", of any kind. Unlike ParseKey it
// does not check the kind against the scheme: it reads back what a store
// wrote.
func SplitKey(s string) (Key, error) {
	k, three, err := splitKey(s)
	if err != nil {
		return Key{}, err
	}
	if k.Kind == "" || k.Name == "" || (three && k.Namespace == "") {
		return Key{}, fmt.Errorf("key %q: empty part", s)
	}
	return k, nil
}

// splitKey splits the String form at its '/' separators, checking only
// their number; three reports the Kind/namespace/name form.
func splitKey(s string) (k Key, three bool, err error) {
	switch parts := strings.Split(s, "/"); len(parts) {
	case 2:
		return Key{Kind: parts[0], Name: parts[1]}, false, nil
	case 3:
		return Key{Kind: parts[0], Namespace: parts[1], Name: parts[2]}, true, nil
	}
	return Key{}, false, fmt.Errorf("key %q: want Kind/namespace/name or Kind/name", s)
}

// ParseKey parses the String form. It checks the kind is known and that its
// scope matches the number of parts; it never panics on arbitrary input.
func ParseKey(s string) (Key, error) {
	if len(s) > 512 {
		return Key{}, fmt.Errorf("key: longer than 512 bytes")
	}
	k, _, err := splitKey(s)
	if err != nil {
		return Key{}, err
	}
	info, ok := KindInfoFor(k.Kind)
	if !ok {
		return Key{}, fmt.Errorf("key %q: unknown kind %q", s, k.Kind)
	}
	if info.Namespaced && k.Namespace == "" {
		return Key{}, fmt.Errorf("key %q: kind %s is namespaced and needs a namespace", s, k.Kind)
	}
	if !info.Namespaced && k.Namespace != "" {
		return Key{}, fmt.Errorf("key %q: kind %s is cluster-scoped and takes no namespace", s, k.Kind)
	}
	if k.Name == "" {
		return Key{}, fmt.Errorf("key %q: empty name", s)
	}
	return k, nil
}

// Time is a timestamp that marshals as RFC 3339 (with nanoseconds when
// present) and accepts plain RFC 3339 on input, as Kubernetes' metav1.Time.
type Time struct{ time.Time }

// NewTime wraps t (in UTC) for use in a status.
func NewTime(t time.Time) *Time { return &Time{t.UTC()} }

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.UTC().Format(time.RFC3339Nano))
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want an RFC 3339 timestamp string")
	}
	p, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("want an RFC 3339 timestamp, got %q", s)
	}
	t.Time = p.UTC()
	return nil
}

// Duration is a Go duration string ("2160h", "90m") as metav1.Duration.
type Duration struct{ time.Duration }

// NewDuration wraps d.
func NewDuration(d time.Duration) *Duration { return &Duration{d} }

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Duration.String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"2160h\"")
	}
	p, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as \"2160h\" or \"90m\", got %q", s)
	}
	d.Duration = p
	return nil
}

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// Condition is the condition shape shared by every kind.
type Condition struct {
	Type               string          `json:"type"`
	Status             ConditionStatus `json:"status"`
	LastTransitionTime *Time           `json:"lastTransitionTime,omitempty"`
	Reason             string          `json:"reason,omitempty"`
	Message            string          `json:"message,omitempty"`
	ObservedGeneration int64           `json:"observedGeneration,omitempty"`
}

// FindCondition returns the condition of type t, or nil.
func FindCondition(conds []Condition, t string) *Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// IsTrue reports whether condition t is present with status True.
func IsTrue(conds []Condition, t string) bool {
	c := FindCondition(conds, t)
	return c != nil && c.Status == ConditionTrue
}

// SetCondition sets condition c on conds. LastTransitionTime changes only
// when the status changes (as Kubernetes does); reason and message are
// always updated. It returns whether anything changed.
func SetCondition(conds *[]Condition, c Condition, now time.Time) bool {
	if old := FindCondition(*conds, c.Type); old != nil {
		changed := old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message ||
			old.ObservedGeneration != c.ObservedGeneration
		if old.Status != c.Status {
			old.LastTransitionTime = NewTime(now)
		}
		old.Status, old.Reason, old.Message, old.ObservedGeneration = c.Status, c.Reason, c.Message, c.ObservedGeneration
		return changed
	}
	if c.LastTransitionTime == nil {
		c.LastTransitionTime = NewTime(now)
	}
	*conds = append(*conds, c)
	return true
}

// RemoveCondition deletes condition t; it returns whether it was present.
func RemoveCondition(conds *[]Condition, t string) bool {
	for i := range *conds {
		if (*conds)[i].Type == t {
			*conds = append((*conds)[:i], (*conds)[i+1:]...)
			return true
		}
	}
	return false
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	Name string `json:"name"`
}

// SecretKeySelector names one key of a secret in the same namespace.
type SecretKeySelector struct {
	LocalObjectReference `json:",inline"`
	Key                  string `json:"key,omitempty"`
}

// IssuerReference is cert-manager's ObjectReference to an issuer.
type IssuerReference struct {
	Name  string `json:"name"`
	Kind  string `json:"kind,omitempty"`
	Group string `json:"group,omitempty"`
}
