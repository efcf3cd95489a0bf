package apiclient

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/idtoken"
)

// How the remote client authenticates (--auth, CERTFN_AUTH).
const (
	// AuthAWSSigV4 signs each request with SigV4 for the service "lambda"
	// (the api function's Function URL with AWS_IAM auth).
	AuthAWSSigV4 = "aws-sigv4"
	// AuthGoogleIDToken sends a Google ID token for the server's audience
	// in `Authorization: Bearer` (the api service on Cloud Run).
	AuthGoogleIDToken = "google-id-token"
	// AuthClientCert presents a TLS client certificate (`certfn serve
	// --api-listen`).
	AuthClientCert = "client-cert"
	// AuthNone sends no credentials (a proxy in front authenticates).
	AuthNone = "none"
)

// AuthModes are the values of --auth.
var AuthModes = []string{AuthAWSSigV4, AuthGoogleIDToken, AuthClientCert, AuthNone}

// SelectAuth returns the authentication of a server: --auth when given,
// else, in this order, client-cert when --client-cert or --client-key is
// given, google-id-token when --token or --audience is, google-id-token
// for a Cloud Run URL (*.run.app), aws-sigv4 for a Function URL
// (*.lambda-url.<region>.on.aws), client-cert when --server-ca is given,
// and aws-sigv4 otherwise (the default before --auth existed).
func SelectAuth(u *url.URL, o Options) (string, error) {
	if a := strings.TrimSpace(o.Auth); a != "" {
		a = strings.ToLower(a)
		if !slices.Contains(AuthModes, a) {
			return "", fmt.Errorf("%s %q: want one of %s", o.name("auth"), o.Auth, strings.Join(AuthModes, ", "))
		}
		return a, nil
	}
	host := strings.ToLower(u.Hostname())
	switch {
	case o.ClientCert != "" || o.ClientKey != "":
		return AuthClientCert, nil
	case o.Token != "" || o.Audience != "":
		return AuthGoogleIDToken, nil
	case isCloudRunHost(host):
		return AuthGoogleIDToken, nil
	case FunctionURLRegion(host) != "":
		return AuthAWSSigV4, nil
	case o.ServerCA != "":
		return AuthClientCert, nil
	}
	return AuthAWSSigV4, nil
}

// isCloudRunHost reports whether host is a Cloud Run service URL's
// (<service>-<hash>-<region>.a.run.app or <service>-<project
// number>.<region>.run.app).
func isCloudRunHost(host string) bool {
	return strings.HasSuffix(host, ".run.app") && len(host) > len(".run.app")
}

// checkAuthFlags refuses flags that belong to another authentication.
// --region is ignored with client certificates, as before --auth.
func checkAuthFlags(auth string, o Options) error {
	for _, f := range []struct {
		flag, value string
		auths       []string
	}{
		{"client-cert", o.ClientCert, []string{AuthClientCert}},
		{"client-key", o.ClientKey, []string{AuthClientCert}},
		{"token", o.Token, []string{AuthGoogleIDToken}},
		{"audience", o.Audience, []string{AuthGoogleIDToken}},
		{"region", o.Region, []string{AuthAWSSigV4, AuthClientCert}},
	} {
		if f.value != "" && !slices.Contains(f.auths, auth) {
			return fmt.Errorf("%s is for --auth %s, not %s", o.name(f.flag), f.auths[0], auth)
		}
	}
	return nil
}

// sigV4Authorizer signs requests with SigV4 using the AWS SDK's default
// credentials (environment, shared files and profiles, SSO, the
// instance or task role); it makes no request (credentials are resolved
// on the first call).
func sigV4Authorizer(ctx context.Context, u *url.URL, o Options) (authorizer, error) {
	var opts []func(*config.LoadOptions) error
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	region := o.Region
	if region == "" {
		region = FunctionURLRegion(u.Hostname())
	}
	if region == "" {
		region = cfg.Region
	}
	if region == "" {
		return nil, fmt.Errorf("--server %s: no AWS region to sign with: pass --region or set AWS_REGION", u.Redacted())
	}
	if cfg.Credentials == nil {
		return nil, fmt.Errorf("no AWS credentials configured (set AWS_PROFILE, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or run on a role)")
	}
	signer, creds, now := v4.NewSigner(), cfg.Credentials, time.Now
	return func(ctx context.Context, req *http.Request, body []byte) error {
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:])
		req.Header.Set("X-Amz-Content-Sha256", hash)
		c, err := creds.Retrieve(ctx)
		if err != nil {
			return fmt.Errorf("AWS credentials: %w", err)
		}
		if err := signer.SignHTTP(ctx, c, req, hash, signingService, region, now()); err != nil {
			return fmt.Errorf("sign %s %s: %w", req.Method, req.URL.Path, err)
		}
		return nil
	}, nil
}

