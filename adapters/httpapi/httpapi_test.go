package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/adapters/httpapi/apitest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/rbac"
)

const (
	admin = "admin"
	alice = "arn:aws:iam::123456789012:user/alice"
	bob   = "arn:aws:iam::123456789012:user/bob"
)

// headerAuth is the tests' authenticator: X-Test-User names the caller;
// "admin" is in system:masters. A real deployment never trusts a header.
func headerAuth(r *http.Request) (app.Caller, error) {
	u := r.Header.Get("X-Test-User")
	switch u {
	case "":
		return app.Caller{}, fmt.Errorf("%w: no identity in the request", httpapi.ErrUnauthenticated)
	case "broken":
		return app.Caller{}, errors.New("identity provider unavailable")
	case admin:
		return app.Caller{Username: admin, Groups: []string{app.SuperuserGroup}}, nil
	}
	id, err := rbac.FromAWSARN(u)
	if err != nil {
		return app.Caller{}, fmt.Errorf("%w: %w", httpapi.ErrUnauthenticated, err)
	}
	return app.Caller{Username: id.Username, UID: "uid-" + u, Groups: id.Groups, Extra: id.Extra}, nil
}

type env struct {
	t  testing.TB
	rt *apitest.Deployment
	h  http.Handler
}

func newEnv(t testing.TB, maxBody int64) *env {
	t.Helper()
	return newEnvWith(t, maxBody, app.Settings{})
}

