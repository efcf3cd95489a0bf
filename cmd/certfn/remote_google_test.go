package main

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/certfn/certfn/core/app"

	"golang.org/x/oauth2"
	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/adapters/httpapi/apitest"
	"github.com/certfn/certfn/internal/apiclient"
	"github.com/certfn/certfn/internal/gcpmode"
)

// Test Google identities.
const (
	ciEmail     = "ci@proj-1.iam.gserviceaccount.com" // in CERTFN_API_ADMINS
	readerEmail = "reader@proj-1.iam.gserviceaccount.com"
	userEmail   = "dev@example.com"
	gcloudADC   = "1234-adc.apps.googleusercontent.com" // the OAuth client of a user's login
)

// fakeGoogle is Google's side of ID tokens: it signs them (RS256), serves
// its key as Google's JWK set to idtoken's validator, and answers
// OAuth 2.0 token requests at /token as Google's token endpoint does — a
// service account's JWT assertion with target_audience gets an ID token
// for that audience, a user's refresh token an access token with an ID
// token for the OAuth client.
type fakeGoogle struct {
	t      *testing.T
	key    *rsa.PrivateKey
	srv    *httptest.Server
	saKeys map[string]*rsa.PublicKey // client_email → key
	grants sync.Map                  // grant type → *atomic.Int32
}

func newFakeGoogle(t *testing.T) *fakeGoogle {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	g := &fakeGoogle{t: t, key: k, saKeys: map[string]*rsa.PublicKey{}}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *fakeGoogle) serve(w http.ResponseWriter, r *http.Request) {
	b64 := base64.RawURLEncoding.EncodeToString
	if r.URL.Path != "/token" { // idtoken's validator fetching Google's certificates
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kid": "k1", "kty": "RSA", "alg": "RS256", "use": "sig",
			"n": b64(g.key.N.Bytes()), "e": b64(big.NewInt(int64(g.key.E)).Bytes())}}})
		return
	}
	grant := r.PostFormValue("grant_type")
	n, _ := g.grants.LoadOrStore(grant, new(atomic.Int32))
	n.(*atomic.Int32).Add(1)
	w.Header().Set("Content-Type", "application/json")
	switch grant {
	case "urn:ietf:params:oauth:grant-type:jwt-bearer":
		parts := strings.Split(r.PostFormValue("assertion"), ".")
		var c struct {
			Iss            string `json:"iss"`
			TargetAudience string `json:"target_audience"`
		}
		payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
		if len(parts) != 3 || json.Unmarshal(payload, &c) != nil || !g.verifySA(c.Iss, parts) || c.TargetAudience == "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"id_token": g.token(c.TargetAudience, c.Iss, time.Hour)})
	case "refresh_token":
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "ya29.user", "token_type": "Bearer", "expires_in": 3599,
			"id_token": g.token(r.PostFormValue("client_id"), userEmail, time.Hour)})
	default:
		w.WriteHeader(http.StatusBadRequest)
	}
}

// verifySA checks an assertion's signature with the service account's key.
func (g *fakeGoogle) verifySA(email string, parts []string) bool {
	pub := g.saKeys[email]
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if pub == nil || err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	return rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) == nil
}

func (g *fakeGoogle) grantCount(grant string) int32 {
	n, ok := g.grants.Load(grant)
	if !ok {
		return 0
	}
	return n.(*atomic.Int32).Load()
}

// token signs a Google ID token for aud and email valid for ttl (negative: expired).
func (g *fakeGoogle) token(aud, email string, ttl time.Duration) string {
	b64 := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": "k1", "typ": "JWT"})
	now := time.Now()
	p, _ := json.Marshal(map[string]any{"iss": "https://accounts.google.com", "aud": aud, "sub": "sub-" + email, "email": email,
		"email_verified": true, "iat": now.Add(-time.Minute).Unix(), "exp": now.Add(ttl).Unix()})
	signing := b64(h) + "." + b64(p)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, g.key, crypto.SHA256, sum[:])
	if err != nil {
		g.t.Fatal(err)
	}
	return signing + "." + b64(sig)
}

