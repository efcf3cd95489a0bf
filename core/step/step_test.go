package step

import (
	"context"
	"testing"
	"time"
)

// Run reports the first Waiting of the steps that did nothing, and none
// when a step wrote.
func TestRunReportsTheFirstWaiting(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	approval := &Waiting{Reason: "WaitingApproval", Message: "m1"}
	issuer := &Waiting{Reason: "IssuerNotReady", Message: "m2", Warning: true}
	steps := func(outs ...Outcome) []Func[struct{}, struct{}] {
		var fs []Func[struct{}, struct{}]
		for _, o := range outs {
			o := o
			fs = append(fs, func(context.Context, struct{}, struct{}) (Outcome, error) { return o, nil })
		}
		return fs
	}
	for _, tc := range []struct {
		name  string
		outs  []Outcome
		want  *Waiting
		wrote bool
	}{
		{"none", []Outcome{{Why: "a"}, {Why: "b"}}, nil, false},
		{"the first", []Outcome{{Why: "a", Waiting: approval, RequeueAt: t0}, {Why: "b", Waiting: issuer}}, approval, false},
		{"a later one", []Outcome{{Why: "a"}, {Why: "b", Waiting: issuer}}, issuer, false},
		{"a step wrote", []Outcome{{Waiting: approval}, {Wrote: true}}, nil, true},
	} {
		res, err := Run(context.Background(), struct{}{}, struct{}{}, steps(tc.outs...), []string{"one", "two"})
		if err != nil || res.Wrote != tc.wrote || res.Waiting != tc.want {
			t.Errorf("%s: %+v %v", tc.name, res, err)
		}
	}
}