func newEnvWith(t testing.TB, maxBody int64, settings app.Settings) *env {
	t.Helper()
	rt, _ := apitest.RuntimeWith(t, settings)
	h, err := httpapi.New(httpapi.Config{Service: rt.Service, Authenticate: headerAuth, MaxBody: maxBody, Logger: apitest.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, rt: rt, h: h}
}

// resp is one answer.
type resp struct {
	code int
	body string
	hdr  http.Header
}

// errBody decodes an error answer.
func (r resp) err(t *testing.T) (msg, reason, field string) {
	t.Helper()
	var b struct{ Error, Reason, Field string }
	if err := json.Unmarshal([]byte(r.body), &b); err != nil {
		t.Fatalf("error answer is not JSON: %v: %q", err, r.body)
	}
	return b.Error, b.Reason, b.Field
}

func (e *env) do(method, path, user, contentType, body string) resp {
	e.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if user != "" {
		req.Header.Set("X-Test-User", user)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		e.t.Fatalf("%s %s: Content-Type %q", method, path, ct)
	}
	return resp{w.Code, w.Body.String(), w.Header()}
}

// mustDo fails unless the answer has status want.
func (e *env) mustDo(want int, method, path, user, contentType, body string) resp {
	e.t.Helper()
	r := e.do(method, path, user, contentType, body)
	if r.code != want {
		e.t.Fatalf("%s %s as %q: %d %s, want %d", method, path, user, r.code, r.body, want)
	}
	return r
}

func (e *env) applyYAML(user, docs string) resp {
	e.t.Helper()
	return e.do(http.MethodPost, "/v1/apply", user, "application/yaml", docs)
}

func (e *env) count(kind, ns string) int {
	e.t.Helper()
	objs, err := e.rt.Repo.List(context.Background(), kind, ns)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(objs)
}

func TestApply(t *testing.T) {
	e := newEnv(t, 0)
	docs := apitest.Docs(apitest.Issuer("default", "ss"), apitest.Certificate("default", "web", "ss", "web.example.com"))
	r := e.applyYAML(admin, docs)
	var out httpapi.ApplyResponse
	if err := json.Unmarshal([]byte(r.body), &out); r.code != 200 || err != nil {
		t.Fatalf("apply: %d %s %v", r.code, r.body, err)
	}
	want := []httpapi.AppliedObject{{Kind: "Issuer", Namespace: "default", Name: "ss", Action: "created"},
		{Kind: "Certificate", Namespace: "default", Name: "web", Action: "created"}}
	if fmt.Sprint(out.Results) != fmt.Sprint(want) {
		t.Fatalf("results %+v, want %+v", out.Results, want)
	}
	// Again: unchanged. As JSON (a one-object document): also accepted.
	r = e.applyYAML(admin, docs)
	if !strings.Contains(r.body, `"action":"unchanged"`) || strings.Contains(r.body, "created") {
		t.Fatalf("re-apply: %s", r.body)
	}
	js := `{"apiVersion":"cert-manager.io/v1","kind":"Certificate","metadata":{"name":"web","namespace":"default"},
	  "spec":{"secretName":"web-tls","dnsNames":["web.example.com","www.example.com"],"privateKey":{"algorithm":"ECDSA","size":256},"issuerRef":{"name":"ss"}}}`
	r = e.mustDo(200, http.MethodPost, "/v1/apply", admin, "application/json", js)
	if !strings.Contains(r.body, `"action":"configured"`) {
		t.Fatalf("apply JSON change: %s", r.body)
	}
	// Without a Content-Type the body is JSON; an array of objects works.
	r = e.mustDo(200, http.MethodPost, "/v1/apply", admin, "", "["+js+"]")
	if !strings.Contains(r.body, `"action":"unchanged"`) {
		t.Fatalf("apply JSON array: %s", r.body)
	}
	// Kubernetes-only fields are accepted and reported.
	ign := strings.Replace(apitest.Certificate("default", "ign", "ss", "ign.example.com"), "metadata: {", "metadata: {finalizers: [x], ", 1)
	if r = e.applyYAML(admin, ign); r.code != 200 || !strings.Contains(r.body, `"ignored":["metadata.finalizers"]`) {
		t.Fatalf("apply with ignored field: %d %s", r.code, r.body)
	}
	// A cluster-scoped object with a namespace: applied, the namespace
	// ignored and a warning returned, as the Kubernetes API server does.
	r = e.applyYAML(admin, "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: root, namespace: cert-manager}\nspec: {selfSigned: {}}\n")
	if r.code != 200 || !strings.Contains(r.body, `"warnings":["document 1 (ClusterIssuer cert-manager/root): metadata.namespace: ignored: kind ClusterIssuer is cluster-scoped"]`) {
		t.Fatalf("apply a ClusterIssuer with a namespace: %d %s", r.code, r.body)
	}
}

// Bad input: malformed, invalid, oversized or of the wrong type; nothing
// of a refused batch is stored.
func TestApplyRefusesBadInput(t *testing.T) {
	e := newEnv(t, 8<<10)
	cert := apitest.Certificate("default", "web", "ss", "web.example.com")
	for _, tc := range []struct {
		name, contentType, body string
		code                    int
		reason, field, msg      string
	}{
		{"invalid SAN", "application/yaml", strings.Replace(cert, "[web.example.com]", "[web.example.com, a..b]", 1),
			422, "Invalid", "spec.dnsNames[1]", `spec.dnsNames[1]`},
		{"one bad document of two", "application/yaml", apitest.Docs(apitest.Issuer("default", "ss"), strings.Replace(cert, "size: 256", "size: 255", 1)),
			422, "Invalid", "spec.privateKey.size", "spec.privateKey.size"},
		{"unknown field", "application/yaml", strings.Replace(cert, "secretName:", "secretNme:", 1),
			400, "BadRequest", "spec.secretNme", "spec.secretNme: unknown field"},
		{"malformed JSON", "application/json", `{"kind": `, 400, "BadRequest", "", "body: "},
		{"YAML sent as JSON", "application/json", cert, 400, "BadRequest", "", "body is not JSON"},
		{"malformed YAML", "application/yaml", "kind: [", 400, "BadRequest", "", "document 1"},
		{"empty body", "application/json", "  ", 400, "BadRequest", "", "no resources found"},
		{"unsupported type", "text/plain", cert, 415, "UnsupportedMediaType", "", "want application/json or application/yaml"},
		{"oversized", "application/yaml", cert + "# " + strings.Repeat("x", 9<<10) + "\n", 413, "RequestEntityTooLarge", "",
			"request body is larger than the limit of 8192 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/apply", admin, tc.contentType, tc.body)
			msg, reason, field := r.err(t)
			if r.code != tc.code || reason != tc.reason || field != tc.field || !strings.Contains(msg, tc.msg) {
				t.Fatalf("got %d %q field %q: %q; want %d %q field %q containing %q", r.code, reason, field, msg, tc.code, tc.reason, tc.field, tc.msg)
			}
		})
	}
	if n := e.count(api.KindIssuer, "") + e.count(api.KindCertificate, ""); n != 0 {
		t.Fatalf("%d objects stored by refused applies", n)
	}
}

