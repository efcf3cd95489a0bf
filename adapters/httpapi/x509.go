package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/certfn/certfn/core/app"
)

// X509Caller authenticates a request by its verified TLS client
// certificate, as Kubernetes' x509 client-certificate authentication: the
// subject's common name is the username, its organizations are the groups
// (plus system:authenticated). The server must have verified the chain
// (tls.RequireAndVerifyClientCert with the client CA); a request without a
// verified certificate is unauthenticated.
func X509Caller(r *http.Request) (app.Caller, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return app.Caller{}, fmt.Errorf("%w: no verified TLS client certificate", ErrUnauthenticated)
	}
	leaf := r.TLS.VerifiedChains[0][0]
	if leaf.Subject.CommonName == "" {
		return app.Caller{}, fmt.Errorf("%w: %w", ErrUnauthenticated, errors.New("the client certificate's subject has no common name (the username)"))
	}
	groups := append([]string{"system:authenticated"}, leaf.Subject.Organization...)
	return app.Caller{Username: leaf.Subject.CommonName, Groups: groups}, nil
}
