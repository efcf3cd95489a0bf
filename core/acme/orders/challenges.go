package orders

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// owned lists the Challenges this Order owns, by name.
func (r *run) owned(ctx context.Context) (map[string]*api.Challenge, error) {
	recs, err := r.e.Store().List(ctx, ports.ListOptions{Kind: api.KindChallenge, Namespace: r.o.Namespace, Owner: r.rec.Key})
	if err != nil {
		return nil, fmt.Errorf("list challenges of %s: %w", r.rec.Key, err)
	}
	out := make(map[string]*api.Challenge, len(recs))
	for _, rec := range recs {
		obj, err := r.e.Decode(rec)
		if err != nil {
			return nil, err
		}
		ch := obj.(*api.Challenge)
		out[ch.Name] = ch
	}
	return out, nil
}

// challenges makes sure each pending authorization has exactly one
// Challenge, fails the Order when one failed, and finalizes when all are
// valid.
func (r *run) challenges(ctx context.Context, a *acmeCtx) error {
	have, err := r.owned(ctx)
	if err != nil {
		return err
	}
	var created, valid, pending int
	var failed []string
	for _, az := range r.o.Status.Authorizations {
		if az.InitialState == api.StateValid {
			continue
		}
		pending++
		name := acme.ChallengeName(r.o.Name, az.URL)
		ch, ok := have[name]
		if !ok {
			ch, err = r.buildChallenge(a, az, name)
			if err != nil {
				return r.fail(ctx, api.StateErrored, err.Error())
			}
			_, err := r.e.CreateObject(ctx, ch, r.now)
			if err != nil && !errors.Is(err, ports.ErrAlreadyExists) {
				return fmt.Errorf("create challenge %s/%s: %w", ch.Namespace, ch.Name, err)
			}
			// cert-manager also records "Created Challenge resource ..." on
			// the Order here; certfn does not: the Challenge's own Started
			// says it, and each Event is a state write of its own
			// (docs/design/events.md#cost).
			created++
			continue
		}
		switch {
		case ch.Status.State == api.StateValid:
			valid++
		case ch.Status.State.IsFinal():
			failed = append(failed, fmt.Sprintf("Challenge %s for %s failed (%s): %s", ch.Name, ch.Spec.DNSName, ch.Status.State, ch.Status.Reason))
		}
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		return r.fail(ctx, api.StateInvalid, failed[0])
	}
	if created > 0 || valid < pending {
		// The Challenges wake the Order when they become final.
		return r.wait(ctx, r.now.Add(r.h.cfg.WaitPoll))
	}
	return r.finalize(ctx, a)
}

// buildChallenge is the Challenge for one authorization, with the solver
// chosen by cert-manager's selector rules.
func (r *run) buildChallenge(a *acmeCtx, az api.ACMEAuthorization, name string) (*api.Challenge, error) {
	offered := make([]string, 0, len(az.Challenges))
	for _, c := range az.Challenges {
		offered = append(offered, c.Type)
	}
	wild := az.Wildcard != nil && *az.Wildcard
	choice, ok := acme.SelectSolver(a.iss.GetSpec().ACME.Solvers, az.Identifier, wild, r.o.Labels, offered)
	if !ok {
		id := az.Identifier
		if wild {
			id = "*." + id
		}
		return nil, fmt.Errorf("no configured challenge solver can be used for %q (the server offers %v; a wildcard needs dns01)", id, offered)
	}
	var offer api.ACMEChallenge
	for _, c := range az.Challenges {
		if c.Type == choice.Type {
			offer = c
			break
		}
	}
	typ, _ := acme.ChallengeTypeFor(choice.Type)
	ch := &api.Challenge{
		TypeMeta: api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindChallenge},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: r.o.Namespace, Labels: copyLabels(r.o.Labels),
			OwnerReferences: []api.OwnerReference{acme.ControllerRef(r.o)}},
		Spec: api.ChallengeSpec{
			URL: offer.URL, AuthorizationURL: az.URL, DNSName: az.Identifier, Wildcard: wild, Type: typ,
			Token: offer.Token, Key: acme.KeyAuthorization(offer.Token, a.acct.Thumbprint),
			Solver: choice.Solver, IssuerRef: r.o.Spec.IssuerRef,
		},
	}
	acme.StampSpec(&ch.ObjectMeta, ch.Spec)
	return ch, nil
}

func copyLabels(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