// GoogleTokenSource returns a source of Google ID tokens for audience
// from Application Default Credentials; tests replace it.
var GoogleTokenSource = ADCIDTokenSource

// googleAuthorizer sends `Authorization: Bearer <Google ID token>`: the
// --token given, else one for the audience (--audience, default
// https://<server host>) from Application Default Credentials, fetched
// now and renewed by the token source when it expires.
func googleAuthorizer(ctx context.Context, u *url.URL, o Options) (authorizer, error) {
	if u.Scheme != "https" {
		return nil, fmt.Errorf("--server %s: --auth %s sends a bearer token: the URL must be https", u.Redacted(), AuthGoogleIDToken)
	}
	audience := strings.TrimSpace(o.Audience)
	if o.Audience != "" && (audience == "" || strings.ContainsFunc(audience, unicode.IsSpace)) {
		return nil, fmt.Errorf("%s %q: want one audience, such as the service's URL https://%s", o.name("audience"), o.Audience, u.Host)
	}
	if audience == "" {
		// The api service's default audience is its own URL, https://<Host>.
		audience = "https://" + u.Host
	}
	var ts oauth2.TokenSource
	if o.Token != "" {
		tok, err := CheckToken(o.Token, audience, o.name("token"), time.Now())
		if err != nil {
			return nil, err
		}
		ts = oauth2.StaticTokenSource(&oauth2.Token{AccessToken: tok})
	} else {
		var err error
		if ts, err = GoogleTokenSource(ctx, audience); err != nil {
			return nil, fmt.Errorf("google-id-token: %w", err)
		}
	}
	return func(_ context.Context, req *http.Request, _ []byte) error {
		t, err := ts.Token()
		if err != nil {
			return fmt.Errorf("google-id-token: ID token for audience %s: %w", audience, err)
		}
		req.Header.Set("Authorization", "Bearer "+t.AccessToken)
		return nil
	}, nil
}

// CheckToken returns the --token value trimmed, or an error naming the
// flag when it is not one token, is a JWT already expired at now, or is a
// JWT for another audience (the api would refuse it; refusing here also
// keeps a token meant for another service from being sent to this one).
func CheckToken(token, audience, name string, now time.Time) (string, error) {
	tok := strings.TrimSpace(token)
	switch {
	case tok == "":
		return "", fmt.Errorf("%s is empty", name)
	case len(tok) > 7 && strings.EqualFold(tok[:7], "bearer "):
		return "", fmt.Errorf("%s: give the token alone, without \"Bearer \"", name)
	case strings.ContainsFunc(tok, unicode.IsSpace):
		return "", fmt.Errorf("%s: not one token (it contains white space)", name)
	}
	c, ok := jwtClaimsOf(tok)
	if !ok {
		return tok, nil // not a JWT we can read: the server decides
	}
	if c.Exp > 0 && !now.Before(time.Unix(c.Exp, 0)) {
		return "", fmt.Errorf("%s: the ID token expired at %s (Google's last an hour): get a new one", name, time.Unix(c.Exp, 0).UTC().Format(time.RFC3339))
	}
	if len(c.Aud) > 0 && !slices.Contains(c.Aud, audience) {
		return "", fmt.Errorf("%s: the ID token is for audience %s, not %s, so the api would refuse it: "+
			"a user's token from gcloud is for gcloud's OAuth client; get one for a service account you may impersonate with "+
			"gcloud auth print-identity-token --impersonate-service-account=SA_EMAIL --audiences=%s --include-email "+
			"(or pass --audience %[2]s if the api's CERTFN_API_AUDIENCE is that)", name, strings.Join(c.Aud, ","), audience, audience)
	}
	return tok, nil
}

// jwtClaims are the claims of an ID token the CLI reads (it verifies
// nothing: the server does).
type jwtClaims struct {
	Aud   []string
	Exp   int64
	Email string
}

