package kubeapi_test

import (
	"strings"
	"testing"

	"github.com/certfn/certfn/adapters/httpapi/apitest"
)

const crs = "/apis/cert-manager.io/v1/namespaces/default/certificaterequests"

// cmctl renew, approve and deny (UpdateStatus with one condition added)
// and kubectl replace --subresource=status: the decisions go through the
// service; anything else a client changes in status is refused.
func TestStatusSubresources(t *testing.T) {
	e := newEnv(t)
	e.seed()
	issuing := `{"type":"Issuing","status":"True","reason":"ManuallyTriggered","message":"Certificate re-issuance manually triggered"}`
	cert := e.must(200, req{method: "GET", path: certs + "/web/status", user: admin}).body
	// alice may not read it: 403, nothing renewed
	e.must(403, req{method: "PUT", path: certs + "/web/status", user: alice, contentType: "application/json", body: approvalPut(t, cert, issuing)})
	r := e.must(200, req{method: "PUT", path: certs + "/web/status", user: admin, contentType: "application/json", body: approvalPut(t, cert, issuing)})
	if !strings.Contains(r.body, `"type":"Issuing","status":"True"`) {
		t.Errorf("after the renewal: %s", r.body)
	}

	cert = e.must(200, req{method: "GET", path: certs + "/web", user: admin}).body
	e.must(201, req{method: "POST", path: crs, user: admin, contentType: "application/json", body: toJSON(t, apitest.Request(t, "default", "manual", "ss", "manual.example.com"))})
	cr := e.must(200, req{method: "GET", path: crs + "/manual", user: admin}).body
	approved := `{"type":"Approved","status":"True","reason":"KubectlCertManager","message":"manually approved by cmctl"}`
	for _, tc := range []struct {
		name, path, body string
		code             int
		msg              string
	}{
		{"another condition", certs + "/web/status", approvalPut(t, cert, `{"type":"Ready","status":"False","reason":"Mine"}`), 422, "a client may add only Issuing"},
		{"nothing added", crs + "/manual/status", cr, 422, "add Approved or Denied with status True"},
		{"both", crs + "/manual/status", approvalPut(t, approvalPut(t, cr, approved), `{"type":"Denied","status":"True"}`), 422, "one of Approved, Denied at a time"},
		{"stale", crs + "/manual/status", strings.Replace(approvalPut(t, cr, approved), `"resourceVersion":"`, `"resourceVersion":"9`, 1), 409, "metadata.resourceVersion"},
		{"other name", crs + "/other/status", approvalPut(t, cr, approved), 422, "does not match the URL"},
		{"unknown field", crs + "/manual/status", strings.Replace(approvalPut(t, cr, approved), `{`, `{"colour":"red",`, 1), 400, `unknown field "colour"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.must(tc.code, req{method: "PUT", path: tc.path, user: admin, contentType: "application/json", body: tc.body})
			if s := r.status(t); !strings.Contains(s.Message, tc.msg) {
				t.Errorf("message %q, want %q", s.Message, tc.msg)
			}
		})
	}
	r = e.must(200, req{method: "PUT", path: crs + "/manual/status", user: admin, contentType: "application/json", body: approvalPut(t, cr, approved)})
	if !strings.Contains(r.body, `"type":"Approved","status":"True"`) || !strings.Contains(r.body, "manually approved by cmctl") {
		t.Errorf("after the approval: %s", r.body)
	}
	e.must(405, req{method: "PATCH", path: crs + "/manual/status", user: admin, contentType: "application/merge-patch+json", body: `{}`})
	if b := e.must(200, req{method: "GET", path: "/apis/cert-manager.io/v1", user: admin}).body; !strings.Contains(b, `"certificates/status"`) || !strings.Contains(b, `"certificaterequests/status"`) {
		t.Errorf("discovery: %s", b)
	}
}
