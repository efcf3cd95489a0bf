package dns01

import (
	"fmt"
	"slices"
	"strings"

	"github.com/certfn/certfn/core/api"
)

// ReasonSolverNotAvailable is the Ready reason of an ACME issuer that names
// a DNS-01 provider this deployment cannot act on.
const ReasonSolverNotAvailable = "SolverNotAvailable"

// Unavailable returns why an ACME issuer's solvers cannot all be acted on
// with providers (a deployment's Ports.DNS01), or "" when they can: the
// first DNS-01 solver whose provider is not registered, named by its field
// path as cert-manager renders it ("spec.acme.solvers[1].dns01.akamai", or
// ".webhook.solverName" for a webhook solver), with the providers that are.
// cert-manager accepts such an issuer and fails at the Challenge; certfn
// keeps the issuer not Ready instead, so the failure shows where it is
// configured. HTTP-01 solvers are always available (certfn serves them).
// A solver naming no provider, or several, is left to validation and to
// the Challenge's error.
func Unavailable(providers map[string]ProviderFactory, a *api.ACMEIssuer) string {
	if a == nil {
		return ""
	}
	for i, s := range a.Solvers {
		if s.DNS01 == nil {
			continue
		}
		path := fmt.Sprintf("spec.acme.solvers[%d].dns01", i)
		key, webhook, err := providerKey(s.DNS01, path)
		if err != nil || providers[key] != nil {
			continue
		}
		field := path + "." + key
		what := "the " + key + " DNS-01 provider"
		if webhook != nil {
			field = path + ".webhook.solverName"
			what = fmt.Sprintf("a webhook solver %q (certfn runs no webhook servers; a webhook solverName selects a provider compiled into certfn)", webhook.SolverName)
		}
		return fmt.Sprintf("%s: this deployment cannot act on %s; it acts on %s", field, what, availableList(providers))
	}
	return ""
}

// availableList renders the registered provider keys, webhook solver
// names as "webhook solverName X".
func availableList(providers map[string]ProviderFactory) string {
	var out []string
	for k := range providers {
		if name, ok := strings.CutPrefix(k, KeyWebhook+"/"); ok {
			out = append(out, "webhook solverName "+name)
			continue
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return "no DNS-01 provider (only http01 solvers)"
	}
	slices.Sort(out)
	return strings.Join(out, ", ") + " and http01"
}
