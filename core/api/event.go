package api

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"time"
)

// Events (core/v1, as Kubernetes): what the controllers did and why a
// step failed or waits, recorded on the object concerned with
// cert-manager's reasons and messages (docs/design/events.md). One Event
// per object and (type, reason, message), named by EventKey and
// aggregated as Kubernetes' event recorder does: the same note again
// raises count and lastTimestamp (at most once a minute, the kernel's
// EventMinInterval), a different one is another Event. `certfn get
// events` lists them (field selectors on involvedObject.*, reason, type,
// source), `certfn describe` shows an object's and `certfn status` the
// ones of the objects it explains. Written by the kernel only (the
// controllers' through it), after the step's state write succeeded.
const KindEvent = "Event"

// Event types.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// EventComponent is the source.component and reportingComponent of every
// Event certfn records.
const EventComponent = "certfn"

// Event is one aggregated note about one object: what a controller did
// (Normal) or why a step failed or waits (Warning).
type Event struct {
	TypeMeta       `json:",inline"`
	ObjectMeta     `json:"metadata,omitempty"`
	InvolvedObject ObjectReference `json:"involvedObject"`
	// Reason is a short machine-readable cause, cert-manager's where it
	// has one (Issuing, Generated, Requested, Approved, CertificateIssued,
	// Created, Presented, DomainVerified, KeyPairVerified,
	// ErrRegisterACMEAccount, ...), certfn's otherwise (Issued, Renewed;
	// Failed or FailedPermanently for a reconcile that failed; why a
	// CertificateSigningRequest waits).
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Type    string `json:"type"`
	// Count is how many times this note was recorded (aggregated).
	Count          int         `json:"count"`
	FirstTimestamp *Time       `json:"firstTimestamp,omitempty"`
	LastTimestamp  *Time       `json:"lastTimestamp,omitempty"`
	Source         EventSource `json:"source,omitempty"`
	// ReportingComponent is EventComponent.
	ReportingComponent string `json:"reportingComponent,omitempty"`
}

// EventSource is the component that recorded an Event.
type EventSource struct {
	Component string `json:"component,omitempty"`
}

// ObjectReference names the object an Event is about.
type ObjectReference struct {
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// EventsNamespace holds the Events of cluster-scoped objects (Kubernetes
// uses "default" too).
const EventsNamespace = "default"

// EventNamespaceFor is the namespace of the Events about key: the
// object's, EventsNamespace for a cluster-scoped one.
func EventNamespaceFor(key Key) string {
	if key.Namespace == "" {
		return EventsNamespace
	}
	return key.Namespace
}

// eventHashLen is the length of the hex digest that ends an Event's name.
const eventHashLen = 16

// EventKey returns the key of the Event about key that says (typ,
// reason, message): in EventNamespaceFor(key), named
// "<kind in lower case>.<name>.<16 hex digits of SHA-256 over type,
// reason and message>", so the same note always lands on the same Event
// (the aggregation key) and a different one on another.
func EventKey(key Key, typ, reason, message string) Key {
	h := sha256.Sum256([]byte(typ + "\x00" + reason + "\x00" + message))
	return Key{Kind: KindEvent, Namespace: EventNamespaceFor(key),
		Name: strings.ToLower(key.Kind) + "." + key.Name + "." + hex.EncodeToString(h[:])[:eventHashLen]}
}

// InvolvedKeyFor is EventKey's inverse: the key of the object the Event
// at ek is about; ok is false when ek is not the key of such an Event
// (not an Event, no known kind or digest in its name, or a
// cluster-scoped kind's Event outside EventsNamespace).
func InvolvedKeyFor(ek Key) (key Key, ok bool) {
	if ek.Kind != KindEvent {
		return Key{}, false
	}
	prefix, rest, found := strings.Cut(ek.Name, ".")
	if !found {
		return Key{}, false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 || !isEventHash(rest[i+1:]) {
		return Key{}, false
	}
	name := rest[:i]
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

func isEventHash(s string) bool {
	if len(s) != eventHashLen {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// EventTime is when an Event last happened (its creation when it has no
// lastTimestamp).
func EventTime(e *Event) time.Time {
	if e.LastTimestamp != nil {
		return e.LastTimestamp.Time
	}
	if e.CreationTimestamp != nil {
		return e.CreationTimestamp.Time
	}
	return time.Time{}
}

// SortEvents orders evs oldest first by EventTime, then by first
// timestamp and name (stable for Events of the same second).
func SortEvents(evs []Event) {
	sort.SliceStable(evs, func(i, j int) bool {
		a, b := EventTime(&evs[i]), EventTime(&evs[j])
		if !a.Equal(b) {
			return a.Before(b)
		}
		return false
	})
}
