package gcpmode

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/api/idtoken"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/rbac"
)

// TokenValidator checks a Google ID token's signature, expiry and audience
// (*idtoken.Validator).
type TokenValidator interface {
	Validate(ctx context.Context, idToken, audience string) (*idtoken.Payload, error)
}

// googleIssuers are the issuers of Google-signed ID tokens. The validator
// does not check the issuer itself.
var googleIssuers = map[string]bool{"accounts.google.com": true, "https://accounts.google.com": true}

// GoogleAuthenticator returns the api service's authenticator: the caller
// is the e-mail of the Google ID token in the Authorization header
// (`Bearer <token>`, as `gcloud auth print-identity-token` or the CLI's
// Application Default Credentials send it), verified here — signature,
// expiry, issuer, audience and a verified e-mail — even behind Cloud
// Run's own IAM check, so a service deployed without it is not open to
// a forged token. The token's audience must be one of audiences, fixed at
// start (CERTFN_API_AUDIENCE, comma-separated: the service's URL and any
// custom audience), never taken from the request: with none, every
// request is refused. The e-mail maps to RBAC subjects by rbac.FromGoogleEmail
// (users by e-mail, service accounts also in gcp:project:<project>); an
// e-mail listed in admins is also in system:masters. No or a bad token is
// a 401 naming what is wrong.
func GoogleAuthenticator(v TokenValidator, audiences []string, admins map[string]bool) func(*http.Request) (app.Caller, error) {
	var auds []string
	for _, a := range audiences {
		// Never "", which the validator would take as "any audience".
		if a = strings.TrimSpace(a); a != "" {
			auds = append(auds, a)
		}
	}
	return func(r *http.Request) (app.Caller, error) {
		unauth := func(format string, a ...any) (app.Caller, error) {
			return app.Caller{}, fmt.Errorf("%w: %s", httpapi.ErrUnauthenticated, fmt.Sprintf(format, a...))
		}
		if len(auds) == 0 {
			return unauth("the api has no ID token audience configured (%s)", EnvAPIAudience)
		}
		h := r.Header.Get("Authorization")
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			return unauth("no Google ID token (send Authorization: Bearer <ID token for audience %s>)", auds[0])
		}
		var p *idtoken.Payload
		var err error
		for _, aud := range auds {
			if p, err = v.Validate(r.Context(), strings.TrimSpace(token), aud); err == nil {
				break
			}
		}
		if err != nil {
			return unauth("the ID token is not valid for this service: %v", boundErr(err))
		}
		email, _ := p.Claims["email"].(string)
		verified, _ := p.Claims["email_verified"].(bool)
		switch {
		case !googleIssuers[p.Issuer]:
			return unauth("the ID token's issuer %q is not Google's", p.Issuer)
		case email == "":
			return unauth("the ID token carries no e-mail (request it with the email scope, or an identity token for a service account)")
		case !verified:
			return unauth("the ID token's e-mail %q is not verified", email)
		}
		id, err := rbac.FromGoogleEmail(email)
		if err != nil {
			return unauth("%v", err)
		}
		if admins[id.Username] {
			id.Groups = append(id.Groups, app.SuperuserGroup)
		}
		return app.Caller{Username: id.Username, UID: p.Subject, Groups: id.Groups, Extra: id.Extra}, nil
	}
}

// boundErr keeps a validation error short (it may quote the token).
func boundErr(err error) error {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return errors.New(s)
}
