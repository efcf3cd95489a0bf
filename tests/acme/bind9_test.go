package acme

import (
	"fmt"
	"strings"
	"testing"
	"time"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/localmode"
	"github.com/certfn/certfn/tests/dns/dnstest"
)

// bindSolver is an rfc2136 DNS-01 solver against a running BIND
// (tests/dns/dnstest): one of its TSIG keys, cert-manager's algorithm
// name for it (empty: the HMACMD5 default), and the protocol.
type bindSolver struct {
	bind     *dnstest.BIND
	alg      string // BIND's key algorithm: "hmac-sha256"
	tsigAlg  string // the manifest's tsigAlgorithm: "HMACSHA256", "" for the default
	protocol string // "", "UDP" or "TCP"
}

// envOpts returns options for an env whose Pebble VA asks BIND (the only
// DNS server it knows, for the DNS-01 TXT records) and whose DNS-01
// self-check finds zones and authoritative servers through BIND. local,
// when set, adjusts the runtime's options further.
func (b bindSolver) envOpts(local func(*localmode.Options)) envOpts {
	return envOpts{pebble: pebbleOpts{dnsServer: b.bind.Addr}, local: func(o *localmode.Options) {
		o.ACME.DNS01Resolver = dns01.Resolver{Nameservers: []string{b.bind.Addr}, AuthoritativePort: b.bind.Port, Timeout: time.Second}
		if local != nil {
			local(o)
		}
	}}
}

// storeSecret stores the TSIG secret as <namespace>/tsig (key "secret").
func (b bindSolver) storeSecret(e *env, namespace string) {
	e.t.Helper()
	key := b.bind.Keys[b.alg]
	if err := e.rt.Secrets.Put(e.ctx, ports.Secret{Namespace: namespace, Name: "tsig", Data: map[string][]byte{"secret": []byte(key.Secret)}}); err != nil {
		e.t.Fatal(err)
	}
}

// solvers is the spec.acme.solvers block (indented for issuerYAML).
func (b bindSolver) solvers() string {
	key := b.bind.Keys[b.alg]
	var extra string
	if b.tsigAlg != "" {
		extra += "\n          tsigAlgorithm: " + b.tsigAlg
	}
	if b.protocol != "" {
		extra += "\n          protocol: " + b.protocol
	}
	return fmt.Sprintf(`    solvers:
    - selector: {dnsZones: [%s]}
      dns01:
        rfc2136:
          nameserver: %s
          tsigKeyName: %s%s
          tsigSecretSecretRef: {name: tsig, key: secret}
`, strings.TrimSuffix(dnstest.ZoneExample, "."), b.bind.Addr, key.Name, extra)
}

// namespacedIssuerYAML is an Issuer "pebble" in namespace default for
// this Pebble with extra spec.acme lines.
func (e *env) namespacedIssuerYAML(extra string) string {
	y := e.issuerYAML(extra)
	return strings.Replace(y, "kind: ClusterIssuer\nmetadata: {name: pebble}", "kind: Issuer\nmetadata: {name: pebble, namespace: default}", 1)
}

// A wildcard and its base name over DNS-01 with RFC 2136 dynamic updates
// signed with TSIG, against a real BIND that is also the only DNS server
// Pebble's VA asks: issued, both values were on BIND at some point, and
// none is left once the Certificate is Ready. A ClusterIssuer reads the
// TSIG secret in the cluster resource namespace, an Issuer in its own.
func TestDNS01WildcardRFC2136BIND(t *testing.T) {
	b := dnstest.StartBIND(t)
	zone := strings.TrimSuffix(dnstest.ZoneExample, ".")
	fqdn := dns01.RecordName(zone)
	tests := []struct {
		name      string
		solver    bindSolver
		kind      string
		secretsNS string
	}{
		{"ClusterIssuer/UDP/HMACSHA256", bindSolver{bind: b, alg: "hmac-sha256", tsigAlg: "HMACSHA256"}, api.KindClusterIssuer, "cert-manager"},
		{"Issuer/TCP/HMACSHA512", bindSolver{bind: b, alg: "hmac-sha512", tsigAlg: "HMACSHA512", protocol: "TCP"}, api.KindIssuer, "default"},
		{"ClusterIssuer/TCP/default HMACMD5", bindSolver{bind: b, alg: "hmac-md5", protocol: "TCP"}, api.KindClusterIssuer, "cert-manager"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := b.TXT(t, fqdn); len(got) != 0 {
				t.Fatalf("BIND serves %s %q before the test", fqdn, got)
			}
			e := newEnv(t, tc.solver.envOpts(nil))
			tc.solver.storeSecret(e, tc.secretsNS)
			cert := certYAML("wild", []string{`"*.` + zone + `"`, zone}, "")
			if tc.kind == api.KindIssuer {
				e.apply(e.namespacedIssuerYAML(tc.solver.solvers()))
				cert = strings.Replace(cert, "kind: ClusterIssuer", "kind: Issuer", 1)
			} else {
				e.apply(e.issuerYAML(tc.solver.solvers()))
			}
			e.apply(cert)
			seen := map[string]bool{}
			ok := e.until(400, 2*time.Second, func() bool {
				for _, v := range b.TXT(t, fqdn) {
					seen[v] = true
				}
				return e.ready("wild")
			})
			if !ok {
				t.Fatalf("not Ready: %+v\norders:%s\nchallenges:%s\nbind:\n%s", e.cert("wild").Status.Conditions,
					e.describe(api.KindOrder), e.describe(api.KindChallenge), tailLines(b.Log(), 20))
			}
			e.verify("wild-tls", "anything."+zone, zone)

			orders := e.orders()
			if len(orders) != 1 || orders[0].Status.State != api.StateValid || len(orders[0].Status.Authorizations) != 2 {
				t.Fatalf("want one valid Order with two authorizations: %s", e.describe(api.KindOrder))
			}
			// Each authorization's value was served by BIND (Pebble's VA
			// asks nothing else), and none is left.
			want := e.dns01Values(orders[0], tc.secretsNS)
			if len(want) != 2 || len(seen) != 2 || !seen[want[0]] || !seen[want[1]] {
				t.Errorf("values seen on BIND %v, want the two authorizations' %v", seen, want)
			}
			if got := b.TXT(t, fqdn); len(got) != 0 {
				t.Fatalf("TXT records left on BIND after issuance: %s %q", fqdn, got)
			}
			if chs := e.challenges(); len(chs) != 0 {
				t.Errorf("Challenges left after success: %s", e.describe(api.KindChallenge))
			}
			t.Logf("values seen on BIND during issuance: %d", len(seen))
		})
	}
}

// dns01Values returns the DNS-01 TXT values of the order's authorizations
// for the account key stored in namespace (secret pebble-account).
func (e *env) dns01Values(o *api.Order, namespace string) []string {
	e.t.Helper()
	sec, err := e.rt.Secrets.Get(e.ctx, namespace, "pebble-account")
	if err != nil {
		e.t.Fatal(err)
	}
	key, err := pki.DecodePrivateKeyPEM(sec.Data["tls.key"])
	if err != nil {
		e.t.Fatal(err)
	}
	tp, err := acmeadapter.NewDialer(acmeadapter.Options{}).Thumbprint(key)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, az := range o.Status.Authorizations {
		for _, ch := range az.Challenges {
			if ch.Type == "dns-01" {
				out = append(out, dns01.TXTValue(ch.Token+"."+tp))
			}
		}
	}
	return out
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
