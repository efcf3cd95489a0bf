package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// EventMinInterval is how often a repeated note (same object, type,
// reason and message) updates its Event at most: a tight retry loop costs
// a write a minute, not a write a retry.
const EventMinInterval = time.Minute

// maxEventMessage bounds an Event's message (an error chain can be long).
const maxEventMessage = 1024

// recordFailure writes the Event about key after a failed reconcile of
// class (see api.Event), rate limited by EventMinInterval. It is written
// at once: the failure is the step's outcome, and no state write is
// pending.
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

// Normal is a Normal note.
func Normal(reason, message string) Note { return Note{api.EventTypeNormal, reason, message} }

// Warning is a Warning note.
func Warning(reason, message string) Note { return Note{api.EventTypeWarning, reason, message} }

// EventMode says how recordEvent treats an Event that already says the same.
type EventMode int

const (
	// EventRepeat: the same note again raises count and lastTimestamp, at
	// most every EventMinInterval (Kubernetes' aggregation).
	EventRepeat EventMode = iota
	// EventOnce: the note is recorded once; the same note again writes
	// nothing (how a final object ended, seen again on a redelivery).
	EventOnce
	// EventLogOnly: the note is logged (Config.Logger, msg "step"), after
	// the step's write as any note, and stored nowhere: an ACME step that
	// cert-manager records no Event for (the order submitted, finalized),
	// logged at no state write.
	EventLogOnly
)

// pendingEvent is a note a step recorded, written once the step's state
// write succeeded.
type pendingEvent struct {
	key  api.Key
	note Note
	mode EventMode
}

// noteEvent records n about key for this run: within a reconcile it is
// held until the step's state write succeeded (flushEvents), so a step
// that fails or crashes before its write records nothing and a duplicate
// delivery that loses the write race records nothing either; outside one
// (Direct: the caller has written already) it is written at once.
func (r *run) noteEvent(ctx context.Context, key api.Key, n Note, mode EventMode) error {
	if !r.buffer {
		return r.recordEvent(ctx, key, n, mode)
	}
	r.events = append(r.events, pendingEvent{key, n, mode})
	return nil
}

// committed marks the notes recorded so far as belonging to a state write
// that succeeded.
func (r *run) committed() { r.written = len(r.events) }

// flushEvents writes the notes a reconcile recorded: all of them when it
// succeeded, else those recorded before its last successful write. An
// Event that cannot be written is logged and counted, never the step's
// failure (its state is written).
func (r *run) flushEvents(ctx context.Context, reconcileErr error) {
	n := len(r.events)
	if reconcileErr != nil {
		n = r.written
	}
	for _, p := range r.events[:n] {
		if err := r.recordEvent(ctx, p.key, p.note, p.mode); err != nil {
			r.cfg.Metrics.Inc("certfn_event_errors_total", "kind", p.key.Kind)
			if r.cfg.Logger != nil {
				r.cfg.Logger.Warn("event not recorded", "namespace", p.key.Namespace, "kind", p.key.Kind, "name", p.key.Name,
					"reason", p.note.Reason, "error", err)
			}
		}
	}
	r.events, r.written = nil, 0
}

// recordEvent makes the Event of (key, n) say n once more (its message
// bounded by eventMessage): created with count 1 when there is none, else
// as mode says. It is one read and at most one conditional write; lost
// races and a concurrent first write are not retried (the next note
// records again). Each write is logged (Config.Logger: INFO for Normal,
// WARN for Warning).
func (k *Kernel) recordEvent(ctx context.Context, key api.Key, n Note, mode EventMode) error {
	if mode == EventLogOnly {
		if k.cfg.Logger != nil {
			level := slog.LevelInfo
			if n.Type == api.EventTypeWarning {
				level = slog.LevelWarn
			}
			k.cfg.Logger.Log(ctx, level, "step", "namespace", key.Namespace, "kind", key.Kind, "name", key.Name,
				"type", n.Type, "reason", n.Reason, "message", eventMessage(n.Message))
		}
		return nil
	}
	info, ok := api.KindInfoFor(key.Kind)
	if !ok || key.Kind == api.KindEvent {
		return nil
	}
	msg := eventMessage(n.Message)
	now := k.cfg.Clock.Now()
	ek := api.EventKey(key, n.Type, n.Reason, msg)
	ev := &api.Event{}
	rec, err := k.cfg.Store.Get(ctx, ek)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		rec = ports.Record{Key: ek, Owner: key}
		ev.Count = 1
		ev.FirstTimestamp = &api.Time{Time: now}
		ev.CreationTimestamp = &api.Time{Time: now}
	case err != nil:
		return fmt.Errorf("record event %s: %w", ek, err)
	default:
		if err := json.Unmarshal(rec.Data, ev); err != nil {
			return fmt.Errorf("record event %s: decode: %w", ek, err)
		}
		if mode == EventOnce || (ev.LastTimestamp != nil && now.Sub(ev.LastTimestamp.Time) < EventMinInterval) {
			return nil
		}
		ev.Count++
		if ev.FirstTimestamp == nil {
			ev.FirstTimestamp = &api.Time{Time: now}
		}
	}
	ev.TypeMeta = api.TypeMeta{APIVersion: api.CoreV1, Kind: api.KindEvent}
	ev.ObjectMeta = api.ObjectMeta{Name: ek.Name, Namespace: ek.Namespace, CreationTimestamp: ev.CreationTimestamp}
	ev.InvolvedObject = api.ObjectReference{Kind: key.Kind, Namespace: key.Namespace, Name: key.Name, APIVersion: info.APIVersion}
	ev.Reason, ev.Message, ev.Type = n.Reason, msg, n.Type
	ev.LastTimestamp = &api.Time{Time: now}
	ev.Source = api.EventSource{Component: api.EventComponent}
	ev.ReportingComponent = api.EventComponent
	if rec.Data, err = json.Marshal(ev); err != nil {
		return fmt.Errorf("record event %s: %w", ek, err)
	}
	if rec.Version == 0 {
		_, err = k.cfg.Store.Create(ctx, rec)
	} else {
		_, err = k.cfg.Store.Update(ctx, rec)
	}
	switch {
	case errors.Is(err, ports.ErrConflict), errors.Is(err, ports.ErrAlreadyExists), errors.Is(err, ports.ErrNotFound):
		return nil // another writer recorded it meanwhile (or its object went)
	case err != nil:
		return fmt.Errorf("record event %s: %w", ek, err)
	}
	k.cfg.Metrics.Inc("certfn_state_writes_total", "kind", api.KindEvent)
	k.cfg.Metrics.Inc("certfn_events_recorded_total", "type", ev.Type)
	k.logEvent(ctx, ev)
	return nil
}

// logEvent logs a written Event: INFO for Normal, WARN for Warning.
func (k *Kernel) logEvent(ctx context.Context, ev *api.Event) {
	if k.cfg.Logger == nil {
		return
	}
	level := slog.LevelInfo
	if ev.Type == api.EventTypeWarning {
		level = slog.LevelWarn
	}
	k.cfg.Logger.Log(ctx, level, "event", "namespace", ev.InvolvedObject.Namespace, "kind", ev.InvolvedObject.Kind,
		"name", ev.InvolvedObject.Name, "type", ev.Type, "reason", ev.Reason, "message", ev.Message, "count", ev.Count)
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
