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

type mapTokens map[string]string

func (m mapTokens) KeyAuthorization(_ context.Context, token string) (string, bool, error) {
	if token == "broken" {
		return "", false, errors.New("store down")
	}
	ka, ok := m[token]
	return ka, ok, nil
}

func TestHandler(t *testing.T) {
	h := Handler{Tokens: mapTokens{"tok_1-A": "tok_1-A.thumb"}}
	tests := []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/.well-known/acme-challenge/tok_1-A", 200, "tok_1-A.thumb"},
		{"HEAD", "/.well-known/acme-challenge/tok_1-A", 200, ""},
		{"GET", "/.well-known/acme-challenge/unknown", 404, ""},
		{"GET", "/.well-known/acme-challenge/", 404, ""},
		{"GET", "/.well-known/acme-challenge", 404, ""},
		{"GET", "/.well-known/acme-challenge/tok_1-A/extra", 404, ""},
		{"GET", "/.well-known/acme-challenge/..%2ftok", 404, ""},
		{"GET", "/", 404, ""},
		{"GET", "/tok_1-A", 404, ""},
		{"POST", "/.well-known/acme-challenge/tok_1-A", 405, ""},
		{"GET", "/.well-known/acme-challenge/broken", 503, ""},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
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
	b, err := json.Marshal(api.Challenge{Spec: api.ChallengeSpec{Type: typ, Token: token, Key: token + ".thumb"},
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
		ka, ok, err := s.KeyAuthorization(ctx, token)
		if err != nil || ok != want || (ok && ka != token+".thumb") {
			t.Errorf("%s: %q %t %v, want served=%t", token, ka, ok, err, want)
		}
	}
	// Unknown tokens within MissRefresh do not hit the store again.
	lists := st.lists
	for i := 0; i < 100; i++ {
		_, _, _ = s.KeyAuthorization(ctx, "probe")
	}
	if st.lists != lists {
		t.Fatalf("%d store lists for 100 probes within the refresh interval", st.lists-lists)
	}
	clk.Advance(300 * time.Millisecond)
	st.recs = append(st.recs, challengeRec(t, api.ACMEChallengeTypeHTTP01, "new", true, api.StatePending))
	if _, ok, _ := s.KeyAuthorization(ctx, "new"); !ok {
		t.Fatal("a newly presented token is not served after the miss refresh interval")
	}
}

func TestSelfCheck(t *testing.T) {
	srv := httptest.NewServer(Handler{Tokens: mapTokens{"good": "good.thumb", "wrong": "other"}})
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
	srv := httptest.NewServer(Handler{Tokens: mapTokens{"good": "good.thumb"}})
	defer srv.Close()
	ok, why, err = (&SelfCheck{Addr: srv.Listener.Addr().String(), Timeout: 2 * time.Second, NoResponder: hint}).Check(context.Background(), ch)
	if !ok || why != "" || err != nil {
		t.Errorf("served elsewhere: ok=%t why=%q err=%v", ok, why, err)
	}
}
