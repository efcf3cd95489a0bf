package acme

import (
	"encoding/json"
	"testing"

	"github.com/certfn/certfn/core/api"
)

// solver builds a solver: http01 unless dns is set, with a marker in the
// ingress so tests can tell solvers apart.
func solver(marker string, dns bool, sel *api.CertificateDNSNameSelector) api.ACMEChallengeSolver {
	s := api.ACMEChallengeSolver{Selector: sel}
	if dns {
		s.DNS01 = &api.ACMEChallengeSolverDNS01{Webhook: json.RawMessage(`{"solverName":"` + marker + `"}`)}
	} else {
		s.HTTP01 = &api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{Class: &marker}}
	}
	return s
}

func names(n ...string) *api.CertificateDNSNameSelector {
	return &api.CertificateDNSNameSelector{DNSNames: n}
}
func zones(z ...string) *api.CertificateDNSNameSelector {
	return &api.CertificateDNSNameSelector{DNSZones: z}
}
func labels(kv ...string) *api.CertificateDNSNameSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &api.CertificateDNSNameSelector{MatchLabels: m}
}

func TestSelectSolver(t *testing.T) {
	both := []string{"http-01", "dns-01"}
	tests := []struct {
		name     string
		solvers  []api.ACMEChallengeSolver
		domain   string
		wildcard bool
		labels   map[string]string
		offered  []string
		want     int // index, -1: none
	}{
		{"default only", []api.ACMEChallengeSolver{solver("d", false, nil)}, "a.example.com", false, nil, both, 0},
		{"first default wins", []api.ACMEChallengeSolver{solver("d1", false, nil), solver("d2", false, nil)}, "a.example.com", false, nil, both, 0},
		{"dnsNames beat default", []api.ACMEChallengeSolver{solver("d", false, nil), solver("n", false, names("a.example.com"))}, "a.example.com", false, nil, both, 1},
		{"dnsNames not listed fall back", []api.ACMEChallengeSolver{solver("d", false, nil), solver("n", false, names("b.example.com"))}, "a.example.com", false, nil, both, 0},
		{"dnsZones beat default", []api.ACMEChallengeSolver{solver("d", false, nil), solver("z", false, zones("example.com"))}, "a.example.com", false, nil, both, 1},
		{"longest zone wins", []api.ACMEChallengeSolver{solver("z1", false, zones("example.com")), solver("z2", false, zones("sub.example.com"))}, "a.sub.example.com", false, nil, both, 1},
		{"zone is the name itself", []api.ACMEChallengeSolver{solver("z", false, zones("example.com"))}, "example.com", false, nil, both, 0},
		{"zone does not match a suffix that is not a label", []api.ACMEChallengeSolver{solver("z", false, zones("ample.com"))}, "example.com", false, nil, both, -1},
		{"dnsNames beat dnsZones", []api.ACMEChallengeSolver{solver("z", false, zones("example.com")), solver("n", false, names("a.example.com"))}, "a.example.com", false, nil, both, 1},
		{"labels beat default", []api.ACMEChallengeSolver{solver("d", false, nil), solver("l", false, labels("team", "blue"))}, "a.example.com", false, map[string]string{"team": "blue"}, both, 1},
		{"labels must all match", []api.ACMEChallengeSolver{solver("d", false, nil), solver("l", false, labels("team", "blue", "env", "prod"))}, "a.example.com", false, map[string]string{"team": "blue"}, both, 0},
		{"zone beats labels", []api.ACMEChallengeSolver{solver("l", false, labels("team", "blue")), solver("z", false, zones("example.com"))}, "a.example.com", false, map[string]string{"team": "blue"}, both, 1},
		{"more labels win among zones", []api.ACMEChallengeSolver{
			solver("z", false, zones("example.com")),
			solver("zl", false, &api.CertificateDNSNameSelector{DNSZones: []string{"example.com"}, MatchLabels: map[string]string{"team": "blue"}}),
		}, "a.example.com", false, map[string]string{"team": "blue"}, both, 1},
		{"wildcard needs dns01", []api.ACMEChallengeSolver{solver("h", false, nil), solver("d", true, nil)}, "example.com", true, nil, both, 1},
		{"wildcard without dns01", []api.ACMEChallengeSolver{solver("h", false, nil)}, "example.com", true, nil, both, -1},
		{"wildcard listed with its label", []api.ACMEChallengeSolver{solver("d", true, nil), solver("n", true, names("*.example.com"))}, "example.com", true, nil, both, 1},
		{"type not offered", []api.ACMEChallengeSolver{solver("h", false, nil)}, "a.example.com", false, nil, []string{"dns-01"}, -1},
		{"falls to an offered type", []api.ACMEChallengeSolver{solver("n", false, names("a.example.com")), solver("d", true, nil)}, "a.example.com", false, nil, []string{"dns-01"}, 1},
		{"no solvers", nil, "a.example.com", false, nil, both, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := SelectSolver(tc.solvers, tc.domain, tc.wildcard, tc.labels, tc.offered)
			switch {
			case tc.want < 0 && ok:
				t.Fatalf("chose solver %d, want none", got.Index)
			case tc.want >= 0 && !ok:
				t.Fatalf("no solver, want %d", tc.want)
			case ok && got.Index != tc.want:
				t.Fatalf("chose solver %d, want %d", got.Index, tc.want)
			}
		})
	}
}