// validator is idtoken's validator with every request sent to g.
func (g *fakeGoogle) validator() *idtoken.Validator {
	u, _ := url.Parse(g.srv.URL)
	v, err := idtoken.NewValidator(context.Background(), option.WithHTTPClient(&http.Client{Transport: rewriteTo{u}}))
	if err != nil {
		g.t.Fatal(err)
	}
	return v
}

type rewriteTo struct{ u *url.URL }

func (r rewriteTo) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.u.Scheme, r.u.Host
	return http.DefaultTransport.RoundTrip(req)
}

// serviceAccountKey writes a service account's key file whose token_uri
// is g's, and registers its key.
func (g *fakeGoogle) serviceAccountKey(email string) string {
	g.t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		g.t.Fatal(err)
	}
	g.saKeys[email] = &k.PublicKey
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	return g.credentialsFile("sa.json", map[string]string{"type": "service_account", "project_id": "proj-1", "private_key_id": "sa-k1",
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "client_email": email,
		"client_id": "1001", "token_uri": g.srv.URL + "/token"})
}

// userCredentials writes gcloud's application_default_credentials.json
// of a user (authorized_user) whose token_uri is g's.
func (g *fakeGoogle) userCredentials() string {
	return g.credentialsFile("user.json", map[string]string{"type": "authorized_user", "client_id": gcloudADC,
		"client_secret": "s3cret", "refresh_token": "1//refresh", "token_uri": g.srv.URL + "/token"})
}

func (g *fakeGoogle) credentialsFile(name string, v map[string]string) string {
	b, _ := json.Marshal(v)
	p := filepath.Join(g.t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		g.t.Fatal(err)
	}
	return p
}

// googleEnv is the GCP api service's HTTP API (httpapi with gcpmode's
// GoogleAuthenticator, audience the server's URL) over TLS on a
// local runtime, and the CLI's environment for it.
type googleEnv struct {
	t      *testing.T
	google *fakeGoogle
	srv    *httptest.Server
	ca     string // the server's certificate, for --server-ca
	// tokens is what the injected token source was asked for: audiences.
	mu        sync.Mutex
	audiences []string
	email     string // whose ID tokens the injected source makes
}

func newGoogleEnv(t *testing.T) *googleEnv {
	t.Helper()
	setupEnv(t)
	g := newFakeGoogle(t)
	rt, _ := apitest.Runtime(t)
	e := &googleEnv{t: t, google: g, email: ciEmail}
	e.srv = e.serve(rt, g, "")
	e.ca = e.serverCA(e.srv)
	e.injectTokens()
	for k, v := range map[string]string{"CERTFN_SERVER": e.srv.URL, "CERTFN_AUTH": authGoogleIDToken, "CERTFN_SERVER_CA": e.ca,
		// No test may find real Application Default Credentials.
		"GOOGLE_APPLICATION_CREDENTIALS": filepath.Join(t.TempDir(), "none.json"), "CLOUDSDK_CONFIG": t.TempDir(),
		"GOOGLE_API_USE_CLIENT_CERTIFICATE": "false", "GOOGLE_API_GO_EXPERIMENTAL_ENABLE_NEW_AUTH_LIB": ""} {
		t.Setenv(k, v)
	}
	return e
}

// serve starts the api on rt with audience ("" = the server's own URL,
// https://<address>, fixed before it serves as a deployment fixes it).
func (e *googleEnv) serve(rt *apitest.Deployment, g *fakeGoogle, audience string) *httptest.Server {
	srv := httptest.NewUnstartedServer(nil)
	if audience == "" {
		audience = "https://" + srv.Listener.Addr().String()
	}
	auth := gcpmode.GoogleAuthenticator(g.validator(), []string{audience}, map[string]bool{ciEmail: true})
	h, err := httpapi.New(httpapi.Config{Service: rt.Service, Authenticate: auth, Logger: apitest.Discard(), MaxBody: 64 << 10})
	if err != nil {
		e.t.Fatal(err)
	}
	srv.Config.Handler = h
	srv.StartTLS()
	e.t.Cleanup(srv.Close)
	return srv
}

