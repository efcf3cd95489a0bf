package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	ct "github.com/certfn/certfn/core/certificates/certtest"
)

func csrManifest(t *testing.T, name, signer string, expirationSeconds int) string {
	t.Helper()
	req := base64.StdEncoding.EncodeToString(ct.BareCSR(t, "web.example.com"))
	return fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: %s}
spec: {request: %s, signerName: %s, expirationSeconds: %d, usages: [digital signature, server auth]}
`, name, req, signer, expirationSeconds)
}

// The API serves CertificateSigningRequests (cluster-scoped) with list,
// get, apply and delete, and their approval subresource, which needs its
// own permission; bad input names the field and stores nothing.
func TestCSRRoutes(t *testing.T) {
	e := newEnv(t, 0)
	r := e.do(http.MethodPost, "/v1/apply", admin, "application/yaml", csrManifest(t, "short", "clusterissuers.cert-manager.io/ss", 599))
	if msg, reason, field := r.err(t); r.code != 422 || reason != "Invalid" || field != "spec.expirationSeconds" || !strings.Contains(msg, "600 seconds") {
		t.Fatalf("expirationSeconds 599: %d %s", r.code, r.body)
	}
	if n := e.count(api.KindCertificateSigningRequest, ""); n != 0 {
		t.Fatalf("%d CSRs stored by a refused apply", n)
	}
	// bob may create and read CSRs, not approve them.
	e.mustDo(200, http.MethodPost, "/v1/apply", admin, "application/yaml", `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: csr-requester}
rules: [{apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests], verbs: [create, get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-requests}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: csr-requester}
subjects: [{kind: User, name: "arn:aws:iam::123456789012:user/bob"}]
`)
	e.mustDo(200, http.MethodPost, "/v1/apply", bob, "application/yaml", csrManifest(t, "web", "clusterissuers.cert-manager.io/ss", 600))
	r = e.mustDo(200, http.MethodGet, "/v1/certificatesigningrequests/web", bob, "", "")
	var got api.CertificateSigningRequest
	if err := json.Unmarshal([]byte(r.body), &got); err != nil || got.Spec.Username != "arn:aws:iam::123456789012:user/bob" || *got.Spec.ExpirationSeconds != 600 {
		t.Fatalf("get: %v %s", err, r.body)
	}
	if r := e.mustDo(200, http.MethodGet, "/v1/certificatesigningrequests", bob, "", ""); !strings.Contains(r.body, `"name":"web"`) {
		t.Fatalf("list: %s", r.body)
	}
	e.mustDo(404, http.MethodGet, "/v1/namespaces/default/certificatesigningrequests/web", bob, "", "")
	approval := "/v1/certificatesigningrequests/web/approval"
	if r := e.do(http.MethodPost, approval, bob, "application/json", `{"approve": true}`); r.code != 403 {
		t.Fatalf("the requester approved: %d %s", r.code, r.body)
	}
	if r := e.do(http.MethodPost, approval, admin, "application/json", `{"reason": "x"}`); r.code != 400 {
		t.Fatalf("no approve field: %d %s", r.code, r.body)
	}
	r = e.mustDo(200, http.MethodPost, approval, admin, "application/json", `{"approve": true, "message": "looks fine"}`)
	if err := json.Unmarshal([]byte(r.body), &got); err != nil || !got.Status.Has(api.CSRConditionApproved) {
		t.Fatalf("approve: %v %s", err, r.body)
	}
	e.mustDo(409, http.MethodPost, approval, admin, "application/json", `{"approve": false}`)
	e.mustDo(404, http.MethodPost, "/v1/certificatesigningrequests/nope/approval", admin, "application/json", `{"approve": false}`)
	e.mustDo(200, http.MethodDelete, "/v1/certificatesigningrequests/web", admin, "", "")
	if n := e.count(api.KindCertificateSigningRequest, ""); n != 0 {
		t.Fatalf("%d CSRs left after delete", n)
	}
}
