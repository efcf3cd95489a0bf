package gcpe2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	smpb "cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"

	"github.com/certfn/certfn/adapters/gcp/secretmanager"
	"github.com/certfn/certfn/adapters/secretpayload"
	"github.com/certfn/certfn/core/api"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/certificatesigningrequests"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/gcpmode"
)

// The Google identities of the CSR tests ("token-<email>", see
// fakeValidator): a workload's service account that may create CSRs and
// reference the team's Issuer, one that may only create them, and two
// approvers, each for one signer.
const (
	requesterEmail = "app@" + project + ".iam.gserviceaccount.com"
	requester      = "token-" + requesterEmail
	norefEmail     = "noref@" + project + ".iam.gserviceaccount.com"
	noref          = "token-" + norefEmail
	approverOps    = "token-approver-ops@example.com"
	approverTeam   = "token-approver-team@example.com"

	opsSigner  = "clusterissuers.cert-manager.io/ops-ca"
	teamSigner = "issuers.cert-manager.io/team.team-ca"
	selfSigner = "clusterissuers.cert-manager.io/selfsigned"
)

// csrRBAC: requesters create and read CSRs; the requester may reference
// the Issuer team/team-ca (cert-manager's check for a namespaced Issuer);
// each approver holds `approve` on `signers` for one signer name only.
const csrRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: csr-requester}
rules: [{apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests], verbs: [create, get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: csr-requesters}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: csr-requester}
subjects:
  - {kind: User, name: "` + requesterEmail + `"}
  - {kind: User, name: "` + norefEmail + `"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: use-team-ca, namespace: team}
rules: [{apiGroups: [cert-manager.io], resources: [signers], verbs: [reference], resourceNames: [team-ca]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: app-uses-team-ca, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: use-team-ca}
subjects: [{kind: User, name: "` + requesterEmail + `"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: approve-ops-ca}
rules:
  - {apiGroups: [certificates.k8s.io], resources: [signers], verbs: [approve], resourceNames: ["` + opsSigner + `"]}
  - {apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: approve-ops-ca}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: approve-ops-ca}
subjects: [{kind: User, name: approver-ops@example.com}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: approve-team-ca}
rules:
  - {apiGroups: [certificates.k8s.io], resources: [signers], verbs: [approve], resourceNames: ["` + teamSigner + `"]}
  - {apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: approve-team-ca}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: approve-team-ca}
subjects: [{kind: User, name: approver-team@example.com}]
`

// csrSpec is a CertificateSigningRequest for <name>.example.internal
// with a key of its own; forged puts requester fields in the body that
// the api must replace with the caller's.
type csrSpec struct {
	name, signer      string
	expirationSeconds int
	forged            bool
	// keySecret, when set, is the selfSigned signer's key
	// (experimental.cert-manager.io/private-key-secret-name).
	keySecret string
}

// build returns the manifest and the CSR's private key.
func (s csrSpec) build(t *testing.T) (string, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dns := s.name + ".example.internal"
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: dns}, DNSNames: []string{dns}}, key)
	if err != nil {
		t.Fatal(err)
	}
	ann := "{}"
	if s.keySecret != "" {
		ann = fmt.Sprintf("{%s: %s}", api.AnnotationCSRPrivateKeySecretName, s.keySecret)
	}
	forged := ""
	if s.forged {
		forged = "  username: ops@example.com\n  uid: forged\n  groups: [system:masters]\n"
	}
	return fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: %s, annotations: %s}
spec:
  request: %s
  signerName: %s
  expirationSeconds: %d
  usages: [digital signature, key encipherment, server auth]
%s`, s.name, ann, base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})), s.signer, s.expirationSeconds, forged), key
}

// installCA stores an operator's CA key pair as ns/name (class ca).
func (d *deployment) installCA(ns, name string) *ct.CA {
	d.t.Helper()
	ca := ct.NewCA(d.t)
	d.installSecret(secretmanager.ClassCA, ca.Secret(d.t, ns, name))
	return ca
}

