package gcpmode_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/certfn/certfn/adapters/httpapi/apitest"
)

// The API's Kubernetes parameters through the Cloud Run api service's
// handler on the Firestore emulator (apitest.Semantics).
func TestCloudRunAPIKubernetesParameters(t *testing.T) {
	d := newDeployment(t)
	apitest.Semantics(t, "default", func(t *testing.T, method, path, ct, body string) (int, string) {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer token-ops@example.com")
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		w := httptest.NewRecorder()
		d.api.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	})
}

// The api's token audience is CERTFN_API_AUDIENCE whatever the request's
// Host: a token minted for another service, replayed with that service's
// Host, is refused.
func TestCloudRunAPIAudienceIsFixed(t *testing.T) {
	d := newDeployment(t)
	for _, tc := range []struct {
		name, host, token string
		want              int
	}{
		{"another audience with its Host", "evil.example", "token-ops@example.com|https://evil.example", http.StatusUnauthorized},
		{"another audience with our Host", "api", "token-ops@example.com|https://evil.example", http.StatusUnauthorized},
		{"our audience through another Host", "evil.example", "token-ops@example.com", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/certificates", nil)
			r.Host = tc.host
			r.Header.Set("Authorization", "Bearer "+tc.token)
			w := httptest.NewRecorder()
			d.api.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("%d %s, want %d", w.Code, w.Body, tc.want)
			}
		})
	}
}
