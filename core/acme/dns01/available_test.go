package dns01

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
)

func TestUnavailable(t *testing.T) {
	noop := func(context.Context, ProviderRequest) (Provider, error) { return nil, nil }
	providers := map[string]ProviderFactory{KeyRFC2136: noop, KeyRoute53: noop, WebhookKey("challtestsrv"): noop}
	http01 := api.ACMEChallengeSolver{HTTP01: &api.ACMEChallengeSolverHTTP01{}}
	rfc := api.ACMEChallengeSolver{DNS01: &api.ACMEChallengeSolverDNS01{RFC2136: &api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "ns:53"}}}
	akamai := api.ACMEChallengeSolver{DNS01: &api.ACMEChallengeSolverDNS01{Akamai: &api.ACMEIssuerDNS01ProviderAkamai{ServiceConsumerDomain: "x"}}}
	webhook := func(name string) api.ACMEChallengeSolver {
		raw, _ := json.Marshal(WebhookSolver{GroupName: "acme.example.com", SolverName: name})
		return api.ACMEChallengeSolver{DNS01: &api.ACMEChallengeSolverDNS01{Webhook: raw}}
	}
	for _, tc := range []struct {
		name    string
		solvers []api.ACMEChallengeSolver
		want    []string // substrings; none: available
	}{
		{"http01 only", []api.ACMEChallengeSolver{http01}, nil},
		{"registered providers", []api.ACMEChallengeSolver{http01, rfc, webhook("challtestsrv")}, nil},
		{"akamai", []api.ACMEChallengeSolver{http01, rfc, akamai},
			[]string{"spec.acme.solvers[2].dns01.akamai: this deployment cannot act on the akamai DNS-01 provider", "rfc2136, route53, webhook solverName challtestsrv and http01"}},
		{"unknown webhook", []api.ACMEChallengeSolver{webhook("godaddy")},
			[]string{"spec.acme.solvers[0].dns01.webhook.solverName", `"godaddy"`, "certfn runs no webhook servers"}},
		{"no provider set: left to validation", []api.ACMEChallengeSolver{{DNS01: &api.ACMEChallengeSolverDNS01{}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Unavailable(providers, &api.ACMEIssuer{Solvers: tc.solvers})
			if (got == "") != (tc.want == nil) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
		})
	}
	if got := Unavailable(nil, &api.ACMEIssuer{Solvers: []api.ACMEChallengeSolver{akamai}}); !strings.Contains(got, "no DNS-01 provider (only http01 solvers)") {
		t.Errorf("no providers: %q", got)
	}
}
