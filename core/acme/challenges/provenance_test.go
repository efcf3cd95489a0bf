package challenges_test

import (
	"strings"
	"testing"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/acmetest"
	"github.com/certfn/certfn/core/acme/challenges"
	"github.com/certfn/certfn/core/api"
)

// A Challenge is acted on only when certfn made it: its Order (itself
// traced to an approved request) lists its URL and token as the server's
// offer, its key authorization is the issuer account's, and a DNS-01
// solver is the issuer's own. Anything else fails before it is presented,
// before any secret is read and before any ACME request.
func TestChallengeProvenance(t *testing.T) {
	for _, tc := range []struct {
		name   string
		typ    api.ACMEChallengeType
		tamper func(r *acmetest.Rig, c *api.Challenge) // after the rig built its chain
		want   string
	}{
		{"URL the server did not offer", api.ACMEChallengeTypeHTTP01, func(_ *acmetest.Rig, c *api.Challenge) {
			c.Spec.URL = "https://attacker.example/chall"
		}, "not one the ACME server offered"},
		{"token the server did not offer", api.ACMEChallengeTypeHTTP01, func(_ *acmetest.Rig, c *api.Challenge) {
			c.Spec.Token, c.Spec.Key = "mine", "mine.thumb"
		}, "not one the ACME server offered"},
		{"key authorization of another account", api.ACMEChallengeTypeHTTP01, func(_ *acmetest.Rig, c *api.Challenge) {
			c.Spec.Key = c.Spec.Token + ".attacker"
		}, "not the key authorization of the issuer's ACME account"},
		{"solver the issuer does not configure", api.ACMEChallengeTypeDNS01, func(_ *acmetest.Rig, c *api.Challenge) {
			c.Spec.Solver.DNS01 = &api.ACMEChallengeSolverDNS01{RFC2136: &api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "203.0.113.1",
				TSIGSecret: api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "ca-key-pair"}, Key: "tls.key"}}}
		}, "not the solver the issuer's spec selects"},
		{"no Order", api.ACMEChallengeTypeHTTP01, func(_ *acmetest.Rig, c *api.Challenge) {
			c.OwnerReferences[0].Name = "nope"
		}, `Order "nope" does not exist`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &dnsSolver{}
			r := acmetest.NewRig(t, nil, challenges.Config{DNS01: d})
			c := challenge("x", "victim.example.com", tc.typ, 0)
			// The rig gives an owner-less Challenge the chain certfn would
			// have made; tampering comes after, as a writer of the stored
			// object would.
			r.Create(c)
			stored := get(r, "x")
			tc.tamper(r, stored)
			acme.StampSpec(&stored.ObjectMeta, stored.Spec)
			rec, _ := r.Store.Get(r.Ctx, key("x"))
			if _, err := r.Objects.UpdateObject(r.Ctx, stored, rec.Version, acmetest.T0); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 4 && !get(r, "x").IsFinal(); i++ {
				r.MustReconcile(key("x"))
			}
			got := get(r, "x")
			if got.Status.State != api.StateErrored || !strings.Contains(got.Status.Reason, tc.want) {
				t.Fatalf("state %q reason %q, want errored with %q", got.Status.State, got.Status.Reason, tc.want)
			}
			if got.Status.Presented || len(d.presented) != 0 {
				t.Fatalf("presented: %v %v", got.Status.Presented, d.presented)
			}
			for _, call := range r.Client.Calls() {
				if strings.HasPrefix(call, "AcceptChallenge") {
					t.Fatalf("the ACME server was asked to validate: %v", r.Client.Calls())
				}
			}
		})
	}
}
