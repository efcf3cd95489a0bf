package kubeapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/certfn/certfn/adapters/httpapi/apitest"
	"github.com/certfn/certfn/core/api"
)

const csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests"

// approvalPut is the body kubectl certificate approve/deny sends: the
// object as read, with a condition added.
func approvalPut(t *testing.T, stored string, cond string) string {
	t.Helper()
	var o map[string]any
	if err := json.Unmarshal([]byte(stored), &o); err != nil {
		t.Fatal(err)
	}
	status, _ := o["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
	}
	var c map[string]any
	_ = json.Unmarshal([]byte(cond), &c)
	conds, _ := status["conditions"].([]any)
	status["conditions"] = append(conds, c)
	o["status"] = status
	b, _ := json.Marshal(o)
	return string(b)
}

// The approval subresource decides a CertificateSigningRequest as `kubectl
// certificate approve` and `deny` send it, with the body's resourceVersion
// as the precondition and core/app's permissions.
func TestCSRApprovalSubresource(t *testing.T) {
	e := newEnv(t)
	for _, name := range []string{"approve-me", "deny-me", "stale"} {
		e.must(201, req{method: "POST", path: csrs, user: admin, contentType: "application/json", body: toJSON(t, apitest.CSRManifest(t, name, ""))})
	}
	approved := `{"type":"Approved","status":"True","reason":"KubectlApprove","message":"This CSR was approved by kubectl certificate approve."}`
	denied := `{"type":"Denied","status":"True","reason":"KubectlDeny","message":"This CSR was denied by kubectl certificate deny."}`

	stored := e.must(200, req{method: "GET", path: csrs + "/approve-me", user: admin}).body
	// alice may not approve: 403, nothing decided
	e.must(403, req{method: "PUT", path: csrs + "/approve-me/approval", user: alice, contentType: "application/json", body: approvalPut(t, stored, approved)})
	r := e.must(200, req{method: "PUT", path: csrs + "/approve-me/approval", user: admin, contentType: "application/json", body: approvalPut(t, stored, approved)})
	var got api.CertificateSigningRequest
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	if c := got.Status.Condition(api.CSRConditionApproved); c == nil || c.Reason != "KubectlApprove" || !strings.Contains(c.Message, "kubectl certificate approve") {
		t.Errorf("after the approval PUT: %+v", got.Status.Conditions)
	}
	// a second decision is refused (approval and denial are permanent)
	e.must(409, req{method: "PUT", path: csrs + "/approve-me/approval", user: admin, contentType: "application/json", body: approvalPut(t, stored, denied)})

	stored = e.must(200, req{method: "GET", path: csrs + "/deny-me", user: admin}).body
	e.must(200, req{method: "PUT", path: csrs + "/deny-me/approval", user: admin, contentType: "application/json", body: approvalPut(t, stored, denied)})
	if b := e.must(200, req{method: "GET", path: csrs + "/deny-me", user: admin}).body; !strings.Contains(b, `"type":"Denied"`) {
		t.Errorf("not denied: %s", b)
	}

	// changed since it was read: 409 naming metadata.resourceVersion
	seen := e.must(200, req{method: "GET", path: csrs + "/stale", user: admin}).body
	e.must(200, req{method: "PATCH", path: csrs + "/stale", user: admin, contentType: "application/merge-patch+json", body: `{"metadata":{"labels":{"reviewed":"no"}}}`})
	if r := e.must(409, req{method: "PUT", path: csrs + "/stale/approval", user: admin, contentType: "application/json", body: approvalPut(t, seen, approved)}); !strings.Contains(r.body, "metadata.resourceVersion") {
		t.Errorf("stale approval: %s", r.body)
	}

	for _, tc := range []struct {
		name, path, method, body string
		code                     int
		msg                      string
	}{
		{"no decision", csrs + "/stale/approval", "PUT", approvalPut(t, seen, `{"type":"Approved","status":"False"}`), 422, "must add an Approved or a Denied condition"},
		{"both", csrs + "/stale/approval", "PUT", approvalPut(t, approvalPut(t, seen, approved), denied), 422, "mutually exclusive"},
		{"other name", csrs + "/deny-me/approval", "PUT", approvalPut(t, seen, approved), 422, "does not match the name on the URL"},
		{"GET", csrs + "/stale/approval", "GET", "", 405, "only PUT"},
		{"unknown field", csrs + "/stale/approval", "PUT", strings.Replace(approvalPut(t, seen, approved), `{`, `{"colour":"red",`, 1), 400, `unknown field "colour"`},
		{"other subresource", csrs + "/stale/status", "PUT", "{}", 400, "served: certificatesigningrequests/approval"},
		{"wrong kind", csrs + "/stale/approval", "PUT", `{"kind":"CertificateRequest","apiVersion":"cert-manager.io/v1","metadata":{"name":"stale"}}`, 400, "do not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.must(tc.code, req{method: tc.method, path: tc.path, user: admin, contentType: "application/json", body: tc.body})
			if s := r.status(t); !strings.Contains(s.Message, tc.msg) {
				t.Errorf("message %q, want %q", s.Message, tc.msg)
			}
		})
	}
	if b := e.must(200, req{method: "GET", path: csrs + "/stale", user: admin}).body; strings.Contains(b, `"type":"Approved"`) || strings.Contains(b, `"type":"Denied"`) {
		t.Errorf("refused approvals decided something: %s", b)
	}
	// discovery names the subresource
	if b := e.must(200, req{method: "GET", path: "/apis/certificates.k8s.io/v1", user: admin}).body; !strings.Contains(b, fmt.Sprintf("%q", "certificatesigningrequests/approval")) {
		t.Errorf("discovery: %s", b)
	}
}
