// Package step holds what every controller step shares: its Outcome and
// the runner that gives an invocation one step (DESIGN.md §3.2).
package step

import (
	"context"
	"time"
)

// Outcome is what a step did. Wrote means it performed a write and the
// invocation ends (one step per invocation). RequeueAt asks to run again at
// that time when nothing else wakes the resource first (zero: no wish).
type Outcome struct {
	Wrote     bool
	RequeueAt time.Time
}

// Func is one step over an environment E and a loaded state S.
type Func[E, S any] func(context.Context, E, S) (Outcome, error)

// Run runs steps in order and stops after the first that writes. It
// returns whether one wrote and, if none did, the earliest time any of them
// wants to run again.
func Run[E, S any](ctx context.Context, env E, st S, steps []Func[E, S]) (wrote bool, want time.Time, err error) {
	for _, s := range steps {
		out, err := s(ctx, env, st)
		if err != nil {
			return false, time.Time{}, err
		}
		if out.Wrote {
			return true, time.Time{}, nil
		}
		want = Earliest(want, out.RequeueAt)
	}
	return false, want, nil
}

// Earliest returns the earlier non-zero time.
func Earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero():
		return a
	case b.Before(a):
		return b
	}
	return a
}
