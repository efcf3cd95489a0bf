package localmode

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// The local HTTP-01 listener (--http01-listen) serves a presented token
// only for its Challenge's host: a request for another team's name, for
// the listener's own address, or for a wildcard gets 404 without the key
// authorization.
func TestListenHTTP01ServesTokensOnlyForTheirHost(t *testing.T) {
	rt, err := Open(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ctx := context.Background()
	const token = "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA"
	const keyAuth = token + ".team-a-thumbprint"
	for _, ch := range []api.Challenge{
		{ObjectMeta: api.ObjectMeta{Name: "a-1", Namespace: "team-a"},
			Spec: api.ChallengeSpec{Type: api.ACMEChallengeTypeHTTP01, Token: token, Key: keyAuth, DNSName: "app.team-a.example.com"}},
		{ObjectMeta: api.ObjectMeta{Name: "a-2", Namespace: "team-a"},
			Spec: api.ChallengeSpec{Type: api.ACMEChallengeTypeHTTP01, Token: "ipToken", Key: "ipToken.x", DNSName: "2001:db8::7"}},
	} {
		ch.TypeMeta = api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindChallenge}
		ch.Status = api.ChallengeStatus{Presented: true, State: api.StatePending}
		data, _ := json.Marshal(ch)
		if _, err := rt.Store.Create(ctx, ports.Record{Key: api.KeyOf(&ch), Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	addr, stop, err := rt.ListenHTTP01("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	path := "/.well-known/acme-challenge/" + token
	for _, tc := range []struct {
		host, path string
		code       int
		body       string
	}{
		{"app.team-a.example.com", path, 200, keyAuth},
		{"APP.team-a.example.com.:80", path, 200, keyAuth},
		{"[2001:db8:0:0::7]", "/.well-known/acme-challenge/ipToken", 200, "ipToken.x"},
		{"app.team-b.example.com", path, 404, ""},
		{addr, path, 404, ""},
		{"[2001:db8::7]", path, 404, ""},
	} {
		req, _ := http.NewRequest("GET", "http://"+addr+tc.path, nil)
		req.Host = tc.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != tc.code || (tc.body != "" && string(b) != tc.body) {
			t.Errorf("GET %s%s: %d %q, want %d %q", tc.host, tc.path, resp.StatusCode, b, tc.code, tc.body)
		}
		if tc.code != 200 && strings.Contains(string(b), "thumbprint") {
			t.Errorf("GET %s%s: the key authorization leaked: %q", tc.host, tc.path, b)
		}
	}
}
