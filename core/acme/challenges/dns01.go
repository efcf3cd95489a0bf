package challenges

import (
	"context"

	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
)

// FromDNS01 adapts a core/acme/dns01 Solver to DNS01Solver.
func FromDNS01(s dns01.Solver) DNS01Solver { return dnsSolver{s} }

type dnsSolver struct{ s dns01.Solver }

func (d dnsSolver) Present(ctx context.Context, ch *api.Challenge) (api.ChallengeDNS01Status, error) {
	r, err := d.s.Present(ctx, ch)
	if err != nil {
		return api.ChallengeDNS01Status{}, err
	}
	return *r.Status(), nil
}

func (d dnsSolver) Check(ctx context.Context, ch *api.Challenge) (bool, string, error) {
	return d.s.Check(ctx, ch)
}

func (d dnsSolver) CleanUp(ctx context.Context, ch *api.Challenge) error { return d.s.CleanUp(ctx, ch) }
