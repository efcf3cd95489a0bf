package engine

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
// class (see api.Event). It goes straight to the store: writing an Event
// wakes nothing, and no step reads Events. Lost races and a concurrent
// first write are not retried (the next failure records again).
func (e *Engine) recordFailure(ctx context.Context, key api.Key, class errs.Class, failure error) error {
	info, ok := api.KindInfoFor(key.Kind)
	if !ok || key.Kind == api.KindEvent {
		return nil
	}
	reason := "Failed"
	if class == errs.PermanentClass {
		reason = "FailedPermanently"
	}
	msg := eventMessage(failure.Error())
	now := e.cfg.Clock.Now()
	ek := api.EventKeyFor(key)
	ev := &api.Event{}
	rec, err := e.cfg.Store.Get(ctx, ek)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		rec = ports.Record{Key: ek, Owner: key}
	case err != nil:
		return fmt.Errorf("record event %s: %w", ek, err)
	default:
		if err := json.Unmarshal(rec.Data, ev); err != nil {
			return fmt.Errorf("record event %s: decode: %w", ek, err)
		}
	}
	if ev.Reason == reason && ev.Message == msg && ev.LastTimestamp != nil {
		if now.Sub(ev.LastTimestamp.Time) < EventMinInterval {
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
	ev.Reason, ev.Message, ev.Type = reason, msg, api.EventTypeWarning
	ev.LastTimestamp = &api.Time{Time: now}
	if rec.Data, err = json.Marshal(ev); err != nil {
		return fmt.Errorf("record event %s: %w", ek, err)
	}
	if rec.Version == 0 {
		_, err = e.cfg.Store.Create(ctx, rec)
	} else {
		_, err = e.cfg.Store.Update(ctx, rec)
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