func TestRoutes(t *testing.T) {
	e := newEnv(t, 0)
	e.mustDo(200, http.MethodPost, "/v1/apply", admin, "application/yaml", apitest.Docs(apitest.Issuer("default", "ss"),
		apitest.Certificate("default", "web", "ss", "web.example.com"), apitest.Certificate("team-a", "api", "ss", "api.example.com"),
		"apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: root}\nspec: {selfSigned: {}}\n"))

	list := func(path string) []string {
		t.Helper()
		r := e.mustDo(200, http.MethodGet, path, admin, "", "")
		var raw struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal([]byte(r.body), &raw); err != nil || raw.Kind != "List" {
			t.Fatalf("GET %s: %v %s", path, err, r.body)
		}
		var names []string
		for _, it := range raw.Items {
			var o struct{ Metadata api.ObjectMeta }
			if err := json.Unmarshal(it, &o); err != nil {
				t.Fatal(err)
			}
			names = append(names, o.Metadata.Namespace+"/"+o.Metadata.Name)
		}
		return names
	}
	for _, tc := range []struct{ path, want string }{
		{"/v1/certificates", "[default/web team-a/api]"},
		{"/v1/certificates?namespace=team-a", "[team-a/api]"},
		{"/v1/namespaces/default/certificates", "[default/web]"},
		{"/v1/namespaces/nobody/certificates", "[]"},
		{"/v1/clusterissuers", "[/root]"},
	} {
		if got := fmt.Sprint(list(tc.path)); got != tc.want {
			t.Errorf("GET %s: %s, want %s", tc.path, got, tc.want)
		}
	}

	r := e.mustDo(200, http.MethodGet, "/v1/namespaces/default/certificates/web", admin, "", "")
	var c api.Certificate
	if err := json.Unmarshal([]byte(r.body), &c); err != nil || c.Name != "web" || c.Spec.SecretName != "web-tls" || c.ResourceVersion == "" {
		t.Fatalf("get: %v %s", err, r.body)
	}
	r = e.mustDo(200, http.MethodGet, "/v1/clusterissuers/root", admin, "", "")
	if !strings.Contains(r.body, `"kind":"ClusterIssuer"`) {
		t.Fatalf("get cluster-scoped: %s", r.body)
	}

	for _, tc := range []struct {
		method, path string
		code         int
		msg          string
	}{
		{"GET", "/v1/namespaces/default/certificates/nope", 404, "not found"},
		{"GET", "/v1/widgets", 404, `unknown resource type "widgets"`},
		{"GET", "/v1/cert", 404, `unknown resource type "cert"`},
		{"GET", "/v1/certificates/web", 404, "certificates are namespaced: use /v1/namespaces/{namespace}/certificates/web"},
		{"GET", "/v1/namespaces/default/clusterissuers/root", 404, "clusterissuers are cluster-scoped: use /v1/clusterissuers/root"},
		{"GET", "/v2/certificates", 404, "no such route"},
		{"GET", "/v1/namespaces/default/certificates?namespace=other", 400, `query namespace "other" differs`},
		{"PUT", "/v1/namespaces/default/certificates/web", 405, "method PUT is not allowed"},
		{"POST", "/v1/certificates", 405, "allowed: GET"},
		{"GET", "/v1/apply", 405, "allowed: POST"},
		{"DELETE", "/v1/namespaces/default/certificates/web/status", 405, "allowed: GET"},
	} {
		r := e.do(tc.method, tc.path, admin, "", "")
		if msg, _, _ := r.err(t); r.code != tc.code || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s %s: %d %q, want %d containing %q", tc.method, tc.path, r.code, msg, tc.code, tc.msg)
		}
		if tc.code == 405 && r.hdr.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", tc.method, tc.path)
		}
	}

	e.mustDo(200, http.MethodDelete, "/v1/namespaces/team-a/certificates/api", admin, "", "")
	e.mustDo(404, http.MethodDelete, "/v1/namespaces/team-a/certificates/api", admin, "", "")
	if got := fmt.Sprint(list("/v1/certificates")); got != "[default/web]" {
		t.Fatalf("after delete: %s", got)
	}
	e.mustDo(200, http.MethodDelete, "/v1/clusterissuers/root", admin, "", "")
}

