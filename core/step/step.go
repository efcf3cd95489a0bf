// Package step holds what every controller step shares: its Outcome and
// the runner that gives an invocation one step (docs/design/one-step.md).
package step

import (
	"context"
	"time"
)

// Outcome is what a step did. Wrote means it performed a write and the
// invocation ends (one step per invocation). RequeueAt asks to run again at
// that time when nothing else wakes the resource first (zero: no wish).
// Why says, for a step that did nothing, why not (debug logs show it).
// Waiting, for a step that did nothing because the resource waits on
// someone or something else, says so for the resource's users (a
// controller records it as an Event where the kind has no condition to say
// it); nil when the step has nothing to tell them.
type Outcome struct {
	Wrote     bool
	RequeueAt time.Time
	Why       string
	Waiting   *Waiting
}

// Waiting is why a resource waits, for its users: a stable,
// machine-readable Reason (CamelCase, as Kubernetes Event reasons) and a
// Message for people. Warning marks a wait that needs someone to act (a
// missing or not Ready issuer) rather than one that ends by itself or by
// a decision (approval, an ACME Order in progress).
type Waiting struct {
	Reason  string
	Message string
	Warning bool
}

// Result is what Run did: whether a step wrote, the earliest time any
// step wants to run again, and why the steps before that did nothing
// ("step: why", in order; steps that gave no reason are left out).
// Waiting, when no step wrote, is the first Waiting a step reported (the
// earliest step that waits is what holds the resource back).
type Result struct {
	Wrote   bool
	Want    time.Time
	Why     []string
	Waiting *Waiting
}

// Func is one step over an environment E and a loaded state S.
type Func[E, S any] func(context.Context, E, S) (Outcome, error)

// Run runs steps in order and stops after the first that writes. It
// returns whether one wrote and, if none did, the earliest time any of them
// wants to run again; names label the reasons (names[i] is steps[i]'s).
func Run[E, S any](ctx context.Context, env E, st S, steps []Func[E, S], names []string) (Result, error) {
	var res Result
	for i, s := range steps {
		out, err := s(ctx, env, st)
		if err != nil {
			return Result{}, err
		}
		if out.Wrote {
			return Result{Wrote: true, Why: res.Why}, nil
		}
		if out.Why != "" && i < len(names) {
			res.Why = append(res.Why, names[i]+": "+out.Why)
		}
		if res.Waiting == nil {
			res.Waiting = out.Waiting
		}
		res.Want = Earliest(res.Want, out.RequeueAt)
	}
	return res, nil
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