// installSecret stores sec in Secret Manager as an operator's `gcloud
// secrets create <prefix>_<class>_<ns>_<name>` and `versions add` would
// (docs/gcp-secret-manager.md), outside the services.
func (d *deployment) installSecret(class secretmanager.Class, sec ports.Secret) {
	d.t.Helper()
	id, err := d.secrets.SecretID(class, sec.Namespace, sec.Name)
	if err != nil {
		d.t.Fatal(err)
	}
	payload, err := secretpayload.Encode(sec, secretmanager.MaxPayloadBytes, "Secret Manager")
	if err != nil {
		d.t.Fatal(err)
	}
	parent := "projects/" + project
	if _, err := d.sm.CreateSecret(d.ctx, &smpb.CreateSecretRequest{Parent: parent, SecretId: id,
		Secret: &smpb.Secret{Replication: &smpb.Replication{Replication: &smpb.Replication_Automatic_{Automatic: &smpb.Replication_Automatic{}}}}}); err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.sm.AddSecretVersion(d.ctx, &smpb.AddSecretVersionRequest{Parent: parent + "/secrets/" + id, Payload: &smpb.SecretPayload{Data: payload}}); err != nil {
		d.t.Fatal(err)
	}
}

// csr reads a CertificateSigningRequest from the state (uncounted);
// nil if there is none.
func (d *deployment) csr(name string) *api.CertificateSigningRequest {
	d.t.Helper()
	rec, err := d.inspect.Get(d.ctx, api.Key{Kind: api.KindCertificateSigningRequest, Name: name})
	if errors.Is(err, ports.ErrNotFound) {
		return nil
	}
	if err != nil {
		d.t.Fatalf("get csr %s: %v", name, err)
	}
	var c api.CertificateSigningRequest
	if err := json.Unmarshal(rec.Data, &c); err != nil {
		d.t.Fatal(err)
	}
	return &c
}

// decide calls the approval subresource of CSR name as tok.
func (d *deployment) decide(tok, name string, approve bool) (int, string) {
	d.t.Helper()
	w := d.callAs(tok, "POST", "/v1/certificatesigningrequests/"+name+"/approval",
		fmt.Sprintf(`{"approve": %t, "reason": "GCPE2E", "message": "decided in tests/gcpe2e"}`, approve))
	return w.Code, w.Body.String()
}

// syncBuffer collects a service's log lines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// metricLines returns the CERTFN_METRICS=log lines of metric name.
func (s *syncBuffer) metricLines(t *testing.T, name string) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var m map[string]any
		if l == "" || json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		if m["message"] == "metric" && m["metric"] == name {
			out = append(out, m)
		}
	}
	return out
}