// TestPagedList: limit and continue page a list as Kubernetes does
// (metadata.continue until the last page), and bad values are 400s naming
// the parameter.
func TestPagedList(t *testing.T) {
	e := newEnv(t, 0)
	docs := []string{apitest.Issuer("default", "ss")}
	var want []string
	for _, ns := range []string{"default", "team-a"} {
		for i := range 3 {
			name := fmt.Sprintf("c%d", i)
			docs = append(docs, apitest.Certificate(ns, name, "ss", name+".example.com"))
			want = append(want, ns+"/"+name)
		}
	}
	e.mustDo(200, http.MethodPost, "/v1/apply", admin, "application/yaml", apitest.Docs(docs...))

	type page struct {
		Metadata struct {
			Continue string `json:"continue"`
		} `json:"metadata"`
		Items []struct{ Metadata api.ObjectMeta } `json:"items"`
	}
	var got []string
	pages := 0
	for cont := ""; ; pages++ {
		if pages > len(want) {
			t.Fatalf("more than %d pages", pages)
		}
		r := e.mustDo(200, http.MethodGet, "/v1/certificates?limit=4&continue="+url.QueryEscape(cont), admin, "", "")
		var p page
		if err := json.Unmarshal([]byte(r.body), &p); err != nil {
			t.Fatalf("page: %v %s", err, r.body)
		}
		if len(p.Items) > 4 {
			t.Fatalf("page of %d items with limit=4", len(p.Items))
		}
		for _, it := range p.Items {
			got = append(got, it.Metadata.Namespace+"/"+it.Metadata.Name)
		}
		if cont = p.Metadata.Continue; cont == "" {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || pages != 1 {
		t.Fatalf("pages of 4: %v in %d continuations, want %v in 1", got, pages, want)
	}
	if r := e.mustDo(200, http.MethodGet, "/v1/certificates", admin, "", ""); strings.Contains(r.body, `"continue"`) {
		t.Errorf("unpaged list has a continue token: %s", r.body)
	}

	first := e.mustDo(200, http.MethodGet, "/v1/certificates?limit=1", admin, "", "")
	var p page
	if err := json.Unmarshal([]byte(first.body), &p); err != nil || p.Metadata.Continue == "" {
		t.Fatalf("limit=1: %v %s", err, first.body)
	}
	for _, tc := range []struct{ path, field, msg string }{
		{"/v1/certificates?limit=-1", "limit", `limit "-1": want a whole number >= 0`},
		{"/v1/certificates?limit=ten", "limit", `limit "ten"`},
		{"/v1/certificates?continue=garbage", "continue", "continue token is invalid"},
		{"/v1/namespaces/team-a/certificates?continue=" + url.QueryEscape(p.Metadata.Continue), "continue", "another listing"},
		{"/v1/certificaterequests?continue=" + url.QueryEscape(p.Metadata.Continue), "continue", "another listing"},
	} {
		r := e.do(http.MethodGet, tc.path, admin, "", "")
		if msg, _, field := r.err(t); r.code != 400 || field != tc.field || !strings.Contains(msg, tc.msg) {
			t.Errorf("GET %s: %d field %q %q, want 400 field %q containing %q", tc.path, r.code, field, msg, tc.field, tc.msg)
		}
	}
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t, 0)
	for _, tc := range []struct{ user, msg string }{
		{"", "unauthenticated: no identity in the request"},
		{"broken", "unauthenticated: identity provider unavailable"},
	} {
		for _, path := range []string{"/v1/certificates", "/v2/nothing", "/v1/apply"} {
			r := e.do(http.MethodGet, path, tc.user, "", "")
			if msg, reason, _ := r.err(t); r.code != 401 || reason != "Unauthorized" || msg != tc.msg {
				t.Errorf("GET %s as %q: %d %s %q, want 401 %q", path, tc.user, r.code, reason, msg, tc.msg)
			}
		}
	}
}

// The caller's identity feeds the bindings and is recorded as the
// requester of the requests it creates.
func TestBindings(t *testing.T) {
	e := newEnv(t, 0)
	e.mustDo(200, http.MethodPost, "/v1/apply", admin, "application/yaml", apitest.Docs(
		apitest.Issuer("team-a", "ss"), apitest.Issuer("team-b", "ss"),
		apitest.Grant("requester", alice, "team-a", "cert-manager.io", []string{"certificaterequests", "certificates"}, []string{"create", "get", "list"}),
		apitest.Grant("approver", bob, "", "cert-manager.io", []string{"signers"}, []string{"approve"}),
	))

	// alice may create requests in team-a, not in team-b, and read them.
	r := e.applyYAML(alice, apitest.Request(t, "team-a", "req", "ss", "a.example.com"))
	if r.code != 200 {
		t.Fatalf("alice apply in team-a: %d %s", r.code, r.body)
	}
	r = e.mustDo(200, http.MethodGet, "/v1/namespaces/team-a/certificaterequests/req", alice, "", "")
	var cr api.CertificateRequest
	if err := json.Unmarshal([]byte(r.body), &cr); err != nil {
		t.Fatal(err)
	}
	if cr.Spec.Username != alice || cr.Spec.UID != "uid-"+alice || !contains(cr.Spec.Groups, "aws:account:123456789012") || !contains(cr.Spec.Groups, "system:authenticated") {
		t.Fatalf("requester not recorded from the caller: %+v", cr.Spec)
	}
	// A request naming another requester in its body still records alice.
	forged := strings.Replace(apitest.Request(t, "team-a", "forged", "ss", "b.example.com"), "spec:\n", "spec:\n  username: admin\n  groups: [system:masters]\n", 1)
	e.mustDo(200, http.MethodPost, "/v1/apply", alice, "application/yaml", forged)
	o, err := e.rt.Repo.Get(context.Background(), api.Key{Kind: api.KindCertificateRequest, Namespace: "team-a", Name: "forged"})
	if err != nil || o.(*api.CertificateRequest).Spec.Username != alice || contains(o.(*api.CertificateRequest).Spec.Groups, "system:masters") {
		t.Fatalf("forged requester kept: %v %+v", err, o)
	}

	for _, tc := range []struct {
		name, method, path, user, ctype, body, msg string
	}{
		{"create in another namespace", "POST", "/v1/apply", alice, "application/yaml", apitest.Request(t, "team-b", "req", "ss", "a.example.com"),
			`may not create or update CertificateRequest/team-b/req`},
		{"a batch with one forbidden object", "POST", "/v1/apply", alice, "application/yaml",
			apitest.Docs(apitest.Request(t, "team-a", "ok", "ss", "c.example.com"), apitest.Issuer("team-a", "other")), `may not create or update Issuer/team-a/other`},
		{"update what it may only create", "POST", "/v1/apply", alice, "application/yaml", apitest.Issuer("team-a", "ss"), `may not create or update Issuer/team-a/ss`},
		{"get in another namespace", "GET", "/v1/namespaces/team-b/issuers/ss", alice, "", "", `may not get Issuer/team-b/ss`},
		{"list everywhere", "GET", "/v1/certificaterequests", alice, "", "", `may not list CertificateRequest`},
		{"delete", "DELETE", "/v1/namespaces/team-a/certificaterequests/req", alice, "", "", `may not delete CertificateRequest/team-a/req`},
		{"approve without the approve permission", "POST", "/v1/namespaces/team-a/certificaterequests/req/approval", alice, "", `{"approve": true}`,
			`may not approve or deny requests for signer`},
		// Approving a request that does not exist answers 403, like one
		// that exists, unless the caller may read requests there: no probing.
		{"approve a missing request without get", "POST", "/v1/namespaces/team-b/certificaterequests/nope/approval", alice, "", `{"approve": true}`,
			`may not approve or deny CertificateRequest/team-b/nope`},
		{"approve an existing request without approve", "POST", "/v1/namespaces/team-a/certificaterequests/req/approval", "arn:aws:iam::123456789012:user/mallory", "", `{"approve": true}`,
			`may not approve or deny CertificateRequest/team-a/req`},
		{"approve a missing request without anything", "POST", "/v1/namespaces/team-a/certificaterequests/nope/approval", "arn:aws:iam::123456789012:user/mallory", "", `{"approve": true}`,
			`may not approve or deny CertificateRequest/team-a/nope`},
		{"bob cannot read", "GET", "/v1/namespaces/team-a/certificaterequests/req", bob, "", "", "may not get"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.user, tc.ctype, tc.body)
			if msg, reason, _ := r.err(t); r.code != 403 || reason != "Forbidden" || !strings.Contains(msg, tc.msg) {
				t.Fatalf("%d %s %q, want 403 containing %q", r.code, reason, msg, tc.msg)
			}
		})
	}
	if e.count(api.KindCertificateRequest, "") != 2 || e.count(api.KindIssuer, "") != 2 {
		t.Fatal("a forbidden apply stored something")
	}
	// alice may get requests in team-a: a missing one there is not found.
	e.mustDo(404, "POST", "/v1/namespaces/team-a/certificaterequests/nope/approval", alice, "", `{"approve": true}`)
	// alice may list in team-a; bob may approve.
	e.mustDo(200, http.MethodGet, "/v1/namespaces/team-a/certificaterequests", alice, "", "")
	r = e.mustDo(200, http.MethodPost, "/v1/namespaces/team-a/certificaterequests/req/approval", bob, "", `{"approve": true}`)
	if err := json.Unmarshal([]byte(r.body), &cr); err != nil {
		t.Fatal(err)
	}
	if c := api.FindCondition(cr.Status.Conditions, "Approved"); c == nil || c.Reason != "certfn" || c.Message != "manually approved by "+bob {
		t.Fatalf("approval condition: %+v", cr.Status.Conditions)
	}
}

