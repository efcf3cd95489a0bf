package acme

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/certfn/certfn/adapters/netguard"
	core "github.com/certfn/certfn/core/acme"
)

// secretBody is what a metadata service or an internal API answers.
const secretBody = `{"AccessKeyId":"ASIAFAKEFAKEFAKE","SecretAccessKey":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYFAKEKEY","Token":"IQoJb3JpZ2luX2VjEFAKE"}`

// hostile answers every request from a namespaced Issuer's point of view:
// a directory whose URLs all point at target (another loopback listener,
// standing for a metadata endpoint), and at /secret-dir a directory that is
// itself the "metadata" answer.
func hostileDirectory(target string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Replay-Nonce", "n1")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"newNonce":"%[1]s/nonce","newAccount":"%[1]s/acct","newOrder":"%[1]s/order","revokeCert":"%[1]s/revoke","keyChange":"%[1]s/key"}`, target)
	})
}

func testKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A namespaced Issuer's client (ServerConfig.Cluster false) connects to no
// loopback, link-local or private address unless the operator allows it:
// the directory itself, and every URL a directory on an allowed host hands
// out, are checked at dial time on the address dialled. A ClusterIssuer's
// client is not restricted. Nothing the refused address would answer is
// read.
func TestNamespacedClientRefusesPrivateAddresses(t *testing.T) {
	var hits int
	metadata := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(secretBody))
	}))
	defer metadata.Close()
	dir := httptest.NewServer(hostileDirectory(metadata.URL))
	defer dir.Close()
	// The directory is on an allowed host name; the URLs it hands out are
	// on 127.0.0.1, which is not allowed.
	dirByName := strings.Replace(dir.URL, "127.0.0.1", "localhost", 1) + "/dir"
	byName, err := netguard.Parse("--acme-allow-private-networks", []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	none, err := netguard.Parse("--acme-allow-private-networks", nil)
	if err != nil {
		t.Fatal(err)
	}
	loopback, err := netguard.Parse("--acme-allow-private-networks", []string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		policy   netguard.Policy
		cfg      core.ServerConfig
		refused  bool
		wantHits int
	}{
		{"namespaced, loopback directory", none, core.ServerConfig{Directory: metadata.URL + "/latest/meta-data/"}, true, 0},
		{"namespaced, the directory's URLs on loopback", byName, core.ServerConfig{Directory: dirByName}, true, 0},
		{"namespaced, loopback allowed by the operator", loopback, core.ServerConfig{Directory: dir.URL + "/dir"}, false, 1},
		{"cluster issuer", netguard.Policy{}, core.ServerConfig{Directory: dir.URL + "/dir", Cluster: true}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits = 0
			c, err := NewDialer(Options{Network: tc.policy, Retries: 1}).Client(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Register(context.Background(), core.RegisterRequest{Key: testKey(t), Email: "a@example.com"})
			if err == nil {
				t.Fatal("registered against a hostile server")
			}
			if refused := errors.Is(err, netguard.ErrDenied); refused != tc.refused {
				t.Fatalf("refused %t, want %t: %v", refused, tc.refused, err)
			}
			if tc.refused && !strings.Contains(err.Error(), "--acme-allow-private-networks") {
				t.Errorf("the refusal does not name the setting: %v", err)
			}
			if hits != tc.wantHits {
				t.Fatalf("the metadata listener was reached %d times, want %d", hits, tc.wantHits)
			}
			if strings.Contains(err.Error(), "SecretAccessKey") || strings.Contains(err.Error(), "ASIAFAKE") {
				t.Fatalf("the answer's body is in the error: %v", err)
			}
		})
	}
}

// A remote body is never copied into an error: a page, text or JSON that
// is not a problem document leaves only the status code and the server's
// host; a problem document keeps its type and a bounded detail without
// control characters.
func TestErrorBodiesNeverReachErrors(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
		want                    []string
		absent                  []string
	}{
		{"JSON credentials, 403", "application/json", secretBody, 403, []string{"HTTP 403", "127.0.0.1:"}, []string{"ASIAFAKE", "SecretAccessKey", "IQoJ"}},
		{"HTML, 500", "text/html", "<html>" + secretBody + "</html>", 500, []string{"HTTP 500", "server or proxy error"}, []string{"ASIAFAKE", "html"}},
		{"text, 401", "text/plain", "token=" + secretBody, 401, []string{"HTTP 401"}, []string{"ASIAFAKE", "token="}},
		{"problem+json that is not an object", "application/problem+json", `"` + "ASIAFAKE" + `"`, 400, []string{"HTTP 400"}, []string{"ASIAFAKE"}},
		{"problem+json that does not parse", "application/problem+json", `{"detail":"ASIAFAKE`, 400, []string{"HTTP 400"}, []string{"ASIAFAKE", "raw="}},
		{"problem document", "application/problem+json", `{"type":"urn:ietf:params:acme:error:unauthorized","detail":"account is not\nallowed\u0007 here` + strings.Repeat("x", 2000) + `","status":403,"secret":"ASIAFAKE"}`, 403,
			[]string{"unauthorized: account is not allowed  here"}, []string{"ASIAFAKE", "\n", "\a", strings.Repeat("x", 400)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c, err := NewDialer(Options{Retries: 1}).Client(core.ServerConfig{Directory: srv.URL + "/dir", Cluster: true})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Register(context.Background(), core.RegisterRequest{Key: testKey(t), Email: "a@example.com"})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(err.Error(), a) {
					t.Errorf("error %q contains %q", err, a)
				}
			}
		})
	}
}
