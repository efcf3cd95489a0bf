package app_test

import (
	"strings"
	"testing"

	"github.com/certfn/certfn/core/acme/acmetest"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/memory"
)

// An ACME issuer naming a DNS-01 provider the deployment cannot act on
// (akamai, an unknown webhook) is not Ready and says which solver, without
// any ACME request; one with only available solvers registers as usual.
func TestACMEIssuerWithUnavailableSolver(t *testing.T) {
	client := &acmetest.Client{}
	d := newACMEDeployment(t, memory.NewStore(), memory.NewSecrets(), client, []string{"*"})
	withSolvers := func(name, solvers string) string {
		return strings.Replace(acmeIssuerYAML("Issuer", "team", name, "https://acme.test/dir"),
			"solvers: [{http01: {ingress: {}}}]", "solvers: "+solvers, 1)
	}
	d.apply(withSolvers("akamai", `[{http01: {}}, {dns01: {akamai: {serviceConsumerDomain: akab.example.net,
      clientTokenSecretRef: {name: akamai, key: clientToken}, clientSecretSecretRef: {name: akamai, key: clientSecret},
      accessTokenSecretRef: {name: akamai, key: accessToken}}}}]`) +
		withSolvers("webhook", `[{dns01: {webhook: {groupName: acme.example.com, solverName: godaddy}}}]`) +
		withSolvers("ok", `[{http01: {}}]`))
	d.drain()
	for _, tc := range []struct {
		name, reason, msg string
	}{
		{"akamai", dns01.ReasonSolverNotAvailable, "spec.acme.solvers[1].dns01.akamai: this deployment cannot act on the akamai DNS-01 provider"},
		{"webhook", dns01.ReasonSolverNotAvailable, `spec.acme.solvers[0].dns01.webhook.solverName: this deployment cannot act on a webhook solver "godaddy"`},
		{"ok", "ACMEAccountRegistered", ""},
	} {
		c := d.ready(api.Key{Kind: api.KindIssuer, Namespace: "team", Name: tc.name})
		if c == nil || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msg) {
			t.Errorf("%s: Ready %+v, want reason %s and %q", tc.name, c, tc.reason, tc.msg)
		}
	}
	if n := countCalls(client, "Register"); n != 1 {
		t.Errorf("%d registrations, want 1 (only the issuer whose solvers are available)", n)
	}
}