// jwtClaimsOf decodes the payload of a JWT without verifying it.
func jwtClaimsOf(tok string) (jwtClaims, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return jwtClaims{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return jwtClaims{}, false
	}
	var raw struct {
		Aud   json.RawMessage `json:"aud"`
		Exp   int64           `json:"exp"`
		Email string          `json:"email"`
	}
	if json.Unmarshal(b, &raw) != nil {
		return jwtClaims{}, false
	}
	c := jwtClaims{Exp: raw.Exp, Email: raw.Email}
	var one string
	if json.Unmarshal(raw.Aud, &one) == nil {
		if one != "" {
			c.Aud = []string{one}
		}
	} else if json.Unmarshal(raw.Aud, &c.Aud) != nil {
		return jwtClaims{}, false
	}
	return c, true
}

// ADCIDTokenSource returns ID tokens for audience from Application
// Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's
// application_default_credentials.json, else the metadata server) with
// google.golang.org/api/idtoken, which makes them for service-account
// keys, impersonated service accounts (`gcloud auth application-default
// login --impersonate-service-account`), external accounts (workload
// identity federation) and the metadata server (Cloud Run, GCE, GKE).
// It does not make them for a user's credentials (`gcloud auth
// application-default login`: idtoken answers `unsupported credentials
// type: "authorized_user"`): then the ID token Google returns with the
// user's access token is used if it is for audience, else the error says
// what to do.
func ADCIDTokenSource(ctx context.Context, audience string) (oauth2.TokenSource, error) {
	ts, err := idtoken.NewTokenSource(ctx, audience)
	if err == nil {
		return ts, nil
	}
	creds, cerr := google.FindDefaultCredentials(ctx)
	if cerr != nil || credentialsType(creds.JSON) != "authorized_user" {
		return nil, fmt.Errorf("no ID token for audience %s from Application Default Credentials: %w "+
			"(use a service account: GOOGLE_APPLICATION_CREDENTIALS=<key file>, "+
			"gcloud auth application-default login --impersonate-service-account=SA_EMAIL, or the metadata server; or pass --token)", audience, err)
	}
	return userIDTokenSource(creds.TokenSource, audience, err)
}

// credentialsType returns the "type" of a credentials JSON file.
func credentialsType(b []byte) string {
	var f struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(b, &f) != nil {
		return ""
	}
	return f.Type
}

// userIDTokenSource returns the ID tokens that come with a user's access
// tokens (the token endpoint answers an id_token when the refresh token
// was granted the openid scope, as gcloud's login is). Google issues them
// for the OAuth client the user signed in with, never for another
// audience: they are used only when audience is that client (a
// deployment whose CERTFN_API_AUDIENCE is it); otherwise the error says
// how to get a token the api accepts. idErr is idtoken's error.
func userIDTokenSource(access oauth2.TokenSource, audience string, idErr error) (oauth2.TokenSource, error) {
	const fix = "impersonate a service account you may use (roles/iam.serviceAccountTokenCreator on it): " +
		"gcloud auth application-default login --impersonate-service-account=SA_EMAIL, or " +
		"--token \"$(gcloud auth print-identity-token --impersonate-service-account=SA_EMAIL --audiences=%s --include-email)\""
	src := &userIDTokens{access: access}
	tok, err := src.Token()
	if err != nil {
		return nil, fmt.Errorf("your Application Default Credentials are a user's (gcloud auth application-default login), "+
			"for which idtoken makes no ID token (%v), and %v; "+fix, idErr, err, audience)
	}
	c, _ := jwtClaimsOf(tok.AccessToken)
	if !slices.Contains(c.Aud, audience) {
		return nil, fmt.Errorf("your Application Default Credentials are a user's (gcloud auth application-default login), "+
			"for which idtoken makes no ID token (%v); the ID token Google returns for %s is for the OAuth client %s, not for %s, "+
			"so the api would refuse it: "+fix, idErr, orUnknown(c.Email), strings.Join(c.Aud, ","), audience, audience)
	}
	return oauth2.ReuseTokenSource(tok, src), nil
}

func orUnknown(s string) string {
	if s == "" {
		return "you"
	}
	return s
}

// userIDTokens takes the ID token out of the user's access tokens.
type userIDTokens struct{ access oauth2.TokenSource }

func (s *userIDTokens) Token() (*oauth2.Token, error) {
	t, err := s.access.Token()
	if err != nil {
		return nil, fmt.Errorf("refresh the user's credentials: %w", err)
	}
	id, _ := t.Extra("id_token").(string)
	if id == "" {
		return nil, errors.New("no ID token came with the user's access token (the login's scopes lack openid)")
	}
	out := &oauth2.Token{AccessToken: id, TokenType: "Bearer", Expiry: t.Expiry}
	if c, ok := jwtClaimsOf(id); ok && c.Exp > 0 {
		out.Expiry = time.Unix(c.Exp, 0)
	}
	return out, nil
}
