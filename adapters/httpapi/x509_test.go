package httpapi_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/adapters/httpapi/apitest"
)

var oidCN = asn1.ObjectIdentifier{2, 5, 4, 3}

// leaf creates and parses a certificate with subject (or, when raw is
// set, with that DER subject), so that Subject.Names is what a verified
// client certificate carries.
func leaf(t *testing.T, subject pkix.Name, raw pkix.RDNSequence) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: subject, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	if raw != nil {
		if tmpl.RawSubject, err = asn1.Marshal(raw); err != nil {
			t.Fatal(err)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func withLeaf(c *x509.Certificate) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/v1/certificates", nil)
	r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{c}}}
	return r
}

func TestX509Caller(t *testing.T) {
	c, err := httpapi.X509Caller(withLeaf(leaf(t, pkix.Name{CommonName: "alice", Organization: []string{"team-a", "system:masters"}}, nil)))
	if err != nil || c.Username != "alice" || !slices.Equal(c.Groups, []string{"system:authenticated", "team-a", "system:masters"}) {
		t.Fatalf("caller %+v, %v", c, err)
	}
	plain := httptest.NewRequest(http.MethodGet, "/v1/certificates", nil)
	unverified := httptest.NewRequest(http.MethodGet, "/v1/certificates", nil)
	unverified.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf(t, pkix.Name{CommonName: "mallory"}, nil)}}
	for _, tc := range []struct {
		name string
		r    *http.Request
		want string
	}{
		{"plain HTTP", plain, "no verified TLS client certificate"},
		{"no verified chain", unverified, "no verified TLS client certificate"},
		{"no common name", withLeaf(leaf(t, pkix.Name{Organization: []string{"system:masters"}}, nil)), "no common name"},
		// Go's Subject.CommonName is the last CN; another reader may take
		// the first. (With a CN in ExtraNames, pkix.Name drops CommonName.)
		{"two common names (ExtraNames)", withLeaf(leaf(t, pkix.Name{Organization: []string{"team-a"},
			ExtraNames: []pkix.AttributeTypeAndValue{{Type: oidCN, Value: "admin"}, {Type: oidCN, Value: "alice"}}}, nil)), "2 common names"},
		{"two common names in one RDN", withLeaf(leaf(t, pkix.Name{}, pkix.RDNSequence{
			{{Type: oidCN, Value: "alice"}, {Type: oidCN, Value: "admin"}}})), "2 common names"},
		{"two common names in separate RDNs", withLeaf(leaf(t, pkix.Name{}, pkix.RDNSequence{
			{{Type: oidCN, Value: "admin"}}, {{Type: asn1.ObjectIdentifier{2, 5, 4, 10}, Value: "system:masters"}}, {{Type: oidCN, Value: "alice"}}})), "2 common names"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := httpapi.X509Caller(tc.r)
			if !errors.Is(err, httpapi.ErrUnauthenticated) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("caller %+v, %v; want ErrUnauthenticated containing %q", c, err, tc.want)
			}
		})
	}
}

// The API answers 401 to a client certificate with two common names.
func TestX509CallerTwoCommonNamesIs401(t *testing.T) {
	rt, _ := apitest.Runtime(t)
	h, err := httpapi.New(httpapi.Config{Service: rt.Service, Authenticate: httpapi.X509Caller, Logger: apitest.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		subject pkix.Name
		want    int
	}{
		{"one common name", pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}, http.StatusOK},
		{"two common names", pkix.Name{Organization: []string{"system:masters"},
			ExtraNames: []pkix.AttributeTypeAndValue{{Type: oidCN, Value: "alice"}, {Type: oidCN, Value: "admin"}}}, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, withLeaf(leaf(t, tc.subject, nil)))
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
		})
	}
}
