package http01

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/ports"
)

// mapTokens holds key authorizations by "host token".
type mapTokens map[string]string

func (m mapTokens) KeyAuthorization(_ context.Context, host, token string) (string, bool, error) {
	if token == "broken" {
		return "", false, errors.New("store down")
	}
	ka, ok := m[host+" "+token]
	return ka, ok, nil
}

func TestHandler(t *testing.T) {
	h := Handler{Tokens: mapTokens{"www.example.test tok_1-A": "tok_1-A.thumb", "192.0.2.7 tok_ip4": "tok_ip4.thumb",
		"2001:db8::7 tok_ip6": "tok_ip6.thumb"}}
	tests := []struct {
		method, host, path string
		code               int
		body               string
	}{
		{"GET", "www.example.test", "/.well-known/acme-challenge/tok_1-A", 200, "tok_1-A.thumb"},
		{"HEAD", "www.example.test", "/.well-known/acme-challenge/tok_1-A", 200, ""},
		{"GET", "WWW.Example.TEST:80", "/.well-known/acme-challenge/tok_1-A", 200, "tok_1-A.thumb"},
		{"GET", "www.example.test.", "/.well-known/acme-challenge/tok_1-A", 200, "tok_1-A.thumb"},
		{"GET", "responder.example.net", "/hosts/www.example.test/.well-known/acme-challenge/tok_1-A", 200, "tok_1-A.thumb"},
		{"GET", "192.0.2.7", "/.well-known/acme-challenge/tok_ip4", 200, "tok_ip4.thumb"},
		{"GET", "192.0.2.7:80", "/.well-known/acme-challenge/tok_ip4", 200, "tok_ip4.thumb"},
		{"GET", "[2001:DB8:0::7]:80", "/.well-known/acme-challenge/tok_ip6", 200, "tok_ip6.thumb"},
		{"GET", "[2001:db8::7]", "/.well-known/acme-challenge/tok_ip6", 200, "tok_ip6.thumb"},
		// Another identifier's token is not served: the other team's host,
		// the responder's own name, a sibling, an IP for a name.
		{"GET", "app.team-b.example.com", "/.well-known/acme-challenge/tok_1-A", 404, ""},
		{"GET", "responder.example.net", "/.well-known/acme-challenge/tok_1-A", 404, ""},
		{"GET", "example.test", "/.well-known/acme-challenge/tok_1-A", 404, ""},
		{"GET", "x.www.example.test", "/.well-known/acme-challenge/tok_1-A", 404, ""},
		{"GET", "192.0.2.7", "/.well-known/acme-challenge/tok_1-A", 404, ""},
		{"GET", "www.example.test", "/.well-known/acme-challenge/tok_ip4", 404, ""},
		{"GET", "responder.example.net", "/hosts/app.team-b.example.com/.well-known/acme-challenge/tok_1-A", 404, ""},
		{"GET", "www.example.test", "/hosts//.well-known/acme-challenge/tok_1-A", 404, ""},
		{"GET", "www.example.test", "/hosts/www.example.test", 404, ""},
		// Malformed hosts.
		{"GET", "", "/.well-known/acme-challenge/tok_1-A", 404, ""},
		{"GET", "*.example.test", "/.well-known/acme-challenge/tok_1-A", 404, ""},
		{"GET", "www.example.test:http", "/.well-known/acme-challenge/tok_1-A", 404, ""},
		{"GET", "[2001:db8::7", "/.well-known/acme-challenge/tok_ip6", 404, ""},
		{"GET", "[fe80::1%25eth0]", "/.well-known/acme-challenge/tok_ip6", 404, ""},
		{"GET", "www.example.test", "/.well-known/acme-challenge/unknown", 404, ""},
		{"GET", "www.example.test", "/.well-known/acme-challenge/", 404, ""},
		{"GET", "www.example.test", "/.well-known/acme-challenge", 404, ""},
		{"GET", "www.example.test", "/.well-known/acme-challenge/tok_1-A/extra", 404, ""},
		{"GET", "www.example.test", "/.well-known/acme-challenge/..%2ftok", 404, ""},
		{"GET", "www.example.test", "/", 404, ""},
		{"GET", "www.example.test", "/tok_1-A", 404, ""},
		{"POST", "www.example.test", "/.well-known/acme-challenge/tok_1-A", 405, ""},
		{"GET", "www.example.test", "/.well-known/acme-challenge/broken", 503, ""},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.host+" "+tc.path, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := httptest.NewRequest(tc.method, tc.path, nil)
			r.Host = tc.host
			h.ServeHTTP(w, r)
			if w.Code != tc.code {
				t.Fatalf("status %d, want %d", w.Code, tc.code)
			}
			if tc.body != "" && w.Body.String() != tc.body {
				t.Fatalf("body %q, want %q", w.Body.String(), tc.body)
			}
			if tc.code != 200 && strings.Contains(w.Body.String(), "thumb") {
				t.Fatal("a key authorization leaked into an error response")
			}
		})
	}
}

