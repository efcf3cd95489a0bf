package acme

import (
	"strings"

	"github.com/certfn/certfn/core/api"
)

// SolverChoice is the solver chosen for one authorization.
type SolverChoice struct {
	Solver api.ACMEChallengeSolver
	// Index of the solver in spec.acme.solvers.
	Index int
	// Type is the ACME challenge type it solves ("http-01" or "dns-01").
	Type string
}

// SelectSolver picks the solver for identifier domain (without "*." for a
// wildcard) among solvers, with cert-manager's precedence: a selector whose
// dnsNames list the identifier beats one whose dnsZones contain it (the
// longest zone wins), which beats one matching by labels only (the most
// labels wins), which beats a solver without selector. A selector's
// matchLabels must all match labels (the Certificate's labels) for the
// solver to be considered at all; among equals, more matching labels win,
// then the earlier solver. Only solvers of a type the server offered
// (offered: ACME types such as "http-01") are eligible; a wildcard needs
// DNS-01. ok is false when none fits.
func SelectSolver(solvers []api.ACMEChallengeSolver, domain string, wildcard bool, labels map[string]string, offered []string) (SolverChoice, bool) {
	full := domain
	if wildcard {
		full = "*." + domain
	}
	type cand struct {
		rank, sub, labels, idx int
		typ                    string
	}
	var best *cand
	for i, s := range solvers {
		typ := solverType(s)
		if typ == "" || !contains(offered, typ) || (wildcard && typ != "dns-01") {
			continue
		}
		c := cand{idx: i, typ: typ}
		sel := s.Selector
		if sel == nil || (len(sel.DNSNames) == 0 && len(sel.DNSZones) == 0 && len(sel.MatchLabels) == 0) {
			c.rank = 0
		} else {
			if !labelsMatch(sel.MatchLabels, labels) {
				continue
			}
			c.labels = len(sel.MatchLabels)
			switch {
			case len(sel.DNSNames) > 0 && (contains(sel.DNSNames, full) || contains(sel.DNSNames, domain) && !wildcard):
				c.rank = 3
			case len(sel.DNSZones) > 0:
				z := longestZone(sel.DNSZones, domain)
				if z < 0 {
					continue
				}
				c.rank, c.sub = 2, z
			case len(sel.DNSNames) > 0:
				continue // names listed, this one not among them
			default:
				c.rank = 1
			}
		}
		if best == nil || better(c.rank, c.sub, c.labels, best.rank, best.sub, best.labels) {
			cc := c
			best = &cc
		}
	}
	if best == nil {
		return SolverChoice{}, false
	}
	return SolverChoice{Solver: solvers[best.idx], Index: best.idx, Type: best.typ}, true
}

func better(r, s, l, br, bs, bl int) bool {
	if r != br {
		return r > br
	}
	if s != bs {
		return s > bs
	}
	return l > bl
}

func solverType(s api.ACMEChallengeSolver) string {
	switch {
	case s.DNS01 != nil:
		return "dns-01"
	case s.HTTP01 != nil:
		return "http-01"
	}
	return ""
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}

func labelsMatch(want, have map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// longestZone returns the length of the longest zone containing domain,
// -1 when none does.
func longestZone(zones []string, domain string) int {
	best := -1
	d := strings.ToLower(strings.TrimSuffix(domain, "."))
	for _, z := range zones {
		z = strings.ToLower(strings.TrimSuffix(z, "."))
		if z == "" {
			continue
		}
		if (d == z || strings.HasSuffix(d, "."+z)) && len(z) > best {
			best = len(z)
		}
	}
	return best
}
