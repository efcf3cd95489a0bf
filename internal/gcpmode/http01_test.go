package gcpmode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/adapters/gcp/firestore"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/gcpmode"
	"github.com/certfn/certfn/tests/emulators"
)

// The http01 service serves a presented token only for its Challenge's
// host (the Host header a load balancer forwards, or the host a redirect
// names after /hosts/); another team's host, the service's own host and a
// wildcard get 404 without the key authorization.
func TestHTTP01ServesTokensOnlyForTheirHost(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", emulators.Firestore(t))
	ctx := context.Background()
	store, err := firestore.Open(ctx, project, firestore.Options{Collection: fmt.Sprintf("h01-%d", time.Now().UnixNano()), ExpiresAt: app.ExpiresAt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	rt, err := gcpmode.FromEnvWith(ctx, gcpmode.RoleHTTP01, gcpmode.Options{Getenv: env{"CERTFN_PROJECT": project}.get, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	const token = "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA"
	const keyAuth = token + ".team-a-thumbprint"
	for _, ch := range []api.Challenge{
		{ObjectMeta: api.ObjectMeta{Name: "a-1", Namespace: "team-a"},
			Spec: api.ChallengeSpec{Type: api.ACMEChallengeTypeHTTP01, Token: token, Key: keyAuth, DNSName: "app.team-a.example.com"}},
		{ObjectMeta: api.ObjectMeta{Name: "a-2", Namespace: "team-a"},
			Spec: api.ChallengeSpec{Type: api.ACMEChallengeTypeHTTP01, Token: "wildToken", Key: "wildToken.x", DNSName: "team-a.example.com", Wildcard: true}},
	} {
		ch.TypeMeta = api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindChallenge}
		ch.Status = api.ChallengeStatus{Presented: true, State: api.StatePending}
		data, _ := json.Marshal(ch)
		if _, err := store.Create(ctx, ports.Record{Key: api.KeyOf(&ch), Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	path := "/.well-known/acme-challenge/" + token
	for _, tc := range []struct {
		host, path string
		code       int
	}{
		{"app.team-a.example.com", path, 200},
		{"App.Team-A.example.com:80", path, 200},
		{"certfn-http01-abc-ew.a.run.app", "/hosts/app.team-a.example.com" + path, 200},
		{"app.team-b.example.com", path, 404},
		{"certfn-http01-abc-ew.a.run.app", path, 404},
		{"certfn-http01-abc-ew.a.run.app", "/hosts/app.team-b.example.com" + path, 404},
		{"team-a.example.com", "/.well-known/acme-challenge/wildToken", 404},
		{"x.team-a.example.com", "/.well-known/acme-challenge/wildToken", 404},
	} {
		r := httptest.NewRequest("GET", tc.path, nil)
		r.Host = tc.host
		w := httptest.NewRecorder()
		rt.ServeHTTP(w, r)
		if w.Code != tc.code {
			t.Errorf("GET %s%s: %d, want %d", tc.host, tc.path, w.Code, tc.code)
		}
		if tc.code == 200 && w.Body.String() != keyAuth {
			t.Errorf("GET %s%s: body %q", tc.host, tc.path, w.Body)
		}
		if tc.code != 200 && strings.Contains(w.Body.String(), "thumbprint") {
			t.Errorf("GET %s%s: the key authorization leaked: %q", tc.host, tc.path, w.Body)
		}
	}
}
