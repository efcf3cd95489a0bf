package apitest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
)

// Do sends one API request (method, path, content type, body) as a caller
// who may do everything (a superuser or an admin of the deployment) and
// returns the status code and the body.
type Do func(method, path, contentType, body string) (code int, respBody string)

// CSRApprovalChecks runs, through the API do reaches, the checks that a
// decision applies only to what was reviewed:
//   - re-applying a CertificateSigningRequest with
//     experimental.cert-manager.io/request-is-ca added is 422 naming
//     metadata.annotations["experimental.cert-manager.io/request-is-ca"],
//     and nothing is stored;
//   - an approval whose resourceVersion precondition names a version the
//     CSR no longer has is 409 naming metadata.resourceVersion, and
//     decides nothing;
//   - an approval at the current version is 200.
//
// The CSR name is name; its signer is not certfn's, so that no approver or
// signer of the deployment acts on it meanwhile.
func CSRApprovalChecks(t *testing.T, do Do, name string) {
	t.Helper()
	const isCA = `experimental.cert-manager.io/request-is-ca`
	m := CSRManifest(t, name, "experimental.cert-manager.io/request-duration: 720h")
	apply := func(manifest string) (int, string) {
		t.Helper()
		return do(http.MethodPost, "/v1/apply", "application/yaml", manifest)
	}
	if code, body := apply(m); code != http.StatusOK || !strings.Contains(body, "created") {
		t.Fatalf("create CSR %s: %d %s", name, code, body)
	}
	seen := csrVersion(t, do, name)

	changed := strings.Replace(m, "experimental.cert-manager.io/request-duration: 720h",
		"experimental.cert-manager.io/request-duration: 720h, "+isCA+": \"true\"", 1)
	code, body := apply(changed)
	var e struct {
		Field string `json:"field"`
		Error string `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &e)
	if code != http.StatusUnprocessableEntity || e.Field != `metadata.annotations["`+isCA+`"]` || !strings.Contains(e.Error, "immutable") {
		t.Fatalf("re-apply adding %s: %d %s; want 422 naming metadata.annotations[%q]", isCA, code, body, isCA)
	}
	if c := getCSR(t, do, name); c.Annotations[isCA] != "" {
		t.Fatalf("the refused annotation was stored: %v", c.Annotations)
	}

	// A change after the approver read it: the approval of what it read is refused.
	if code, body := apply(strings.Replace(m, "metadata: {name: "+name+",", "metadata: {name: "+name+", labels: {reviewed: \"no\"},", 1)); code != http.StatusOK {
		t.Fatalf("label the CSR: %d %s", code, body)
	}
	approve := func(version string) (int, string) {
		return do(http.MethodPost, "/v1/certificatesigningrequests/"+name+"/approval", "application/json",
			fmt.Sprintf(`{"approve": true, "reason": "Reviewed", "resourceVersion": %q}`, version))
	}
	if code, body := approve(seen); code != http.StatusConflict || !strings.Contains(body, "metadata.resourceVersion") {
		t.Fatalf("approve at stale version %s: %d %s; want 409 naming metadata.resourceVersion", seen, code, body)
	}
	if c := getCSR(t, do, name); len(c.Status.Conditions) != 0 {
		t.Fatalf("decided at a stale version: %+v", c.Status.Conditions)
	}
	now := csrVersion(t, do, name)
	if now == seen {
		t.Fatalf("the label did not change the version (%s)", now)
	}
	if code, body := approve(now); code != http.StatusOK {
		t.Fatalf("approve at the current version %s: %d %s", now, code, body)
	}
	if c := getCSR(t, do, name); !c.Status.Has(api.CSRConditionApproved) {
		t.Fatalf("not approved: %+v", c.Status.Conditions)
	}
}

func getCSR(t *testing.T, do Do, name string) *api.CertificateSigningRequest {
	t.Helper()
	code, body := do(http.MethodGet, "/v1/certificatesigningrequests/"+name, "", "")
	if code != http.StatusOK {
		t.Fatalf("get CSR %s: %d %s", name, code, body)
	}
	var c api.CertificateSigningRequest
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatalf("get CSR %s: %v: %s", name, err, body)
	}
	return &c
}

func csrVersion(t *testing.T, do Do, name string) string {
	t.Helper()
	v := getCSR(t, do, name).ResourceVersion
	if v == "" {
		t.Fatalf("CSR %s has no resourceVersion", name)
	}
	return v
}

// CSRManifest is a CertificateSigningRequest named name for another
// signer (example.com/reviewed) with the flow-mapping annotations ann.
func CSRManifest(t *testing.T, name, ann string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name + ".example.com"},
		DNSNames: []string{name + ".example.com"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: %s, annotations: {%s}}
spec:
  request: %s
  signerName: example.com/reviewed
  usages: [digital signature, server auth]
`, name, ann, base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})))
}
