package httpapi

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"net/http"

	"github.com/certfn/certfn/core/app"
)

// oidCommonName is the X.520 commonName attribute (2.5.4.3).
var oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}

// X509Caller authenticates a request by its verified TLS client
// certificate, as Kubernetes' x509 client-certificate authentication: the
// subject's common name is the username, its organizations are the groups
// (plus system:authenticated). The server must have verified the chain
// (tls.RequireAndVerifyClientCert with the client CA); a request without a
// verified certificate is unauthenticated, and so is one whose subject
// holds no common name or more than one: Go's Subject.CommonName is the
// last CN attribute, another reader could take the first, so a subject
// with two names has no single username.
func X509Caller(r *http.Request) (app.Caller, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return app.Caller{}, fmt.Errorf("%w: no verified TLS client certificate", ErrUnauthenticated)
	}
	leaf := r.TLS.VerifiedChains[0][0]
	if n := commonNames(leaf.Subject); n > 1 {
		return app.Caller{}, fmt.Errorf("%w: the client certificate's subject has %d common names; exactly one (the username) is required", ErrUnauthenticated, n)
	}
	if leaf.Subject.CommonName == "" {
		return app.Caller{}, fmt.Errorf("%w: %w", ErrUnauthenticated, errors.New("the client certificate's subject has no common name (the username)"))
	}
	groups := append([]string{"system:authenticated"}, leaf.Subject.Organization...)
	return app.Caller{Username: leaf.Subject.CommonName, Groups: groups}, nil
}

// commonNames counts the CN attributes of a parsed subject (Names holds
// every attribute of every RDN, multi-valued RDNs included).
func commonNames(n pkix.Name) int {
	count := 0
	for _, a := range n.Names {
		if a.Type.Equal(oidCommonName) {
			count++
		}
	}
	return count
}