// listStore is a ports.Store that only lists the given Challenges and counts lists.
type listStore struct {
	ports.Store
	recs  []ports.Record
	lists int
}

func (s *listStore) List(_ context.Context, opts ports.ListOptions) ([]ports.Record, error) {
	s.lists++
	if opts.Kind != api.KindChallenge {
		return nil, nil
	}
	return s.recs, nil
}

func challengeRec(t *testing.T, typ api.ACMEChallengeType, token string, presented bool, state api.State) ports.Record {
	t.Helper()
	return challengeFor(t, "www.example.test", false, typ, token, presented, state)
}

func challengeFor(t *testing.T, dnsName string, wildcard bool, typ api.ACMEChallengeType, token string, presented bool, state api.State) ports.Record {
	t.Helper()
	b, err := json.Marshal(api.Challenge{Spec: api.ChallengeSpec{Type: typ, Token: token, Key: token + ".thumb", DNSName: dnsName, Wildcard: wildcard},
		Status: api.ChallengeStatus{Presented: presented, State: state, Processing: presented}})
	if err != nil {
		t.Fatal(err)
	}
	return ports.Record{Key: api.Key{Kind: api.KindChallenge, Namespace: "ns", Name: token}, Data: b}
}

func TestStoreTokens(t *testing.T) {
	st := &listStore{recs: []ports.Record{
		challengeRec(t, api.ACMEChallengeTypeHTTP01, "current", true, api.StateProcessing),
		challengeRec(t, api.ACMEChallengeTypeHTTP01, "notyet", false, ""),
		challengeRec(t, api.ACMEChallengeTypeHTTP01, "done", false, api.StateValid),
		challengeRec(t, api.ACMEChallengeTypeHTTP01, "finalpresented", true, api.StateInvalid),
		challengeRec(t, api.ACMEChallengeTypeDNS01, "dns", true, api.StatePending),
	}}
	clk := clock.NewFake(time.Unix(1000, 0))
	s := &StoreTokens{Store: st, Clock: clk}
	ctx := context.Background()
	for token, want := range map[string]bool{"current": true, "notyet": false, "done": false, "finalpresented": false, "dns": false} {
		ka, ok, err := s.KeyAuthorization(ctx, "www.example.test", token)
		if err != nil || ok != want || (ok && ka != token+".thumb") {
			t.Errorf("%s: %q %t %v, want served=%t", token, ka, ok, err, want)
		}
	}
	// Unknown tokens within MissRefresh do not hit the store again.
	lists := st.lists
	for i := 0; i < 100; i++ {
		_, _, _ = s.KeyAuthorization(ctx, "www.example.test", "probe")
	}
	if st.lists != lists {
		t.Fatalf("%d store lists for 100 probes within the refresh interval", st.lists-lists)
	}
	clk.Advance(300 * time.Millisecond)
	st.recs = append(st.recs, challengeRec(t, api.ACMEChallengeTypeHTTP01, "new", true, api.StatePending))
	if _, ok, _ := s.KeyAuthorization(ctx, "www.example.test", "new"); !ok {
		t.Fatal("a newly presented token is not served after the miss refresh interval")
	}
}

// A token is served only for its Challenge's identifier; one token of two
// Challenges for different hosts serves each its own key authorization.
func TestStoreTokensHost(t *testing.T) {
	shared := challengeFor(t, "app.team-b.example.com", false, api.ACMEChallengeTypeHTTP01, "shared", true, api.StatePending)
	var c api.Challenge
	_ = json.Unmarshal(shared.Data, &c)
	c.Spec.Key = "shared.team-b-thumb"
	shared.Data, _ = json.Marshal(c)
	st := &listStore{recs: []ports.Record{
		challengeFor(t, "App.Team-A.example.com", false, api.ACMEChallengeTypeHTTP01, "tokA", true, api.StatePending),
		challengeFor(t, "team-a.example.com", true, api.ACMEChallengeTypeHTTP01, "wild", true, api.StatePending),
		challengeFor(t, "2001:db8::1", false, api.ACMEChallengeTypeHTTP01, "ip6", true, api.StatePending),
		challengeFor(t, "app.team-a.example.com", false, api.ACMEChallengeTypeHTTP01, "shared", true, api.StatePending),
		shared,
	}}
	s := &StoreTokens{Store: st, Clock: clock.NewFake(time.Unix(1000, 0))}
	for _, tc := range []struct {
		host, token, want string
	}{
		{"app.team-a.example.com", "tokA", "tokA.thumb"},
		{"app.team-b.example.com", "tokA", ""},
		{"team-a.example.com", "wild", ""},
		{"x.team-a.example.com", "wild", ""},
		{"2001:db8::1", "ip6", "ip6.thumb"},
		{"app.team-a.example.com", "shared", "shared.thumb"},
		{"app.team-b.example.com", "shared", "shared.team-b-thumb"},
	} {
		ka, ok, err := s.KeyAuthorization(context.Background(), tc.host, tc.token)
		if err != nil || ok != (tc.want != "") || ka != tc.want {
			t.Errorf("%s %s: %q %t %v, want %q", tc.host, tc.token, ka, ok, err, tc.want)
		}
	}
}