// Writing RBAC objects needs `bind` on the role a binding grants, or
// `escalate` on a role whose rules change: create alone cannot escalate.
func TestBindingsCannotEscalate(t *testing.T) {
	e := newEnv(t, 0)
	e.mustDo(200, http.MethodPost, "/v1/apply", admin, "application/yaml", apitest.Docs(
		apitest.Grant("rbac-writer", alice, "team-a", "rbac.authorization.k8s.io", []string{"rolebindings", "roles"}, []string{"create", "update", "get"}),
		`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: bind-viewer}
rules:
  - {apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], verbs: [bind], resourceNames: [viewer]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-binds-viewer, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bind-viewer}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "`+alice+`"}]
`,
		apitest.Grant("viewer", "nobody", "", "cert-manager.io", []string{"certificates"}, []string{"get"}),
	))
	binding := func(name, role string) string {
		return fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: %s, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %s}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "%s"}]
`, name, role, alice)
	}
	for _, tc := range []struct {
		name, body string
		code       int
		msg        string
	}{
		{"bind a role it may bind", binding("self-viewer", "viewer"), 200, ""},
		{"bind a role it may not bind", binding("self-admin", "rbac-writer"), 403, "may not bind clusterroles/rbac-writer in namespace team-a"},
		{"write a role's rules", "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: all, namespace: team-a}\nrules: [{apiGroups: ['*'], resources: ['*'], verbs: ['*']}]\n",
			403, "may not escalate Role/team-a/all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.applyYAML(alice, tc.body)
			if msg, _, _ := r.err(t); r.code != tc.code || !strings.Contains(msg, tc.msg) {
				t.Fatalf("%d %q, want %d containing %q", r.code, msg, tc.code, tc.msg)
			}
		})
	}
	if n := e.count(api.KindRole, ""); n != 0 {
		t.Fatalf("%d roles stored", n)
	}
}

func TestApprovalRenewStatus(t *testing.T) {
	e := newEnv(t, 0)
	e.mustDo(200, http.MethodPost, "/v1/apply", admin, "application/yaml", apitest.Docs(apitest.Issuer("default", "ss"),
		apitest.Certificate("default", "web", "ss", "web.example.com"), apitest.Certificate("default", "other", "ss", "other.example.com")))
	if _, err := e.rt.RunUntilIdle(context.Background(), 2); err != nil { // no policy: the requests wait for approval
		t.Fatal(err)
	}
	approval := "/v1/namespaces/default/certificaterequests/web-1/approval"
	for _, tc := range []struct {
		name, body string
		code       int
		field, msg string
	}{
		{"missing approve", `{"reason": "x"}`, 400, "approve", "approve: required"},
		{"unknown field", `{"approve": true, "aprove": 1}`, 400, "aprove", "aprove: unknown field"},
		{"not JSON", `approve`, 400, "", "not a valid JSON object"},
		{"two objects", `{"approve": true} {}`, 400, "", "want one JSON object"},
		{"missing request", "", 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.code == 0 {
				r := e.do("POST", "/v1/namespaces/default/certificaterequests/nope-1/approval", admin, "", `{"approve": false}`)
				if r.code != 404 {
					t.Fatalf("missing request: %d %s", r.code, r.body)
				}
				return
			}
			r := e.do("POST", approval, admin, "application/json", tc.body)
			if msg, _, field := r.err(t); r.code != tc.code || field != tc.field || !strings.Contains(msg, tc.msg) {
				t.Fatalf("%d field %q %q, want %d field %q containing %q", r.code, field, msg, tc.code, tc.field, tc.msg)
			}
		})
	}
	e.mustDo(200, "POST", approval, admin, "", `{"approve": false, "reason": "Nope", "message": "not today"}`)
	r := e.mustDo(409, "POST", approval, admin, "", `{"approve": true}`)
	if msg, reason, _ := r.err(t); reason != "Conflict" || !strings.Contains(msg, "already Denied") {
		t.Fatalf("second decision: %s", r.body)
	}
	e.mustDo(200, "POST", "/v1/namespaces/default/certificaterequests/other-1/approval", admin, "", `{"approve": true}`)
	if _, err := e.rt.RunUntilIdle(context.Background(), 2); err != nil {
		t.Fatal(err)
	}

	status := func(name string) app.Report {
		t.Helper()
		r := e.mustDo(200, "GET", "/v1/namespaces/default/certificates/"+name+"/status", admin, "", "")
		var rep app.Report
		if err := json.Unmarshal([]byte(r.body), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := status("other")
	if !strings.HasPrefix(rep.Summary, "Ready: ") || rep.Request == nil || rep.Request.Name != "other-1" || rep.Issuer.State != app.StateFound ||
		rep.Secret.State != app.StateNotRead {
		t.Fatalf("status of the approved certificate: %+v", rep)
	}
	rep = status("web")
	if !strings.HasPrefix(rep.Summary, "Not ready: ") || !strings.Contains(rep.Summary, "not today") {
		t.Fatalf("status of the denied certificate: %q", rep.Summary)
	}
	e.mustDo(404, "GET", "/v1/namespaces/default/certificates/nope/status", admin, "", "")

	r = e.mustDo(200, "POST", "/v1/namespaces/default/certificates/other/renew", admin, "", "")
	var res app.RenewResult
	if err := json.Unmarshal([]byte(r.body), &res); err != nil || res.Certificate == nil || !api.IsTrue(res.Certificate.Status.Conditions, "Issuing") || res.InFlight {
		t.Fatalf("renew: %v %s", err, r.body)
	}
	// Already being issued: the issuance in flight is woken, nothing written.
	r = e.mustDo(200, "POST", "/v1/namespaces/default/certificates/other/renew", admin, "", "")
	res = app.RenewResult{}
	if err := json.Unmarshal([]byte(r.body), &res); err != nil || !res.InFlight || len(res.Woken) == 0 || res.Woken[0] != "Certificate/default/other" ||
		res.Certificate.ResourceVersion != "6" {
		t.Fatalf("second renew: %v %s", err, r.body)
	}
	e.mustDo(404, "POST", "/v1/namespaces/default/certificates/nope/renew", admin, "", "")

	// Nothing the API answers holds key material.
	for _, p := range []string{"/v1/certificates", "/v1/certificaterequests", "/v1/namespaces/default/certificates/other/status"} {
		if r := e.mustDo(200, "GET", p, admin, "", ""); strings.Contains(r.body, "PRIVATE KEY") {
			t.Fatalf("GET %s returned key material", p)
		}
	}
}

// A caller who may get a Certificate but not its issuer or requests sees
// those parts of the status as hidden.
func TestStatusHidesWhatTheCallerMayNotGet(t *testing.T) {
	e := newEnv(t, 0)
	e.mustDo(200, http.MethodPost, "/v1/apply", admin, "application/yaml", apitest.Docs(apitest.Issuer("default", "ss"),
		apitest.Certificate("default", "web", "ss", "web.example.com"),
		apitest.Grant("viewer", alice, "default", "cert-manager.io", []string{"certificates"}, []string{"get"})))
	if _, err := e.rt.RunUntilIdle(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	r := e.mustDo(200, "GET", "/v1/namespaces/default/certificates/web/status", alice, "", "")
	var rep app.Report
	if err := json.Unmarshal([]byte(r.body), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Issuer.State != app.StateHidden || !rep.RequestHidden || rep.Request != nil || rep.Issuer.Conditions != nil {
		t.Fatalf("hidden parts shown: %+v", rep)
	}
	e.mustDo(403, "GET", "/v1/namespaces/default/certificates/web/status", bob, "", "")
}

func TestNewRequiresServiceAndAuthenticate(t *testing.T) {
	rt, _ := apitest.Runtime(t)
	for _, tc := range []struct {
		cfg  httpapi.Config
		want string
	}{
		{httpapi.Config{Authenticate: headerAuth}, "Service is required"},
		{httpapi.Config{Service: rt.Service}, "Authenticate is required"},
	} {
		if _, err := httpapi.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func contains(l []string, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

// POST /v1/apply?dryRun=All checks as apply does and stores nothing;
// another dryRun value is refused naming the parameter.
func TestApplyDryRun(t *testing.T) {
	e := newEnv(t, 8<<10)
	docs := apitest.Docs(apitest.Issuer("default", "ss"), apitest.Certificate("default", "web", "ss", "web.example.com"))
	r := e.mustDo(200, http.MethodPost, "/v1/apply?dryRun=All", admin, "application/yaml", docs)
	var out httpapi.ApplyResponse
	if err := json.Unmarshal([]byte(r.body), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.DryRun) != 2 || out.DryRun[1].Action != "created" || out.DryRun[1].Approval == nil || len(out.Results) != 0 {
		t.Fatalf("dry run answer: %s", r.body)
	}
	if n := e.count(api.KindCertificate, "default") + e.count(api.KindIssuer, "default"); n != 0 {
		t.Fatalf("the dry run stored %d objects", n)
	}
	if r := e.do(http.MethodPost, "/v1/apply?dryRun=Yes", admin, "application/yaml", docs); r.code != 400 || !strings.Contains(r.body, `dryRun=\"Yes\": want All`) {
		t.Fatalf("dryRun=Yes: %d %s", r.code, r.body)
	}
}
