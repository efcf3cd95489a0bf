package cloudrun

import (
	"bufio"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TEST DOUBLE: NOT GOOGLE. googleFront stands in for what a Cloud Run
// container reaches of Google over the network and no emulator provides:
//
//   - the TLS front ends of *.googleapis.com, as an HTTPS proxy (CONNECT)
//     the services are pointed at by HTTPS_PROXY, the variable Go's HTTP
//     client and gRPC honour; it terminates TLS for the host the client
//     asked for with a certificate of its own CA (SSL_CERT_FILE, which Go's
//     crypto/x509 reads, holds that CA only) and relays the plaintext to the
//     backend routed for that host: the Secret Manager and Cloud Tasks
//     doubles over gRPC, and Google's ID token keys (JWKS) over HTTP/1.1. A
//     host without a route is refused and recorded (refused), so a call to
//     a Google API the test did not expect fails the test instead of
//     leaving the machine;
//   - Google's ID tokens: RS256 JWTs signed by its own key (idToken), whose
//     public key it serves where idtoken.Validator fetches Google's
//     (https://www.googleapis.com/oauth2/v3/certs);
//   - the metadata server of each Cloud Run service (GCE_METADATA_HOST,
//     which cloud.google.com/go/compute/metadata honours): OAuth access
//     tokens of the service's account, labels that name it
//     ("metadata-token:<e-mail>"), never credentials.
//
// It is not Google: no IAM behind the tokens (the Cloud Run front and the
// Secret Manager interceptor check what they carry), no quota, no real
// certificate chain.
type googleFront struct {
	t      *testing.T
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	// CAFile is the PEM file of the front's CA (the services' SSL_CERT_FILE).
	CAFile string
	// ProxyURL is the HTTPS_PROXY of the services.
	ProxyURL string

	idKey *rsa.PrivateKey
	kid   string

	mu      sync.Mutex
	certs   map[string]*tls.Certificate
	routes  map[string]route
	refused []string
}

// route is where the front relays a host's plaintext: addr, speaking
// HTTP/2 (gRPC) when h2, else HTTP/1.1.
type route struct {
	addr string
	h2   bool
}

// jwksPath is where idtoken.Validator fetches Google's RS256 keys (host
// www.googleapis.com).
const jwksPath = "/oauth2/v3/certs"

func startGoogleFront(t *testing.T) *googleFront {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "certfn cloudrun test front CA (not Google)"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	idKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	g := &googleFront{t: t, caCert: ca, caKey: caKey, idKey: idKey, kid: "cloudrun-test-key",
		certs: map[string]*tls.Certificate{}, routes: map[string]route{}}
	g.CAFile = writeFile(t, "front-ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))

	keys := httptest.NewServer(http.HandlerFunc(g.serveJWKS))
	t.Cleanup(keys.Close)
	g.Route("www.googleapis.com", strings.TrimPrefix(keys.URL, "http://"), false)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.ProxyURL = "http://" + l.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(g.serveConnect), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return g
}

// Route relays host's TLS connections (port 443) to addr.
func (g *googleFront) Route(host, addr string, h2 bool) {
	g.mu.Lock()
	g.routes[host] = route{addr: addr, h2: h2}
	g.mu.Unlock()
}

// Refused returns the hosts a service asked for without a route.
func (g *googleFront) Refused() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.refused)
}

func (g *googleFront) serveConnect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "the test front only tunnels (CONNECT)", http.StatusMethodNotAllowed)
		return
	}
	host, port, err := net.SplitHostPort(r.Host)
	g.mu.Lock()
	rt, ok := g.routes[host]
	if err != nil || port != "443" || !ok {
		g.refused = append(g.refused, r.Host)
		ok = false
	}
	g.mu.Unlock()
	if !ok {
		http.Error(w, "no route to "+r.Host+" in the test front", http.StatusForbidden)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "cannot hijack", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	proto := []string{"http/1.1"}
	if rt.h2 {
		proto = []string{"h2"}
	}
	tc := tls.Server(&bufferedConn{Conn: conn, r: buf.Reader}, &tls.Config{NextProtos: proto, MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return g.cert(host) }})
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	err = tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		return
	}
	back, err := net.Dial("tcp", rt.addr)
	if err != nil {
		return
	}
	defer back.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(back, tc); done <- struct{}{} }()
	go func() { _, _ = io.Copy(tc, back); done <- struct{}{} }()
	<-done
}

// bufferedConn reads what the HTTP server buffered before the hijack first.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// cert returns the front's certificate for host, made on first use.
func (g *googleFront) cert(host string) (*tls.Certificate, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c := g.certs[host]; c != nil {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, g.caCert, &key.PublicKey, g.caKey)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	g.certs[host] = c
	return c, nil
}

// serveJWKS answers the public half of the ID token key as Google's
// certificate endpoint does (a JWK set).
func (g *googleFront) serveJWKS(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != jwksPath {
		http.NotFound(w, r)
		return
	}
	pub := g.idKey.PublicKey
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": g.kid,
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}

// idToken is a Google ID token of email for audience, valid for an hour.
func (g *googleFront) idToken(email, audience string) string {
	now := time.Now()
	return g.sign(map[string]any{"iss": "https://accounts.google.com", "aud": audience, "sub": "sub-" + email,
		"email": email, "email_verified": true, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
}

func (g *googleFront) sign(claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": g.kid, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	unsigned := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	sum := sha256.Sum256([]byte(unsigned))
	sig, err := rsa.SignPKCS1v15(rand.Reader, g.idKey, crypto.SHA256, sum[:])
	if err != nil {
		g.t.Fatal(err)
	}
	return unsigned + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// verify checks a token idToken made and returns its e-mail and audience.
func (g *googleFront) verify(tok string) (email, audience string, err error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "", "", fmt.Errorf("not a JWT")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", "", fmt.Errorf("signature: %w", err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&g.idKey.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		return "", "", fmt.Errorf("signature: %w", err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", "", err
	}
	var c struct {
		Email string `json:"email"`
		Aud   string `json:"aud"`
		Exp   int64  `json:"exp"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", "", err
	}
	if time.Now().Unix() > c.Exp {
		return "", "", fmt.Errorf("expired")
	}
	return c.Email, c.Aud, nil
}

// metadataServer is a service's metadata server (its GCE_METADATA_HOST):
// the access tokens of account, labelled, and the project.
func (g *googleFront) metadataServer(project, account string) string {
	g.t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "Missing Metadata-Flavor:Google header", http.StatusForbidden)
			return
		}
		switch strings.TrimPrefix(r.URL.Path, "/computeMetadata/v1/") {
		case "instance/service-accounts/default/token":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": metadataTokenPrefix + account, "expires_in": 3599, "token_type": "Bearer"})
		case "instance/service-accounts/default/email":
			_, _ = io.WriteString(w, account)
		case "project/project-id":
			_, _ = io.WriteString(w, project)
		case "universe/universe-domain":
			_, _ = io.WriteString(w, "googleapis.com")
		case "":
			w.WriteHeader(http.StatusOK)
		default:
			http.NotFound(w, r)
		}
	}))
	g.t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// metadataTokenPrefix starts the access tokens the metadata servers hand
// out; the rest is the service account's e-mail.
const metadataTokenPrefix = "metadata-token:"

// writeFile writes b to a file name in a directory of t and returns its path.
func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