func (e *googleEnv) serverCA(srv *httptest.Server) string {
	p := filepath.Join(e.t.TempDir(), "server-ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// injectTokens replaces Application Default Credentials with a source
// of e.email's ID tokens signed by the fake Google.
func (e *googleEnv) injectTokens() {
	old := apiclient.GoogleTokenSource
	e.t.Cleanup(func() { apiclient.GoogleTokenSource = old })
	apiclient.GoogleTokenSource = func(_ context.Context, audience string) (oauth2.TokenSource, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.audiences = append(e.audiences, audience)
		if e.email == "" {
			return nil, errors.New("no credentials (test)")
		}
		return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: e.google.token(audience, e.email, time.Hour)}), nil
	}
}

func (e *googleEnv) run(stdin string, args ...string) result {
	e.t.Helper()
	return cli(e.t, filepath.Join(e.t.TempDir(), "unused"), stdin, args...)
}

func (e *googleEnv) ok(stdin string, args ...string) string {
	e.t.Helper()
	r := e.run(stdin, args...)
	if r.code != 0 {
		e.t.Fatalf("certfn %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// The CLI works against the GCP api service with a Google ID token for the
// service's URL; the api refuses no token, another audience and an
// unbound account.
func TestRemoteGoogle(t *testing.T) {
	e := newGoogleEnv(t)
	origin := e.srv.URL // the api's default audience, https://<Host>
	if out := e.ok(selfSignedIssuer+"---\n"+appCert, "apply", "-f", "-"); !strings.Contains(out, "certificate.cert-manager.io/app (default) created") {
		t.Fatalf("apply: %q", out)
	}
	if out := e.ok("", "get", "certificates"); !strings.Contains(out, "app") {
		t.Fatalf("get certificates: %q", out)
	}
	if len(e.audiences) != 2 || e.audiences[0] != origin || e.audiences[1] != origin {
		t.Fatalf("token source asked for %v, want the server's origin %s per invocation", e.audiences, origin)
	}
	// An explicit token is sent as it is; the token source is not asked.
	e.email = ""
	if out := e.ok("", "--token", e.google.token(origin, ciEmail, time.Hour), "get", "issuers"); !strings.Contains(out, "selfsigned") {
		t.Fatalf("get with --token: %q", out)
	}
	t.Setenv("CERTFN_TOKEN", e.google.token(origin, ciEmail, time.Hour))
	e.ok("", "get", "issuers")
	t.Setenv("CERTFN_TOKEN", "")

	e.email = readerEmail
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unbound service account", []string{"get", "certificates"}, nil,
			"forbidden: " + readerEmail + " may not list Certificate/default/"},
		{"no token", []string{"--auth", "none", "get", "certificates"}, nil,
			"the server refused the credentials (401): unauthenticated: no Google ID token (send Authorization: Bearer <ID token for audience " + origin + ">)"},
		{"another audience", []string{"--audience", "https://elsewhere.example", "get", "certificates"}, nil,
			"the server refused the credentials (401): unauthenticated: the ID token is not valid for this service: idtoken: audience provided does not match aud claim in the JWT"},
		{"no credentials", []string{"get", "certificates"}, map[string]string{"email": ""}, "google-id-token: no credentials (test)"},
		{"--token for another audience", []string{"--token", e.google.token("32555940559.apps.googleusercontent.com", userEmail, time.Hour), "get", "certificates"}, nil,
			"--token: the ID token is for audience 32555940559.apps.googleusercontent.com, not " + origin + ", so the api would refuse it"},
		{"CERTFN_TOKEN for another audience", []string{"get", "certificates"}, map[string]string{"CERTFN_TOKEN": e.google.token("https://x.a.run.app", ciEmail, time.Hour)},
			"CERTFN_TOKEN: the ID token is for audience https://x.a.run.app, not " + origin},
		{"expired --token", []string{"--token", e.google.token(origin, ciEmail, -time.Minute), "get", "certificates"}, nil,
			"--token: the ID token expired at "},
		{"--token with Bearer", []string{"--token", "Bearer abc", "get", "certificates"}, nil, `--token: give the token alone, without "Bearer "`},
		{"forged --token", []string{"--token", newFakeGoogle(t).token(origin, ciEmail, time.Hour), "get", "certificates"}, nil,
			"(401): unauthenticated: the ID token is not valid for this service"},
		{"http URL", []string{"--server", strings.Replace(e.srv.URL, "https:", "http:", 1), "get", "certificates"}, nil,
			"--auth google-id-token sends a bearer token: the URL must be https"},
		{"bad --audience", []string{"--audience", "a b", "get", "certificates"}, nil, `--audience "a b": want one audience`},
		{"bad --auth", []string{"--auth", "gcp", "get", "certificates"}, nil, `--auth "gcp": want one of aws-sigv4, google-id-token, client-cert, none`},
		{"bad CERTFN_AUTH", []string{"get", "certificates"}, map[string]string{"CERTFN_AUTH": "iam"}, `CERTFN_AUTH "iam": want one of`},
		{"--region with google", []string{"--region", "europe-west1", "get", "certificates"}, nil, "--region is for --auth aws-sigv4, not google-id-token"},
		{"--token with sigv4", []string{"--auth", "aws-sigv4", "--token", "abc", "get", "certificates"}, nil, "--token is for --auth google-id-token, not aws-sigv4"},
		{"CERTFN_AUDIENCE with client-cert", []string{"--auth", "client-cert", "get", "certificates"}, map[string]string{"CERTFN_AUDIENCE": "x"},
			"CERTFN_AUDIENCE is for --auth google-id-token, not client-cert"},
		{"--client-cert with google", []string{"--client-cert", "c.pem", "--auth", "google-id-token", "get", "certificates"}, nil,
			"--client-cert is for --auth client-cert, not google-id-token"},
		{"--server-ca alone", []string{"get", "certificates"}, map[string]string{"CERTFN_AUTH": ""},
			"--auth client-cert needs --client-cert and --client-key (with --server-ca alone, choose the server's --auth"},
		{"--as", []string{"--as", "bob", "get", "certificates"}, nil, "the e-mail of your Google ID token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				if k == "email" {
					old := e.email
					e.email = v
					t.Cleanup(func() { e.email = old })
					continue
				}
				t.Setenv(k, v)
			}
			failsWith(t, e.run("", tc.args...), tc.want)
		})
	}
	// Cloud Run's own refusal (not certfn's answer) says what to check.
	cloudRun := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusForbidden)
		_, _ = fmt.Fprint(w, "<html><title>403 Forbidden</title>Your client does not have permission to get URL</html>")
	}))
	t.Cleanup(cloudRun.Close)
	failsWith(t, e.run("", "--server", cloudRun.URL, "--server-ca", e.serverCA(cloudRun), "get", "certificates"),
		"answered 403 Forbidden: <html><title>403 Forbidden</title>Your client does not have permission to get URL</html> (Cloud Run refused the request: your account needs roles/run.invoker")
}

