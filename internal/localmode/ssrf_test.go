package localmode

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
)

// A team's Issuer pointing at a loopback "metadata" URL: with the ACME
// server allowed ("*") but no private-network allowance, certfn never
// connects, and the Issuer says which setting would allow it; with
// loopback allowed, the 403 answer's body (fake credentials) appears
// nowhere the team can read — not in the Issuer's status, not in an
// Event. A ClusterIssuer is not restricted (and its status does not echo
// the body either). An empty --acme-server-allow refuses the namespaced
// Issuer before anything else.
func TestNamespacedIssuerSSRF(t *testing.T) {
	const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYFAKEKEY"
	var hits atomic.Int32
	metadata := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"Code":"Success","AccessKeyId":"ASIAFAKE","SecretAccessKey":"` + secret + `"}`))
	}))
	t.Cleanup(metadata.Close)
	issuer := func(kind string) string {
		meta := "{name: meta}"
		if kind == api.KindIssuer {
			meta = "{name: meta, namespace: team-a}"
		}
		return "apiVersion: cert-manager.io/v1\nkind: " + kind + "\nmetadata: " + meta + "\nspec:\n  acme:\n    server: " + metadata.URL +
			"/latest/meta-data/iam/security-credentials/\n    privateKeySecretRef: {name: meta-account}\n    solvers: [{http01: {ingress: {}}}]\n"
	}
	for _, tc := range []struct {
		name      string
		kind      string
		allow     []string
		private   []string
		reached   bool
		reason    string
		msgSubstr string
	}{
		{"Issuer, no server allowed", api.KindIssuer, nil, nil, false, acme.ReasonServerNotAllowed, "--acme-server-allow"},
		{"Issuer, loopback not allowed", api.KindIssuer, []string{"*"}, nil, false, acme.ReasonRegister, "--acme-allow-private-networks"},
		{"Issuer, loopback allowed", api.KindIssuer, []string{"*"}, []string{"127.0.0.0/8"}, true, acme.ReasonRegister, "HTTP 403"},
		{"ClusterIssuer", api.KindClusterIssuer, nil, nil, true, acme.ReasonRegister, "HTTP 403"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			rt, err := Open(Options{DataDir: t.TempDir(), Clock: clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
				ACME: ACMEOptions{ServerAllow: tc.allow, AllowPrivateNetworks: tc.private}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rt.Close() })
			ctx := context.Background()
			objs, err := api.Decode([]byte(issuer(tc.kind)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rt.App.Service.Apply(ctx, app.Caller{Username: "admin", Groups: []string{app.SuperuserGroup}}, objs); err != nil {
				t.Fatal(err)
			}
			if _, err := rt.RunUntilIdle(ctx, 1); err != nil {
				t.Fatal(err)
			}
			ns := ""
			if tc.kind == api.KindIssuer {
				ns = "team-a"
			}
			o, err := rt.Repo.Get(ctx, api.Key{Kind: tc.kind, Namespace: ns, Name: "meta"})
			if err != nil {
				t.Fatal(err)
			}
			c := api.FindCondition(o.(api.GenericIssuer).GetStatus().Conditions, api.IssuerConditionReady)
			if c == nil || c.Status != api.ConditionFalse || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msgSubstr) {
				t.Fatalf("Ready = %+v, want reason %s with %q", c, tc.reason, tc.msgSubstr)
			}
			if reached := hits.Load() > 0; reached != tc.reached {
				t.Fatalf("the metadata URL was reached %d times, want reached %t", hits.Load(), tc.reached)
			}
			// Nothing of the body anywhere: the issuer and every Event.
			readable, _ := json.Marshal(o)
			events, err := rt.Repo.List(ctx, api.KindEvent, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range events {
				b, _ := json.Marshal(e)
				readable = append(readable, b...)
			}
			for _, leak := range []string{secret, "ASIAFAKE", "AccessKeyId"} {
				if strings.Contains(string(readable), leak) {
					t.Fatalf("%q is readable in the status or Events: %s", leak, readable)
				}
			}
		})
	}
}
