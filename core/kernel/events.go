package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// EventMinInterval is how often a repeated failure (same reason and
// message) updates its Event at most: a tight retry loop costs a write a
// minute, not a write a retry.
const EventMinInterval = time.Minute

// maxEventMessage bounds an Event's message (an error chain can be long).
const maxEventMessage = 1024

// recordFailure writes the Event about key after a failed reconcile of
// class (see api.Event), rate limited by EventMinInterval. It goes
// straight to the store: writing an Event wakes nothing, and no step
// reads Events.
func (k *Kernel) recordFailure(ctx context.Context, key api.Key, class errs.Class, failure error) error {
	reason := "Failed"
	if class == errs.PermanentClass {
		reason = "FailedPermanently"
	}
	return k.recordEvent(ctx, key, Note{api.EventTypeWarning, reason, failure.Error()}, EventRepeat)
}

// Note is what an Event says: its type (api.EventTypeNormal or
// api.EventTypeWarning), reason and message.
type Note struct{ Type, Reason, Message string }

// EventMode says how recordEvent treats an Event that already says the same.
type EventMode int

const (
	// EventRepeat: rewritten (count + 1, lastTimestamp) at most every
	// EventMinInterval; created when there is none.
	EventRepeat EventMode = iota
	// EventReplace: written only over an existing Event that says
	// something else (never created, never repeated).
	EventReplace
)

// recordEvent makes the Event about key say n (its message bounded by
// eventMessage): a different reason, type or message starts a new count;
// the same one is handled as mode says. It is one read and at most one
// conditional write; lost races and a concurrent first write are not
// retried (the next reconcile records again).
func (k *Kernel) recordEvent(ctx context.Context, key api.Key, n Note, mode EventMode) error {
	info, ok := api.KindInfoFor(key.Kind)
	if !ok || key.Kind == api.KindEvent {
		return nil
	}
	msg := eventMessage(n.Message)
	now := k.cfg.Clock.Now()
	ek := api.EventKeyFor(key)
	ev := &api.Event{}
	rec, err := k.cfg.Store.Get(ctx, ek)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		if mode == EventReplace {
			return nil
		}
		rec = ports.Record{Key: ek, Owner: key}
	case err != nil:
		return fmt.Errorf("record event %s: %w", ek, err)
	default:
		if err := json.Unmarshal(rec.Data, ev); err != nil {
			return fmt.Errorf("record event %s: decode: %w", ek, err)
		}
	}
	if ev.Reason == n.Reason && ev.Message == msg && ev.Type == n.Type && ev.LastTimestamp != nil {
		if mode == EventReplace || now.Sub(ev.LastTimestamp.Time) < EventMinInterval {
			return nil
		}
		ev.Count++
	} else {
		ev.Count = 1
		ev.FirstTimestamp = &api.Time{Time: now}
	}
	ev.TypeMeta = api.TypeMeta{APIVersion: api.CoreV1, Kind: api.KindEvent}
	ev.ObjectMeta = api.ObjectMeta{Name: ek.Name, Namespace: ek.Namespace, CreationTimestamp: ev.CreationTimestamp}
	if ev.CreationTimestamp == nil {
		ev.CreationTimestamp = &api.Time{Time: now}
	}
	ev.InvolvedObject = api.ObjectReference{Kind: key.Kind, Namespace: key.Namespace, Name: key.Name, APIVersion: info.APIVersion}
	ev.Reason, ev.Message, ev.Type = n.Reason, msg, n.Type
	ev.LastTimestamp = &api.Time{Time: now}
	if rec.Data, err = json.Marshal(ev); err != nil {
		return fmt.Errorf("record event %s: %w", ek, err)
	}
	if rec.Version == 0 {
		_, err = k.cfg.Store.Create(ctx, rec)
	} else {
		_, err = k.cfg.Store.Update(ctx, rec)
	}
	if err != nil && !errors.Is(err, ports.ErrConflict) && !errors.Is(err, ports.ErrAlreadyExists) {
		return fmt.Errorf("record event %s: %w", ek, err)
	}
	return nil
}

// eventMessage bounds msg to maxEventMessage bytes, cut on a character
// boundary: a cut rune would be stored as U+FFFD and the stored message
// would never equal the next one, defeating EventMinInterval.
func eventMessage(msg string) string {
	if len(msg) <= maxEventMessage {
		return msg
	}
	n := maxEventMessage
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	return msg[:n] + "…"
}