// With Application Default Credentials — here a service account's key
// file, its token_uri the fake Google — the CLI gets its ID tokens with
// google.golang.org/api/idtoken, once per token lifetime, however many
// requests a command makes.
func TestRemoteGoogleADCServiceAccount(t *testing.T) {
	e := newGoogleEnv(t)
	apiclient.GoogleTokenSource = apiclient.ADCIDTokenSource // the real one
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", e.google.serviceAccountKey(ciEmail))
	if out := e.ok(selfSignedIssuer, "apply", "-f", "-"); !strings.Contains(out, "created") {
		t.Fatalf("apply: %q", out)
	}
	const jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	if n := e.google.grantCount(jwtBearer); n != 1 {
		t.Fatalf("%d token requests, want 1", n)
	}
	c, err := newRemoteClient(context.Background(), remoteOptions{Server: e.srv.URL, Auth: authGoogleIDToken, ServerCA: e.ca})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.List(context.Background(), "Issuer", "default", app.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.google.grantCount(jwtBearer); n != 2 {
		t.Fatalf("%d token requests after a second client's three calls, want 2 (one per client: the token is reused)", n)
	}
	// A key file the token endpoint does not know.
	other := newFakeGoogle(t)
	other.srv.Close()
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", other.serviceAccountKey(readerEmail))
	failsWith(t, e.run("", "get", "issuers"), "google-id-token: no ID token for audience "+e.srv.URL+" from Application Default Credentials: oauth2: cannot fetch token")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "missing.json"))
	failsWith(t, e.run("", "get", "issuers"), "google-id-token: no ID token for audience "+e.srv.URL+
		" from Application Default Credentials: google: error getting credentials using GOOGLE_APPLICATION_CREDENTIALS environment variable")
}

