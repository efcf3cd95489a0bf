package httpapi

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/http"
	"slices"
	"testing"
)

func TestX509Caller(t *testing.T) {
	withLeaf := func(subject pkix.Name) *http.Request {
		return &http.Request{TLS: &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{Subject: subject}}}}}
	}
	c, err := X509Caller(withLeaf(pkix.Name{CommonName: "alice", Organization: []string{"team-a", "system:masters"}}))
	if err != nil || c.Username != "alice" || !slices.Equal(c.Groups, []string{"system:authenticated", "team-a", "system:masters"}) {
		t.Fatalf("caller %+v, %v", c, err)
	}
	for name, r := range map[string]*http.Request{
		"plain HTTP":        {},
		"no verified chain": {TLS: &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{Subject: pkix.Name{CommonName: "mallory"}}}}},
		"no common name":    withLeaf(pkix.Name{Organization: []string{"system:masters"}}),
	} {
		if _, err := X509Caller(r); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: %v, want ErrUnauthenticated", name, err)
		}
	}
}
