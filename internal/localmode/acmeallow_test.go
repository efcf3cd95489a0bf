package localmode

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Options.ACME.ServerAllow reaches the ACME issuer: a namespaced Issuer on
// another server is not Ready, saying which setting refuses it, and no
// HTTP request leaves the process. An invalid entry is refused at Open,
// naming the flag.
func TestOpenACMEServerAllow(t *testing.T) {
	if _, err := Open(Options{DataDir: t.TempDir(), ACME: ACMEOptions{ServerAllow: []string{"acme.example/dir"}}}); err == nil ||
		!strings.Contains(err.Error(), `--acme-server-allow[0]: "acme.example/dir" is not an absolute http(s) URL`) {
		t.Fatalf("Open with an invalid entry: %v", err)
	}
	var requests atomic.Int32
	rt, err := Open(Options{DataDir: t.TempDir(), Clock: clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
		ACME: ACMEOptions{ServerAllow: []string{"https://acme-v02.api.letsencrypt.org/directory"},
			WrapTransport: func(http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(r *http.Request) (*http.Response, error) {
					requests.Add(1)
					return nil, context.Canceled
				})
			}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ctx := context.Background()
	objs, err := api.Decode([]byte(`apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: mine, namespace: team-a}
spec:
  acme:
    server: http://10.0.0.1:8080/directory
    privateKeySecretRef: {name: mine-account}
    solvers: [{http01: {ingress: {}}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.App.Service.Apply(ctx, app.Caller{Username: "admin", Groups: []string{app.SuperuserGroup}}, objs); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunUntilIdle(ctx, 1); err != nil {
		t.Fatal(err)
	}
	o, err := rt.Repo.Get(ctx, api.Key{Kind: api.KindIssuer, Namespace: "team-a", Name: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	c := api.FindCondition(o.(*api.Issuer).Status.Conditions, api.IssuerConditionReady)
	if c == nil || c.Status != api.ConditionFalse || c.Reason != acme.ReasonServerNotAllowed || !strings.Contains(c.Message, "(--acme-server-allow)") {
		t.Fatalf("Ready = %+v", c)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d HTTP requests for a refused issuer", n)
	}
}