// CertificateSigningRequests on the Cloud Run services, every message
// pushed twice and reordered. Nothing approves them automatically (the
// cloud approver is policy-only and CERTFN_AUTO_APPROVE names another
// issuer): each is created through the api with a service account's ID
// token — the requester fields of the body replaced by the caller's —
// and decided through the approval subresource. Checked:
//   - permission separation: the requester, and the approver of the other
//     signer, get 403 and change nothing; approval and denial are
//     permanent (409);
//   - a CA ClusterIssuer's and a namespaced CA Issuer's CSR are signed by
//     the signer service: status.certificate chains to the operator's CA,
//     for the CSR's public key, with the requested lifetime (honoured 30 m
//     of a requested hour under the Issuer's certfn.io/max-duration), both
//     recorded in status, and docs/design/request-duration.md's metric lines written by the
//     signer in CERTFN_METRICS=log's format; a selfSigned ClusterIssuer's
//     CSR (approved by an admin of CERTFN_API_ADMINS) is signed with the
//     key its owner installed (class pk);
//   - the keys: every Secret Manager call is within iam.tf's grants
//     (secretGuard); the signer read both CA secrets and the selfSigned
//     key, the worker made no Secret Manager call of class ca or ica (the
//     api and scheduler have no Secret Manager client);
//   - a requester who may not reference the team's Issuer: Failed,
//     DeniedReference, by the worker (the signer never read that CA);
//   - a denied CSR stays Denied, is never signed and never pushed to the
//     signer (nor is the CSR the worker failed);
//   - expirationSeconds below 600: 422 naming spec.expirationSeconds, nothing stored;
//   - no key material in Firestore, nothing due, no dead letter.
func TestCSROnGoogleCloud(t *testing.T) {
	signerLog := &syncBuffer{}
	d := deployEnv(t, env{gcpmode.EnvAutoApprove: "clusterissuers.cert-manager.io/other", gcpmode.EnvMetrics: "log"},
		options{gcpmode.RoleSigner: func(o *gcpmode.Options) { o.Logger = gcpmode.CloudLogger(signerLog, slog.LevelInfo) }})
	opsCA, teamCA := d.installCA("cert-manager", "ops-ca"), d.installCA("team", "team-ca")
	d.apply(`apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: ops-ca}
spec: {ca: {secretName: ops-ca}}
---
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: selfsigned}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: team-ca, namespace: team, annotations: {certfn.io/max-duration: 30m}}
spec: {ca: {secretName: team-ca}}
---
` + csrRBAC)
	d.settle()

	// Created by the workload's service account, with forged requester fields.
	keys := map[string]*ecdsa.PrivateKey{}
	create := func(tok string, s csrSpec) {
		t.Helper()
		y, key := s.build(t)
		keys[s.name] = key
		if w := d.callAs(tok, "POST", "/v1/apply", y); w.Code != http.StatusOK {
			t.Fatalf("create %s: %d %s", s.name, w.Code, w.Body)
		}
	}
	create(requester, csrSpec{name: "app", signer: opsSigner, expirationSeconds: 3600, forged: true})
	create(requester, csrSpec{name: "team-app", signer: teamSigner, expirationSeconds: 3600})
	create(requester, csrSpec{name: "denied", signer: opsSigner, expirationSeconds: 600})
	create(noref, csrSpec{name: "noref", signer: teamSigner, expirationSeconds: 600})
	create(requester, csrSpec{name: "self", signer: selfSigner, expirationSeconds: 3600, keySecret: "self-key"})
	// The selfSigned signer's key: the CSR's, installed by its owner in
	// the cluster resource namespace (class pk).
	der, err := x509.MarshalPKCS8PrivateKey(keys["self"])
	if err != nil {
		t.Fatal(err)
	}
	d.installSecret(secretmanager.ClassPrivateKey, ports.Secret{Namespace: "cert-manager", Name: "self-key",
		Data: map[string][]byte{"tls.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})}})
	d.settle()
	for _, n := range []string{"app", "team-app", "denied", "noref", "self"} {
		if c := d.csr(n); len(c.Status.Conditions) != 0 || c.IsIssued() {
			t.Fatalf("%s decided before anyone approved it: %+v", n, c.Status.Conditions)
		}
	}
	app := d.csr("app")
	if app.Spec.Username != requesterEmail || app.Spec.UID != "sub-"+requesterEmail ||
		slices.Contains(app.Spec.Groups, "system:masters") || !slices.Contains(app.Spec.Groups, "gcp:project:"+project) {
		t.Fatalf("requester of app: %q %q %q, want the caller's (the body's forged fields replaced)", app.Spec.Username, app.Spec.UID, app.Spec.Groups)
	}

	// Permission separation, and nothing changed by a refusal.
	for _, c := range []struct {
		who, name string
		want      int
	}{
		{requester, "app", http.StatusForbidden},        // may create, not approve
		{approverTeam, "app", http.StatusForbidden},     // approver of another signer
		{approverOps, "team-app", http.StatusForbidden}, // likewise
		{approverOps, "absent", http.StatusNotFound},
	} {
		if code, body := d.decide(c.who, c.name, true); code != c.want {
			t.Errorf("%s approving %s: %d %s, want %d", c.who, c.name, code, body, c.want)
		}
	}
	if c := d.csr("app"); len(c.Status.Conditions) != 0 {
		t.Fatalf("a refused approval changed app: %+v", c.Status.Conditions)
	}

	for _, c := range []struct {
		who, name string
		approve   bool
	}{{approverOps, "app", true}, {approverTeam, "team-app", true}, {approverTeam, "noref", true}, {approverOps, "denied", false},
		{admin, "self", true}} { // ops@example.com: CERTFN_API_ADMINS
		if code, body := d.decide(c.who, c.name, c.approve); code != http.StatusOK {
			t.Fatalf("%s deciding %s: %d %s", c.who, c.name, code, body)
		}
	}
	if code, body := d.decide(approverOps, "denied", true); code != http.StatusConflict {
		t.Errorf("approving a denied CSR: %d %s, want 409 (permanent)", code, body)
	}
	d.settle()

	// Signed, for the CSR's key, chaining to the operator's CA (or
	// self-signed with the CSR's key), lifetimes recorded.
	for _, c := range []struct {
		name     string
		ca       *ct.CA // nil: self-signed
		honoured time.Duration
		secret   string // the signing key's Secret Manager secret
	}{
		{"app", opsCA, time.Hour, "certfn_ca_cert-manager_ops-ca"},
		{"team-app", teamCA, 30 * time.Minute, "certfn_ca_team_team-ca"},
		{"self", nil, time.Hour, "certfn_pk_cert-manager_self-key"},
	} {
		got := d.csr(c.name)
		if !got.IsIssued() || !got.Status.Has(api.CSRConditionApproved) || got.Status.Has(api.CSRConditionFailed) {
			t.Fatalf("%s not issued: %+v", c.name, got.Status.Conditions)
		}
		chain, err := pki.ParseChainPEM(got.Status.Certificate)
		if err != nil {
			t.Fatalf("%s: status.certificate: %v", c.name, err)
		}
		l := chain[0]
		roots := x509.NewCertPool()
		if c.ca != nil {
			roots.AddCert(c.ca.Cert)
		} else if len(chain) == 1 {
			roots.AddCert(l)
		}
		if _, err := l.Verify(x509.VerifyOptions{Roots: roots, DNSName: c.name + ".example.internal", CurrentTime: d.clk.Now(),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Fatalf("%s does not chain to its CA: %v", c.name, err)
		}
		if pub, ok := l.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(keys[c.name].Public()) {
			t.Fatalf("%s: the certificate is not for the CSR's public key", c.name)
		}
		if life := l.NotAfter.Sub(l.NotBefore); life != c.honoured {
			t.Errorf("%s: lifetime %s, want %s", c.name, life, c.honoured)
		}
		s := got.Status
		if s.RequestedDuration == nil || s.RequestedDuration.Duration != time.Hour || s.HonouredDuration == nil || s.HonouredDuration.Duration != c.honoured {
			t.Errorf("%s: requested %v honoured %v, want 1h and %s", c.name, s.RequestedDuration, s.HonouredDuration, c.honoured)
		}
		if bytes.Contains(got.Status.Certificate, []byte("PRIVATE KEY")) {
			t.Fatalf("%s: key material in status", c.name)
		}
		if !slices.ContainsFunc(d.secretCalls("signer"), func(sc secretCall) bool { return sc.secretID == c.secret && sc.perm == "versions.access" }) {
			t.Errorf("the signer never read %s", c.secret)
		}
	}
	// Seed 003's metrics, in the Cloud Logging format of CERTFN_METRICS=log:
	// requested for the three; honoured not for team-app, which got less.
	for _, m := range []struct {
		metric string
		want   []string
	}{
		{certificatesigningrequests.MetricRequestedDuration, []string{"clusterissuers.cert-manager.io", "clusterissuers.cert-manager.io", "issuers.cert-manager.io"}},
		{certificatesigningrequests.MetricHonoredDuration, []string{"clusterissuers.cert-manager.io", "clusterissuers.cert-manager.io"}},
	} {
		var got []string
		for _, l := range signerLog.metricLines(t, m.metric) {
			if l["severity"] != "INFO" || l["value"] != 1.0 {
				t.Errorf("%s line %v", m.metric, l)
			}
			got = append(got, fmt.Sprint(l["signerName"]))
		}
		slices.Sort(got)
		if !slices.Equal(got, m.want) {
			t.Errorf("%s lines by signerName %q, want %q", m.metric, got, m.want)
		}
	}

	// The CA keys: the worker touched no CA secret.
	for _, sc := range d.secretCalls("worker") {
		if sc.class == secretmanager.ClassCA || sc.class == secretmanager.ClassIssuedCA {
			t.Errorf("the worker called %s", sc)
		}
	}

	// The requester without `reference` on team-ca: failed by the worker.
	if f := d.csr("noref").Status.Condition(api.CSRConditionFailed); f == nil || f.Reason != certificatesigningrequests.ReasonDeniedReference || d.csr("noref").IsIssued() {
		t.Errorf("noref: %+v, want Failed/%s", d.csr("noref").Status.Conditions, certificatesigningrequests.ReasonDeniedReference)
	}
	// Denied stays denied, unsigned; the signer was pushed only the two it signed.
	dc := d.csr("denied")
	if !dc.Status.Has(api.CSRConditionDenied) || dc.Status.Has(api.CSRConditionApproved) || dc.IsIssued() || dc.Status.HonouredDuration != nil {
		t.Errorf("denied: %+v, certificate %d bytes", dc.Status.Conditions, len(dc.Status.Certificate))
	}
	for _, n := range []string{"app", "team-app", "self", "denied", "noref"} {
		got := d.signerQ.pushes(api.Key{Kind: api.KindCertificateSigningRequest, Name: n})
		if signed := n != "denied" && n != "noref"; signed != (got > 0) {
			t.Errorf("the signer was pushed %s %d times", n, got)
		}
	}

	// expirationSeconds below docs/design/request-duration.md's minimum: refused naming the field, nothing stored.
	y, _ := csrSpec{name: "short", signer: opsSigner, expirationSeconds: 599}.build(t)
	w := d.callAs(requester, "POST", "/v1/apply", y)
	var e struct{ Error, Reason, Field string }
	_ = json.Unmarshal(w.Body.Bytes(), &e)
	if w.Code != http.StatusUnprocessableEntity || e.Field != "spec.expirationSeconds" || !strings.Contains(e.Error, "600") {
		t.Errorf("expirationSeconds 599: %d %s, want 422 naming spec.expirationSeconds", w.Code, w.Body)
	}
	if d.csr("short") != nil {
		t.Error("the refused CSR was stored")
	}
	if w := d.callAs(requester, "GET", "/v1/certificatesigningrequests/short", ""); w.Code != http.StatusNotFound {
		t.Errorf("GET short: %d, want 404", w.Code)
	}

	// The requester reads its certificate through the api.
	w = d.callAs(requester, "GET", "/v1/certificatesigningrequests/app", "")
	var served api.CertificateSigningRequest
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &served) != nil || !bytes.Equal(served.Status.Certificate, d.csr("app").Status.Certificate) {
		t.Errorf("GET app: %d %.200s", w.Code, w.Body)
	}
	// The RBAC objects keep the api's safety-net due time (2 minutes after
	// their apply; the worker leaves a future one alone), which the clock
	// passed: Cloud Scheduler's sweep delivers them once more.
	d.sweep()
	d.settle()
	d.requireClean()
	t.Logf("CSRs (every message twice): Cloud Run requests %v; Secret Manager calls worker %d, signer %d",
		d.usage().requests, len(d.secretCalls("worker")), len(d.secretCalls("signer")))
}

// A CertificateSigningRequest for an ACME ClusterIssuer on the Cloud Run
// services: the worker (never the signer) creates the Order the CSR owns
// in the cluster resource namespace, Pebble validates through the http01
// service, the Order's last write wakes the CSR, which takes the chain;
// every message delivered twice and reordered. Deleting the CSR through
// the api takes its Order along.
func TestACMECSROnGoogleCloud(t *testing.T) {
	h01Port := freePort(t)
	h01Addr := fmt.Sprintf("127.0.0.1:%d", h01Port)
	peb := startPebble(t, h01Port)
	d, _ := acmeDeployment(t, peb, h01Addr, nil, "")
	d.apply(peb.issuerYAML("pebble", "", "    - http01: {ingress: {}}\n"))
	y, key := csrSpec{name: "acme-app", signer: "clusterissuers.cert-manager.io/pebble", expirationSeconds: 3600}.build(t)
	if w := d.call("POST", "/v1/apply", y); w.Code != http.StatusOK {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	d.runUntil("the ACME CSR is final", func() bool { c := d.csr("acme-app"); return c != nil && c.IsFinal() })
	d.settle()
	c := d.csr("acme-app")
	if !c.IsIssued() {
		t.Fatalf("not issued: %+v", c.Status.Conditions)
	}
	leaf := peb.verify(t, c.Status.Certificate, "acme-app.example.internal")
	if !pki.PublicKeysEqual(leaf.PublicKey, key.Public()) {
		t.Fatal("the certificate is not for the CSR's key")
	}
	if n := d.signer.requests(); n != 0 {
		t.Errorf("the signer was pushed %d messages for an ACME CSR", n)
	}
	recs, err := d.inspect.List(d.ctx, listOf(api.KindOrder, ""))
	if err != nil || len(recs) != 1 || recs[0].Key.Namespace != "cert-manager" ||
		recs[0].Owner != (api.Key{Kind: api.KindCertificateSigningRequest, Name: "acme-app"}) {
		t.Fatalf("Orders %+v (%v), want one in cert-manager owned by the CSR", recs, err)
	}
	if w := d.call("DELETE", "/v1/certificatesigningrequests/acme-app", ""); w.Code != http.StatusOK {
		t.Fatalf("delete: %d %s", w.Code, w.Body)
	}
	if recs, err := d.inspect.List(d.ctx, listOf(api.KindOrder, "")); err != nil || len(recs) != 0 {
		t.Fatalf("after deleting the CSR: %v, %d Orders left", err, len(recs))
	}
	d.requireClean()
}
