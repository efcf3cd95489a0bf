package gcpmode_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/idtoken"

	"github.com/certfn/certfn/adapters/gcp/firestore"
	"github.com/certfn/certfn/adapters/gcp/secretmanager/gsmtest"
	"github.com/certfn/certfn/adapters/httpapi/apitest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/internal/gcpmode"
	"github.com/certfn/certfn/tests/emulators"
)

// topic stands for a Pub/Sub topic and its push subscription: the test
// pushes what the services publish, as Pub/Sub would (the envelope of
// pubsubq.PushRequest).
type topic struct {
	mu   sync.Mutex
	keys []api.Key
	sent int
}

func (q *topic) Enqueue(_ context.Context, k api.Key, delay time.Duration) error {
	if delay > 0 {
		return nil // delayed messages: the sweep covers them in this test
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.keys = append(q.keys, k)
	q.sent++
	return nil
}

func (q *topic) EnqueueBatch(ctx context.Context, keys []api.Key, delay time.Duration) error {
	for _, k := range keys {
		if err := q.Enqueue(ctx, k, delay); err != nil {
			return err
		}
	}
	return nil
}

func (q *topic) take() []api.Key {
	q.mu.Lock()
	defer q.mu.Unlock()
	ks := q.keys
	q.keys = nil
	return ks
}

// apiAudience is the api's CERTFN_API_AUDIENCE in these tests.
const apiAudience = "https://api"

// fakeValidator accepts "token-<email>", a token for apiAudience, and
// "token-<email>|<audience>", a token for another audience, when asked
// for the token's audience.
type fakeValidator struct{}

func (fakeValidator) Validate(_ context.Context, tok, aud string) (*idtoken.Payload, error) {
	email, ok := strings.CutPrefix(tok, "token-")
	if !ok {
		return nil, fmt.Errorf("idtoken: bad token")
	}
	tokenAud := apiAudience
	if e, a, found := strings.Cut(email, "|"); found {
		email, tokenAud = e, a
	}
	if aud != tokenAud {
		return nil, fmt.Errorf("idtoken: audience provided does not match aud claim in the JWT")
	}
	return &idtoken.Payload{Issuer: "https://accounts.google.com", Audience: aud, Subject: "sub-" + email,
		Claims: map[string]any{"email": email, "email_verified": true}}, nil
}

func pushBody(k api.Key, attempt int) string {
	b, _ := json.Marshal(map[string]any{"message": map[string]any{"data": base64.StdEncoding.EncodeToString([]byte(k.String())),
		"attributes": map[string]string{"certfn-format": "1"}, "messageId": "m"}, "subscription": "projects/p/subscriptions/s", "deliveryAttempt": attempt})
	return string(b)
}

type deployment struct {
	t                          *testing.T
	worker, signer, sched, api *gcpmode.Runtime
	workerQ, signerQ           *topic
	pushes                     map[string]int
	// sm is the Secret Manager double the functions use.
	sm *gsmtest.Double
}

const project = "certfn-e2e-test"

func newDeployment(t *testing.T) *deployment {
	t.Helper()
	return newDeploymentWith(t, nil)
}

// newDeploymentWith is newDeployment with extra environment variables.
func newDeploymentWith(t *testing.T, extra env) *deployment {
	t.Helper()
	t.Setenv("FIRESTORE_EMULATOR_HOST", emulators.Firestore(t))
	ctx := context.Background()
	clk := clock.NewFake(ct.T0)
	store, err := firestore.Open(ctx, project, firestore.Options{Collection: fmt.Sprintf("e2e-%d", time.Now().UnixNano()), ExpiresAt: app.ExpiresAt, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	sm := gsmtest.New()
	d := &deployment{t: t, workerQ: &topic{}, signerQ: &topic{}, pushes: map[string]int{}, sm: sm}
	env := env{"CERTFN_PROJECT": project, "CERTFN_TOPIC": "projects/" + project + "/topics/certfn-worker", "CERTFN_SIGNER_TOPIC": "projects/" + project + "/topics/certfn-signer", "CERTFN_MANAGE_CA_CERTIFICATES": "true",
		"CERTFN_TASKS_QUEUE": "projects/" + project + "/locations/europe-west1/queues/certfn", "CERTFN_TASKS_SERVICE_ACCOUNT": "tasks@" + project + ".iam.gserviceaccount.com",
		"CERTFN_API_AUDIENCE": apiAudience, "CERTFN_API_ADMINS": "ops@example.com", "CERTFN_AUTO_APPROVE": "*", "CERTFN_LOG_LEVEL": "error"}
	for k, v := range extra {
		env[k] = v
	}
	build := func(role string) *gcpmode.Runtime {
		rt, err := gcpmode.FromEnvWith(ctx, role, gcpmode.Options{Getenv: env.get, Clock: clk, Store: store, SecretManager: sm,
			Queue: d.workerQ, SignerQueue: d.signerQ, TokenValidator: fakeValidator{}})
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		return rt
	}
	d.worker, d.signer, d.sched, d.api = build(app.Worker.Name), build(app.Signer.Name), build(app.Scheduler.Name), build(app.API.Name)
	return d
}

func (d *deployment) do(h http.Handler, method, path, token, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if strings.HasPrefix(path, "/v1/apply") {
		r.Header.Set("Content-Type", "application/yaml")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// drain pushes every published key to its service until both topics are
// empty; with twice, each message is delivered twice, the copies after the
// others (at-least-once delivery, reordered).
func (d *deployment) drain(twice bool) {
	d.t.Helper()
	for i := 0; i < 200; i++ {
		wk, sk := d.workerQ.take(), d.signerQ.take()
		if len(wk)+len(sk) == 0 {
			return
		}
		if twice {
			wk, sk = append(wk, wk...), append(sk, sk...)
		}
		for _, k := range wk {
			d.push(d.worker, "worker", k)
		}
		for _, k := range sk {
			d.push(d.signer, "signer", k)
		}
	}
	d.t.Fatal("the topics never drained")
}

func (d *deployment) push(rt *gcpmode.Runtime, name string, k api.Key) {
	d.t.Helper()
	for attempt := 1; attempt <= 5; attempt++ {
		d.pushes[name]++
		w := d.do(rt, "POST", "/push", "", pushBody(k, attempt))
		if w.Code == http.StatusNoContent {
			return
		}
		if w.Code != http.StatusServiceUnavailable {
			d.t.Fatalf("%s push %s: %d %s", name, k, w.Code, w.Body)
		}
	}
	d.t.Fatalf("%s push %s: still retrying after 5 attempts", name, k)
}

const caChain = `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: selfsigned}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: root, namespace: cert-manager}
spec:
  isCA: true
  commonName: certfn e2e root
  secretName: root-ca
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: selfsigned, kind: ClusterIssuer}
---
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: ca}
spec: {ca: {secretName: root-ca}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default}
spec:
  secretName: web-tls
  dnsNames: [web.example.com]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: ca, kind: ClusterIssuer}
`

func (d *deployment) cert(name, ns string) *api.Certificate {
	d.t.Helper()
	w := d.do(d.api, "GET", "/v1/namespaces/"+ns+"/certificates/"+name, "token-ops@example.com", "")
	if w.Code != 200 {
		d.t.Fatalf("get %s: %d %s", name, w.Code, w.Body)
	}
	var c api.Certificate
	if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil {
		d.t.Fatal(err)
	}
	return &c
}

// A private CA chain issued end to end through the Cloud Run handlers on
// the official Firestore emulator: api → worker ↔ signer pushes, every
// message delivered twice and reordered; exactly one request per
// revision, the CA key read only by the signer.
func TestCAIssuanceThroughCloudRunHandlers(t *testing.T) {
	d := newDeployment(t)
	if w := d.do(d.api, "POST", "/v1/apply", "token-ops@example.com", caChain); w.Code != 200 {
		t.Fatalf("apply: %d %s", w.Code, w.Body)
	}
	for i := 0; i < 4; i++ {
		d.drain(true)
		if w := d.do(d.sched, "POST", "/sweep", "", ""); w.Code != 200 {
			t.Fatalf("sweep: %d %s", w.Code, w.Body)
		}
	}
	for _, c := range []*api.Certificate{d.cert("root", "cert-manager"), d.cert("web", "default")} {
		if !api.IsTrue(c.Status.Conditions, api.CertificateConditionReady) || c.Status.Revision == nil || *c.Status.Revision != 1 {
			t.Fatalf("%s not issued once: revision %v, %+v\n%s", c.Name, c.Status.Revision, c.Status.Conditions, d.debugRequests("cert-manager"))
		}
	}
	w := d.do(d.api, "GET", "/v1/namespaces/default/certificaterequests", "token-ops@example.com", "")
	var list struct{ Items []api.CertificateRequest }
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || len(list.Items) != 1 || list.Items[0].Name != "web-1" {
		t.Fatalf("requests of default: %d %v", len(list.Items), err)
	}
	if d.pushes["signer"] == 0 {
		t.Fatal("the signer signed nothing: the CA requests were not handed to it")
	}
	t.Logf("pushes (each message twice): %v", d.pushes)
}

// Bad input on every route: a push that is not a key is acknowledged and
// dropped (Pub/Sub would otherwise push it until the dead-letter topic);
// the api refuses a missing or wrong token; the wrong route is 404.
func TestBadInputThroughCloudRunHandlers(t *testing.T) {
	d := newDeployment(t)
	for _, tc := range []struct {
		name                      string
		rt                        *gcpmode.Runtime
		method, path, token, body string
		code                      int
	}{
		{"malformed push", d.worker, "POST", "/push", "", "{not json", http.StatusNoContent},
		{"push of an unknown kind", d.worker, "POST", "/push", "", strings.Replace(pushBody(api.Key{Kind: "Certificate", Namespace: "a", Name: "b"}, 1),
			base64.StdEncoding.EncodeToString([]byte("Certificate/a/b")), base64.StdEncoding.EncodeToString([]byte("Widget/a/b")), 1), http.StatusNoContent},
		{"push by GET", d.worker, "GET", "/push", "", "", http.StatusMethodNotAllowed},
		{"signer push of a missing key", d.signer, "POST", "/push", "", pushBody(api.Key{Kind: api.KindCertificateRequest, Namespace: "a", Name: "gone"}, 1), http.StatusNoContent},
		{"api without a token", d.api, "GET", "/v1/certificates", "", "", http.StatusUnauthorized},
		{"api with a bad token", d.api, "GET", "/v1/certificates", "forged", "", http.StatusUnauthorized},
		{"api caller without bindings", d.api, "GET", "/v1/certificates", "token-eve@example.com", "", http.StatusForbidden},
		{"scheduler's other routes", d.sched, "POST", "/push", "", "", http.StatusNotFound},
		{"health", d.worker, "GET", "/healthz", "", "", http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if w := d.do(tc.rt, tc.method, tc.path, tc.token, tc.body); w.Code != tc.code {
				t.Fatalf("%d %s, want %d", w.Code, w.Body, tc.code)
			}
		})
	}
}

func (d *deployment) debugRequests(ns string) string {
	w := d.do(d.api, "GET", "/v1/namespaces/"+ns+"/certificaterequests", "token-ops@example.com", "")
	return w.Body.String()
}

// A CSR whose subjectAltName hides an IP address (an iPAddress encoded as
// constructed, which crypto/x509 skips and OpenSSL reads) is refused at
// apply by the api service, as a CertificateSigningRequest and as a
// CertificateRequest, with a message naming spec.request and the rule;
// nothing is stored and nothing is queued.
func TestHiddenSANEntriesRefusedByTheAPIService(t *testing.T) {
	d := newDeployment(t)
	csr := ct.HiddenIPCSR(t, "web.team-a.example.com")
	for _, m := range []string{
		apitest.SigningRequest("hidden-ip", "issuers.cert-manager.io/default.ss", csr),
		apitest.RequestWithCSR("default", "hidden-ip", "ss", csr),
	} {
		w := d.do(d.api, "POST", "/v1/apply", "token-ops@example.com", m)
		if w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "spec.request") ||
			!strings.Contains(w.Body.String(), "subjectAltName entry 2 (iPAddress): is encoded as constructed") {
			t.Fatalf("apply: %d %s, want 422 naming spec.request and the constructed iPAddress", w.Code, w.Body)
		}
	}
	for _, path := range []string{"/v1/certificatesigningrequests/hidden-ip", "/v1/namespaces/default/certificaterequests/hidden-ip"} {
		if w := d.do(d.api, "GET", path, "token-ops@example.com", ""); w.Code != http.StatusNotFound {
			t.Fatalf("GET %s: %d %s, want 404", path, w.Code, w.Body)
		}
	}
	if keys := d.workerQ.take(); len(keys) != 0 {
		t.Fatalf("queued %v", keys)
	}
}

// Through the Cloud Run api service's handler: a CSR's cert-manager
// annotations cannot be changed by a re-apply (422 naming the field), and
// an approval with a stale resourceVersion is 409 (apitest.CSRApprovalChecks).
func TestCSRApprovalThroughCloudRunAPI(t *testing.T) {
	d := newDeployment(t)
	apitest.CSRApprovalChecks(t, func(method, path, ctype, body string) (int, string) {
		w := d.do(d.api, method, path, "token-ops@example.com", body)
		return w.Code, w.Body.String()
	}, "reviewed")
}
