package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// Notifier is a ports.Notifier in memory: it keeps every notification it
// accepts, in order, for Delivered to return.
//
// Contract (the one of ports.Notifier, checked by porttest.NotifierSuite):
// an invalid notification is a permanent error and is not kept; a canceled
// context fails before anything is kept; duplicates are kept as often as
// they are sent. Times are kept to the second, in UTC, as the contract
// allows a backend to. A test makes Notify fail with FailWith.
//
// Notifier is safe for concurrent use; notifications are copied on the way
// in and out.
type Notifier struct {
	mu   sync.Mutex
	sent []ports.Notification
	fail func(ports.Notification) error
}

var _ ports.Notifier = (*Notifier)(nil)

// NewNotifier returns a Notifier that has delivered nothing.
func NewNotifier() *Notifier { return &Notifier{} }

// FailWith makes Notify call f with each valid notification and, when f
// returns an error, return it instead of keeping the notification (nil f:
// keep every one again). Tests inject transient and permanent failures.
func (n *Notifier) FailWith(f func(ports.Notification) error) {
	n.mu.Lock()
	n.fail = f
	n.mu.Unlock()
}

// Notify implements ports.Notifier.
func (n *Notifier) Notify(ctx context.Context, note ports.Notification) error {
	if err := live(ctx, "memory notifier: notify "+note.String()); err != nil {
		return err
	}
	if err := note.Validate(); err != nil {
		return errs.Permanent(fmt.Errorf("memory notifier: %w", err))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fail != nil {
		if err := n.fail(note); err != nil {
			return fmt.Errorf("memory notifier: notify %s: %w", note, err)
		}
	}
	n.sent = append(n.sent, copyNotification(note))
	return nil
}

// Delivered returns copies of the notifications kept so far, in the order
// they were sent.
func (n *Notifier) Delivered() []ports.Notification {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]ports.Notification, len(n.sent))
	for i, note := range n.sent {
		out[i] = copyNotification(note)
	}
	return out
}

// copyNotification returns note with its own DNS names and its times
// truncated to the second in UTC (zero stays zero).
func copyNotification(note ports.Notification) ports.Notification {
	note.DNSNames = slices.Clone(note.DNSNames)
	for _, t := range []*time.Time{&note.Time, &note.NotBefore, &note.NotAfter, &note.FailureTime, &note.RetryAfter} {
		if !t.IsZero() {
			*t = t.UTC().Truncate(time.Second)
		}
	}
	return note
}