// A user's credentials (gcloud auth application-default login): idtoken
// makes no ID token from them, and the one Google returns with the
// user's access token is for gcloud's OAuth client — sent only to an api
// whose audience is that client, else the error says what to do.
func TestRemoteGoogleADCUser(t *testing.T) {
	e := newGoogleEnv(t)
	apiclient.GoogleTokenSource = apiclient.ADCIDTokenSource
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", e.google.userCredentials())
	origin := e.srv.URL // the api's default audience, https://<Host>
	failsWith(t, e.run("", "get", "issuers"), `google-id-token: your Application Default Credentials are a user's (gcloud auth application-default login), `+
		`for which idtoken makes no ID token (idtoken: unsupported credentials type: "authorized_user"); the ID token Google returns for `+userEmail+
		` is for the OAuth client `+gcloudADC+`, not for `+origin+`, so the api would refuse it: impersonate a service account you may use `+
		`(roles/iam.serviceAccountTokenCreator on it): gcloud auth application-default login --impersonate-service-account=SA_EMAIL, or `+
		`--token "$(gcloud auth print-identity-token --impersonate-service-account=SA_EMAIL --audiences=`+origin+` --include-email)"`)

	// An api whose CERTFN_API_AUDIENCE is that client accepts the user.
	rt, _ := apitest.Runtime(t)
	srv := e.serve(rt, e.google, gcloudADC)
	failsWith(t, e.run("", "--server", srv.URL, "--audience", gcloudADC, "--server-ca", e.serverCA(srv), "get", "issuers"),
		"forbidden: "+userEmail+" may not list Issuer/default/")
	if n := e.google.grantCount("refresh_token"); n != 2 {
		t.Fatalf("%d refreshes, want 2 (one per invocation)", n)
	}
}

func TestCheckToken(t *testing.T) {
	g := &fakeGoogle{t: t}
	var err error
	if g.key, err = rsa.GenerateKey(rand.Reader, 1024); err != nil { // signatures are not checked here
		t.Fatal(err)
	}
	const aud = "https://certfn-api-abc-ew.a.run.app"
	arrayAud := func(auds ...string) string {
		b, _ := json.Marshal(map[string]any{"aud": auds})
		return "e30." + base64.RawURLEncoding.EncodeToString(b) + ".c2ln"
	}
	now := time.Now()
	for _, tc := range []struct{ name, token, want string }{
		{"ok", g.token(aud, ciEmail, time.Hour), ""},
		{"trailing newline", g.token(aud, ciEmail, time.Hour) + "\n", ""},
		{"opaque", "not-a-jwt", ""},
		{"audience list", arrayAud("https://other", aud), ""},
		{"empty", "  ", "--token is empty"},
		{"bearer", "bearer x.y.z", `--token: give the token alone, without "Bearer "`},
		{"two tokens", "a b", "--token: not one token (it contains white space)"},
		{"expired", g.token(aud, ciEmail, -time.Second), "--token: the ID token expired at "},
		{"other audience", g.token("https://other", ciEmail, time.Hour), "--token: the ID token is for audience https://other, not " + aud},
		{"other audiences", arrayAud("a", "b"), "--token: the ID token is for audience a,b, not " + aud},
	} {
		tok, err := apiclient.CheckToken(tc.token, aud, "--token", now)
		switch {
		case tc.want == "" && (err != nil || tok != strings.TrimSpace(tc.token)):
			t.Errorf("%s: %q, %v", tc.name, tok, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
