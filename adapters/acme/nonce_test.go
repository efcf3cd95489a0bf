package acme

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	core "github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/errs"
)

// fakeACME is a TEST DOUBLE of an ACME server: a directory (with
// renewalInfo), nonces, one order and one certificate; the first
// rejectNonces signed requests are answered badNonce (with a fresh
// nonce, as RFC 8555 §6.5 requires). It counts requests by kind.
type fakeACME struct {
	mu           sync.Mutex
	rejectNonces int
	counts       map[string]int
	leafPEM      []byte
}

func (f *fakeACME) count(k string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[k]
}

func (f *fakeACME) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	base := "http://" + r.Host
	w.Header().Set("Replay-Nonce", fmt.Sprintf("n%d", len(f.counts)+f.counts["post"]))
	switch {
	case r.URL.Path == "/dir":
		f.counts["directory"]++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"newNonce":"%[1]s/nonce","newAccount":"%[1]s/acct","newOrder":"%[1]s/new-order","revokeCert":"%[1]s/revoke","keyChange":"%[1]s/key","renewalInfo":"%[1]s/ari/"}`, base)
	case r.URL.Path == "/nonce":
		f.counts["nonce"]++
	case strings.HasPrefix(r.URL.Path, "/ari/"):
		f.counts["ari"]++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"suggestedWindow":{"start":"2026-03-01T00:00:00Z","end":"2026-03-03T00:00:00Z"}}`)
	case r.Method == http.MethodPost:
		f.counts["post"]++
		if f.rejectNonces > 0 {
			f.rejectNonces--
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"type":"urn:ietf:params:acme:error:badNonce","detail":"JWS has an invalid anti-replay nonce","status":400}`)
			return
		}
		switch r.URL.Path {
		case "/order/1":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"status":"valid","identifiers":[{"type":"dns","value":"a.test"}],"authorizations":[],"finalize":"%[1]s/finalize/1","certificate":"%[1]s/cert/1"}`, base)
		case "/cert/1":
			w.Header().Set("Content-Type", "application/pem-certificate-chain")
			_, _ = w.Write(f.leafPEM)
		default:
			http.NotFound(w, r)
		}
	default:
		http.NotFound(w, r)
	}
}

func newFakeACME(t *testing.T, reject int) (*fakeACME, core.Client, core.Account) {
	t.Helper()
	leaf := testLeaf(t)
	f := &fakeACME{rejectNonces: reject, counts: map[string]int{}, leafPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := NewDialer(Options{}).Client(core.ServerConfig{Directory: srv.URL + "/dir", Cluster: true}) // the operator's test server on loopback
	if err != nil {
		t.Fatal(err)
	}
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	return f, c, core.Account{URL: srv.URL + "/acct/1", Key: k}
}

// A rejected nonce is retried at once by certfn (acmez's own retry, which
// sleeps 250 ms first, never runs): each rejection costs one request, and
// after maxNonceAttempts the error is a transient badNonce.
func TestBadNonceRetriedByCertfn(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reject    int
		wantPosts int
		wantErr   bool
	}{
		{"accepted", 0, 1, false},
		{"three rejected", 3, 4, false},
		{"always rejected", 1000, maxNonceAttempts, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c, acct := newFakeACME(t, tc.reject)
			o, err := c.GetOrder(context.Background(), acct, strings.TrimSuffix(acct.URL, "/acct/1")+"/order/1")
			if got := f.count("post"); got != tc.wantPosts {
				t.Fatalf("%d signed requests, want %d (acmez retrying by itself would multiply them)", got, tc.wantPosts)
			}
			if tc.wantErr {
				if err == nil || errs.Classify(err) != errs.Transient || !strings.Contains(err.Error(), "badNonce") {
					t.Fatalf("error %v (%v), want a transient badNonce", err, errs.Classify(err))
				}
				return
			}
			if err != nil || o.Status != core.StatusValid {
				t.Fatalf("GetOrder: %+v, %v", o, err)
			}
		})
	}
}

// Downloading a chain makes no renewal information request (acmez would
// make one per chain); RenewalInfo makes exactly one, at the directory's
// renewalInfo URL.
func TestChainsWithoutRenewalInfo(t *testing.T) {
	f, c, acct := newFakeACME(t, 0)
	ctx := context.Background()
	chains, err := c.Chains(ctx, acct, strings.TrimSuffix(acct.URL, "/acct/1")+"/cert/1")
	if err != nil || len(chains) != 1 || chains[0].RenewalInfo != nil {
		t.Fatalf("Chains: %+v, %v", chains, err)
	}
	if n := f.count("ari"); n != 0 {
		t.Fatalf("%d renewal information requests while downloading, want 0", n)
	}
	ri, err := c.RenewalInfo(ctx, testLeaf(t))
	if err != nil || ri.WindowStart.IsZero() {
		t.Fatalf("RenewalInfo: %+v, %v", ri, err)
	}
	if n, d := f.count("ari"), f.count("directory"); n != 1 || d != 1 {
		t.Fatalf("%d renewal information and %d directory requests, want 1 and 1", n, d)
	}
}
