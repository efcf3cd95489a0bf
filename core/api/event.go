package api

import "strings"

// Events (core/v1, as Kubernetes): the kernel records why a step failed on
// the object it was reconciling, since a queue-driven controller has no
// caller to return the error to, and why a CertificateSigningRequest waits
// (it has no condition to say so). One Event per object, named by
// EventKeyFor, updated in place (count, lastTimestamp, message) while the
// same thing repeats and replaced when it changes; `certfn get events`
// lists them, `certfn describe` shows an object's and `certfn status`
// the ones of the objects it explains. Written by the kernel only (the
// CertificateSigningRequest controller's through it).
const KindEvent = "Event"

// Event types.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// Event is the latest recorded failure of a step on one object, or why a
// CertificateSigningRequest waits or how it ended.
type Event struct {
	TypeMeta       `json:",inline"`
	ObjectMeta     `json:"metadata,omitempty"`
	InvolvedObject ObjectReference `json:"involvedObject"`
	// Reason is a short machine-readable cause: Failed (retried) or
	// FailedPermanently (not retried until the object changes or is due);
	// for a CertificateSigningRequest also why it waits (core/certificatesigningrequests's
	// reasons: WaitingApproval, IssuerNotFound, IssuerNotReady,
	// OrderPending, Pending) and, replacing such an Event, how it ended
	// (CertificateIssued, Denied, or its Failed condition's reason).
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Type    string `json:"type"`
	// Count is how many times this reason and message were recorded in a row.
	Count          int   `json:"count"`
	FirstTimestamp *Time `json:"firstTimestamp,omitempty"`
	LastTimestamp  *Time `json:"lastTimestamp,omitempty"`
}

// ObjectReference names the object an Event is about.
type ObjectReference struct {
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// EventsNamespace holds the Events of cluster-scoped objects (Kubernetes
// uses "default" too).
const EventsNamespace = "default"

// EventKeyFor returns the key of the Event about key: in the object's
// namespace (EventsNamespace for cluster-scoped ones), named
// "<kind in lower case>.<name>".
func EventKeyFor(key Key) Key {
	ns := key.Namespace
	if ns == "" {
		ns = EventsNamespace
	}
	return Key{Kind: KindEvent, Namespace: ns, Name: strings.ToLower(key.Kind) + "." + key.Name}
}

// InvolvedKeyFor is EventKeyFor's inverse: the key of the object the
// Event at ek is about; ok is false when ek is not the key of such an
// Event (not an Event, no known kind in its name, or a cluster-scoped
// kind's Event outside EventsNamespace).
func InvolvedKeyFor(ek Key) (key Key, ok bool) {
	if ek.Kind != KindEvent {
		return Key{}, false
	}
	prefix, name, found := strings.Cut(ek.Name, ".")
	if !found || name == "" {
		return Key{}, false
	}
	for _, info := range kinds {
		if info.Kind == KindEvent || strings.ToLower(info.Kind) != prefix {
			continue
		}
		if !info.Namespaced {
			return Key{Kind: info.Kind, Name: name}, ek.Namespace == EventsNamespace
		}
		return Key{Kind: info.Kind, Namespace: ek.Namespace, Name: name}, true
	}
	return Key{}, false
}
