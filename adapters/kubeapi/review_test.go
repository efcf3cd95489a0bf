package kubeapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/certfn/certfn/adapters/httpapi/apitest"
	"github.com/certfn/certfn/adapters/kubeapi"
)

const reviews = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"

// reviewBody is a SelfSubjectAccessReview of resource attributes.
func reviewBody(ns, verb, group, resource, name string) string {
	return fmt.Sprintf(`{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":`+
		`{"namespace":%q,"verb":%q,"group":%q,"resource":%q,"name":%q}}}`, ns, verb, group, resource, name)
}

// grantAlice binds alice to verbs on certificates in default.
func (e *env) grantAlice(verbs ...string) {
	e.t.Helper()
	for _, d := range strings.Split(apitest.Grant("reader", alice, "default", "cert-manager.io", []string{"certificates"}, verbs), "---\n") {
		var m map[string]any
		_ = yaml.Unmarshal([]byte(d), &m)
		path := "/apis/rbac.authorization.k8s.io/v1/clusterroles"
		if m["kind"] == "RoleBinding" {
			path = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
		}
		e.must(201, req{method: "POST", path: path, user: admin, contentType: "application/json", body: toJSON(e.t, d)})
	}
}

// `kubectl auth can-i` answers from certfn's RBAC, and certfn's own rules
// (verbs it does not serve) say no whatever RBAC allows.
func TestSelfSubjectAccessReview(t *testing.T) {
	e := newEnv(t)
	e.grantAlice("get", "list")
	for _, tc := range []struct {
		name, user, body string
		allowed          bool
		reason           string
	}{
		{"granted get", alice, reviewBody("default", "get", "cert-manager.io", "certificates", "web"), true, "allows get"},
		{"granted list", alice, reviewBody("default", "list", "cert-manager.io", "certificates", ""), true, "allows list"},
		{"other namespace", alice, reviewBody("team-b", "get", "cert-manager.io", "certificates", "web"), false, "does not allow get on certificates.cert-manager.io in namespace team-b"},
		{"every namespace", alice, reviewBody("", "list", "cert-manager.io", "certificates", ""), false, "does not allow list"},
		{"not granted delete", alice, reviewBody("default", "delete", "cert-manager.io", "certificates", "web"), false, "does not allow delete"},
		{"patch needs update", alice, reviewBody("default", "patch", "cert-manager.io", "certificates", "web"), false, "does not allow update"},
		{"admin patch", admin, reviewBody("default", "patch", "cert-manager.io", "certificates", "web"), true, "allows patch"},
		{"orders are written by certfn", admin, reviewBody("default", "create", "acme.cert-manager.io", "orders", ""), false, "does not serve create on orders.acme.cert-manager.io"},
		{"watch is not served", admin, reviewBody("default", "watch", "cert-manager.io", "certificates", ""), false, "does not serve watch"},
		{"unknown resource", admin, reviewBody("default", "get", "", "pods", ""), false, `no resource "pods" in group ""`},
		{"subresource", admin, `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":{"namespace":"default","verb":"update","group":"cert-manager.io","resource":"certificates","subresource":"status"}}}`, false, "not subresources"},
		{"discovery path", alice, `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"nonResourceAttributes":{"path":"/apis","verb":"get"}}}`, true, "open to every authenticated caller"},
		{"other path", alice, `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"nonResourceAttributes":{"path":"/metrics","verb":"get"}}}`, false, "serves no get on the path /metrics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.must(201, req{method: "POST", path: reviews, user: tc.user, contentType: "application/json", body: tc.body})
			var got kubeapi.AccessReview
			if err := json.Unmarshal([]byte(r.body), &got); err != nil {
				t.Fatal(err)
			}
			if got.Status.Allowed != tc.allowed || !strings.Contains(got.Status.Reason, tc.reason) {
				t.Errorf("allowed %v, reason %q; want %v and a reason with %q", got.Status.Allowed, got.Status.Reason, tc.allowed, tc.reason)
			}
			if got.Kind != "SelfSubjectAccessReview" || (got.Spec.ResourceAttributes == nil && got.Spec.NonResourceAttributes == nil) {
				t.Errorf("the answer does not echo the review: %s", r.body)
			}
		})
	}
}

func TestSelfSubjectAccessReviewBadInput(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, method, body string
		code               int
		msg                string
	}{
		{"GET", "GET", "", 405, "only POST"},
		{"no attributes", "POST", `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{}}`, 422, "spec.resourceAttributes"},
		{"both attributes", "POST", `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":{"verb":"get"},"nonResourceAttributes":{"path":"/api","verb":"get"}}}`, 422, "exactly one"},
		{"no verb", "POST", `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":{"resource":"certificates"}}}`, 422, "spec.resourceAttributes.verb"},
		{"selector", "POST", `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":{"verb":"list","resource":"certificates","labelSelector":{"rawSelector":"a=b"}}}}`, 400, "labelSelector"},
		{"unknown field", "POST", `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":{"verb":"get","colour":"red"}}}`, 400, "colour"},
		{"wrong kind", "POST", `{"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":{"verb":"get"}}}`, 400, "do not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.must(tc.code, req{method: tc.method, path: reviews, user: alice, contentType: "application/json", body: tc.body})
			if s := r.status(t); !strings.Contains(s.Message, tc.msg) {
				t.Errorf("message %q, want it to name %q", s.Message, tc.msg)
			}
		})
	}
	// discovery lists the resource
	r := e.must(200, req{method: "GET", path: "/apis/authorization.k8s.io/v1", user: alice})
	if !strings.Contains(r.body, `"name":"selfsubjectaccessreviews"`) || !strings.Contains(r.body, `"verbs":["create"]`) {
		t.Errorf("discovery of authorization.k8s.io/v1: %s", r.body)
	}
	e.must(401, req{method: "POST", path: reviews, contentType: "application/json", body: reviewBody("default", "get", "", "secrets", "")})
}