func TestSelfCheck(t *testing.T) {
	srv := httptest.NewServer(Handler{Tokens: mapTokens{"www.example.test good": "good.thumb", "www.example.test wrong": "other"}})
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	c := &SelfCheck{Addr: addr, Timeout: 2 * time.Second}
	ch := func(token string) *api.Challenge {
		return &api.Challenge{Spec: api.ChallengeSpec{DNSName: "www.example.test", Token: token, Key: token + ".thumb"}}
	}
	tests := []struct {
		token string
		ok    bool
		why   string
	}{
		{"good", true, ""},
		{"wrong", false, "not the expected key authorization"},
		{"missing", false, "HTTP 404"},
	}
	for _, tc := range tests {
		ok, why, err := c.Check(context.Background(), ch(tc.token))
		if err != nil || ok != tc.ok || !strings.Contains(why, tc.why) {
			t.Errorf("%s: ok=%t why=%q err=%v", tc.token, ok, why, err)
		}
	}
	// Nothing listening: not ok, with the reason.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	ok, why, err := (&SelfCheck{Addr: dead, Timeout: time.Second}).Check(context.Background(), ch("good"))
	if ok || err != nil || !strings.Contains(why, "connect") {
		t.Errorf("dead responder: ok=%t why=%q err=%v", ok, why, err)
	}
}

func TestSelfCheckNoResponder(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	ch := &api.Challenge{Spec: api.ChallengeSpec{DNSName: "www.example.test", Token: "good", Key: "good.thumb"}}
	const hint = "no HTTP-01 listener is running in this certfn serve (start it with --http01-listen :80)"
	ok, why, err := (&SelfCheck{Addr: dead, Timeout: time.Second, NoResponder: hint}).Check(context.Background(), ch)
	if ok || err != nil || !strings.HasPrefix(why, hint+"; GET http://www.example.test/.well-known/acme-challenge/good: ") ||
		!strings.Contains(why, "connect") {
		t.Errorf("no responder: ok=%t why=%q err=%v", ok, why, err)
	}
	// Something else serves the token (a proxy to another process): no hint.
	srv := httptest.NewServer(Handler{Tokens: mapTokens{"www.example.test good": "good.thumb"}})
	defer srv.Close()
	ok, why, err = (&SelfCheck{Addr: srv.Listener.Addr().String(), Timeout: 2 * time.Second, NoResponder: hint}).Check(context.Background(), ch)
	if !ok || why != "" || err != nil {
		t.Errorf("served elsewhere: ok=%t why=%q err=%v", ok, why, err)
	}
}

// A failed check of <name>:80 while a responder runs ends with the
// deployment's hint on pointing the check elsewhere; a check already
// pointed elsewhere, or one that passes, carries none.
func TestSelfCheckAddrHint(t *testing.T) {
	const hint = "set --http01-self-check-addr"
	ch := &api.Challenge{Spec: api.ChallengeSpec{DNSName: "no-such-host.invalid", Token: "good", Key: "good.thumb"}}
	ok, why, err := (&SelfCheck{Timeout: time.Second, AddrHint: hint}).Check(context.Background(), ch)
	if ok || err != nil || !strings.HasPrefix(why, "GET http://no-such-host.invalid/.well-known/acme-challenge/good: ") || !strings.HasSuffix(why, "; "+hint) {
		t.Errorf("name:80 unreachable: ok=%t why=%q err=%v", ok, why, err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	ok, why, err = (&SelfCheck{Addr: dead, Timeout: time.Second, AddrHint: hint}).Check(context.Background(), ch)
	if ok || err != nil || strings.Contains(why, hint) {
		t.Errorf("Addr set: ok=%t why=%q err=%v, want no hint", ok, why, err)
	}
	srv := httptest.NewServer(Handler{Tokens: mapTokens{"no-such-host.invalid good": "good.thumb"}})
	defer srv.Close()
	if ok, why, err := (&SelfCheck{Addr: srv.Listener.Addr().String(), Timeout: 2 * time.Second, AddrHint: hint}).Check(context.Background(), ch); !ok || why != "" || err != nil {
		t.Errorf("served: ok=%t why=%q err=%v", ok, why, err)
	}
}
