package kubeapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/certfn/certfn/adapters/httpapi/apitest"
	"github.com/certfn/certfn/adapters/kubeapi"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/memory"
)

const (
	admin = "admin"
	alice = "alice" // no bindings unless a test grants them
)

// headerAuth takes the user from X-Test-User (admin is a superuser).
func headerAuth(r *http.Request) (app.Caller, error) {
	u := r.Header.Get("X-Test-User")
	if u == "" {
		return app.Caller{}, fmt.Errorf("%w: no user", kubeapi.ErrUnauthenticated)
	}
	groups := []string{"system:authenticated"}
	if u == admin {
		groups = append(groups, app.SuperuserGroup)
	}
	return app.Caller{Username: u, Groups: groups}, nil
}

type env struct {
	t  *testing.T
	rt *apitest.Deployment
	h  http.Handler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	rt, _ := apitest.Runtime(t)
	h, err := kubeapi.New(kubeapi.Config{Service: rt.Service, Authenticate: headerAuth, Logger: apitest.Discard(),
		Now: func() time.Time { return apitest.T0.Add(90 * time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, rt: rt, h: h}
}

type resp struct {
	code int
	body string
	hdr  http.Header
}

// status decodes a Status answer.
func (r resp) status(t *testing.T) kubeapi.Status {
	t.Helper()
	var s kubeapi.Status
	if err := json.Unmarshal([]byte(r.body), &s); err != nil || s.Kind != "Status" {
		t.Fatalf("not a Status (%v): %s", err, r.body)
	}
	return s
}

// req is one request: method, path, user, headers (Content-Type, Accept) and body.
type req struct {
	method, path, user string
	contentType        string
	accept             string
	body               string
}

func (e *env) do(q req) resp {
	e.t.Helper()
	r := httptest.NewRequest(q.method, q.path, strings.NewReader(q.body))
	if q.user != "" {
		r.Header.Set("X-Test-User", q.user)
	}
	if q.contentType != "" {
		r.Header.Set("Content-Type", q.contentType)
	}
	if q.accept != "" {
		r.Header.Set("Accept", q.accept)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return resp{w.Code, w.Body.String(), w.Header()}
}

func (e *env) must(want int, q req) resp {
	e.t.Helper()
	r := e.do(q)
	if r.code != want {
		e.t.Fatalf("%s %s as %q: %d %s, want %d", q.method, q.path, q.user, r.code, r.body, want)
	}
	return r
}

// toJSON converts one YAML manifest to JSON.
func toJSON(t *testing.T, manifest string) string {
	t.Helper()
	b, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const certs = "/apis/cert-manager.io/v1/namespaces/default/certificates"

// seed creates an Issuer and the Certificate web in default.
func (e *env) seed() {
	e.t.Helper()
	e.must(201, req{method: "POST", path: "/apis/cert-manager.io/v1/namespaces/default/issuers", user: admin,
		contentType: "application/json", body: toJSON(e.t, apitest.Issuer("default", "ss"))})
	e.must(201, req{method: "POST", path: certs, user: admin, contentType: "application/json",
		body: toJSON(e.t, apitest.Certificate("default", "web", "ss", "web.example.com"))})
}

func TestDiscovery(t *testing.T) {
	e := newEnv(t)
	var groups kubeapi.APIGroupList
	if err := json.Unmarshal([]byte(e.must(200, req{method: "GET", path: "/apis", user: admin}).body), &groups); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range groups.Groups {
		names = append(names, g.Name+"="+g.PreferredVersion.GroupVersion)
	}
	if got, want := strings.Join(names, " "), "acme.cert-manager.io=acme.cert-manager.io/v1 cert-manager.io=cert-manager.io/v1 "+
		"certificates.k8s.io=certificates.k8s.io/v1 policy.cert-manager.io=policy.cert-manager.io/v1alpha1 "+
		"rbac.authorization.k8s.io=rbac.authorization.k8s.io/v1 authorization.k8s.io=authorization.k8s.io/v1"; got != want {
		t.Errorf("groups %s, want %s", got, want)
	}
	resources := func(path string) map[string]kubeapi.APIResource {
		var l kubeapi.APIResourceList
		if err := json.Unmarshal([]byte(e.must(200, req{method: "GET", path: path, user: admin}).body), &l); err != nil {
			t.Fatal(err)
		}
		m := map[string]kubeapi.APIResource{}
		for _, r := range l.Resources {
			m[r.Name] = r
		}
		return m
	}
	cm := resources("/apis/cert-manager.io/v1")
	core := resources("/api/v1")
	acme := resources("/apis/acme.cert-manager.io/v1")
	pol := resources("/apis/policy.cert-manager.io/v1alpha1")
	csr := resources("/apis/certificates.k8s.io/v1")
	tests := []struct {
		name string
		res  kubeapi.APIResource
		want string // kind namespaced shortNames categories verbs
	}{
		{"certificates", cm["certificates"], "Certificate true cert,certs cert-manager create,delete,get,list,patch,update"},
		{"certificaterequests", cm["certificaterequests"], "CertificateRequest true cr,crs cert-manager create,delete,get,list,patch,update"},
		{"issuers", cm["issuers"], "Issuer true  cert-manager create,delete,get,list,patch,update"},
		{"clusterissuers", cm["clusterissuers"], "ClusterIssuer false  cert-manager create,delete,get,list,patch,update"},
		{"orders", acme["orders"], "Order true  cert-manager,cert-manager-acme delete,get,list"},
		{"challenges", acme["challenges"], "Challenge true  cert-manager,cert-manager-acme delete,get,list"},
		{"crp", pol["certificaterequestpolicies"], "CertificateRequestPolicy false crp cert-manager create,delete,get,list,patch,update"},
		{"csr", csr["certificatesigningrequests"], "CertificateSigningRequest false csr  create,delete,get,list,patch,update"},
		{"secrets", core["secrets"], "Secret true   create,delete,get,list"},
		{"events", core["events"], "Event true ev  delete,get,list"},
		{"namespaces", core["namespaces"], "Namespace false ns  create,delete,get,list,patch,update"},
	}
	for _, tt := range tests {
		r := tt.res
		got := fmt.Sprintf("%s %v %s %s %s", r.Kind, r.Namespaced, strings.Join(r.ShortNames, ","), strings.Join(r.Categories, ","), strings.Join(r.Verbs, ","))
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	if _, ok := resources("/apis/rbac.authorization.k8s.io/v1")["clusterrolebindings"]; !ok {
		t.Error("no clusterrolebindings")
	}
	var v kubeapi.VersionInfo
	if err := json.Unmarshal([]byte(e.must(200, req{method: "GET", path: "/version", user: admin}).body), &v); err != nil || v.Major != "1" {
		t.Errorf("version: %v %+v", err, v)
	}
	// Every path needs an identity, discovery included.
	for _, p := range []string{"/version", "/api", "/apis", "/api/v1", "/openapi/v2", "/openapi/v3", certs} {
		if st := e.must(401, req{method: "GET", path: p}).status(t); st.Reason != "Unauthorized" {
			t.Errorf("%s without identity: %+v", p, st)
		}
	}
}

func TestOpenAPI(t *testing.T) {
	e := newEnv(t)
	r := e.must(200, req{method: "GET", path: "/openapi/v2", user: admin, accept: "application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json"})
	if ct := r.hdr.Get("Content-Type"); !strings.Contains(ct, "protobuf") {
		t.Fatalf("v2 protobuf answered %q", ct)
	}
	var doc openapi_v2.Document
	if err := proto.Unmarshal([]byte(r.body), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
		if d.Name == "io.cert-manager.v1.Certificate" {
			found = true
		}
	}
	if !found || doc.Swagger != "2.0" {
		t.Errorf("v2 protobuf document: swagger %q, Certificate found %v", doc.Swagger, found)
	}
	var v2 struct {
		Paths map[string]map[string]struct {
			Parameters []struct{ Name string }
			GVK        map[string]string `json:"x-kubernetes-group-version-kind"`
		}
	}
	if err := json.Unmarshal([]byte(e.must(200, req{method: "GET", path: "/openapi/v2", user: admin}).body), &v2); err != nil {
		t.Fatal(err)
	}
	patch := v2.Paths["/apis/cert-manager.io/v1/namespaces/{namespace}/certificates/{name}"]["patch"]
	if patch.GVK["kind"] != "Certificate" || len(patch.Parameters) != 3 || patch.Parameters[2].Name != "fieldValidation" {
		t.Errorf("v2 certificate patch operation: %+v", patch)
	}
	var index struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		}
	}
	if err := json.Unmarshal([]byte(e.must(200, req{method: "GET", path: "/openapi/v3", user: admin}).body), &index); err != nil {
		t.Fatal(err)
	}
	u := index.Paths["apis/cert-manager.io/v1"].URL
	if !strings.HasPrefix(u, "/openapi/v3/apis/cert-manager.io/v1?hash=") {
		t.Fatalf("v3 index: %+v", index)
	}
	var v3 struct {
		Components struct {
			Schemas map[string]struct {
				Description string
				GVK         []map[string]string `json:"x-kubernetes-group-version-kind"`
			}
		}
	}
	if err := json.Unmarshal([]byte(e.must(200, req{method: "GET", path: u, user: admin}).body), &v3); err != nil {
		t.Fatal(err)
	}
	if s := v3.Components.Schemas["io.cert-manager.v1.Certificate"]; len(s.GVK) != 1 || s.GVK[0]["kind"] != "Certificate" || s.Description == "" {
		t.Errorf("v3 Certificate schema: %+v", s)
	}
	e.must(406, req{method: "GET", path: "/openapi/v2", user: admin, accept: "application/yaml"})
	e.must(404, req{method: "GET", path: "/openapi/v3/apis/nothing/v1", user: admin})
}

func TestGetListTable(t *testing.T) {
	e := newEnv(t)
	e.seed()
	r := e.must(200, req{method: "GET", path: certs + "/web", user: admin})
	var crt api.Certificate
	if err := json.Unmarshal([]byte(r.body), &crt); err != nil || crt.Kind != "Certificate" || crt.APIVersion != "cert-manager.io/v1" || crt.Spec.SecretName != "web-tls" {
		t.Fatalf("get: %v %s", err, r.body)
	}
	var list kubeapi.List
	if err := json.Unmarshal([]byte(e.must(200, req{method: "GET", path: certs, user: admin}).body), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "CertificateList" || list.APIVersion != "cert-manager.io/v1" || len(list.Items) != 1 || list.Metadata.ResourceVersion != crt.ResourceVersion {
		t.Errorf("list: %+v (resourceVersion want %s)", list, crt.ResourceVersion)
	}
	tableAccept := "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	var tbl kubeapi.Table
	if err := json.Unmarshal([]byte(e.must(200, req{method: "GET", path: certs, user: admin, accept: tableAccept}).body), &tbl); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, fmt.Sprintf("%s/%d", c.Name, c.Priority))
	}
	if got, want := strings.Join(cols, " "), "Name/0 Ready/0 Secret/0 Issuer/1 Status/1 Age/0"; got != want {
		t.Errorf("columns %s, want %s", got, want)
	}
	if len(tbl.Rows) != 1 || fmt.Sprint(tbl.Rows[0].Cells) != "[web <nil> web-tls ss <nil> 90s]" {
		t.Errorf("rows: %+v", tbl.Rows)
	}
	var meta struct {
		Kind     string
		Metadata struct{ Name, Namespace string }
	}
	if err := json.Unmarshal(tbl.Rows[0].Object, &meta); err != nil || meta.Kind != "PartialObjectMetadata" || meta.Metadata.Namespace != "default" {
		t.Errorf("row object: %v %s", err, tbl.Rows[0].Object)
	}
	// Selectors and pages.
	e.must(201, req{method: "POST", path: certs, user: admin, contentType: "application/json",
		body: toJSON(t, strings.Replace(apitest.Certificate("default", "api", "ss", "api.example.com"), "metadata: {", "metadata: {labels: {app: api}, ", 1))})
	items := func(path string) (names []string, cont string) {
		t.Helper()
		var l struct {
			Metadata kubeapi.ListMeta
			Items    []api.Certificate
		}
		if err := json.Unmarshal([]byte(e.must(200, req{method: "GET", path: path, user: admin}).body), &l); err != nil {
			t.Fatal(err)
		}
		for _, c := range l.Items {
			names = append(names, c.Name)
		}
		return names, l.Metadata.Continue
	}
	for _, tt := range []struct{ query, want string }{
		{"labelSelector=app%3Dapi", "[api]"},
		{"fieldSelector=metadata.name%3Dweb", "[web]"},
		{"fieldSelector=metadata.namespace%3Dother", "[]"},
	} {
		if got, _ := items(certs + "?" + tt.query); fmt.Sprint(got) != tt.want {
			t.Errorf("%s: %v, want %s", tt.query, got, tt.want)
		}
	}
	first, cont := items(certs + "?limit=1")
	if len(first) != 1 || cont == "" {
		t.Fatalf("limit=1: %v %q", first, cont)
	}
	if second, next := items(certs + "?limit=1&continue=" + cont); len(second) != 1 || second[0] == first[0] || next != "" {
		t.Errorf("second page: %v %q", second, next)
	}
}

// Errors are Statuses with Kubernetes' reasons; a 403 says the same
// whether the object exists.
func TestStatusErrors(t *testing.T) {
	e := newEnv(t)
	e.seed()
	stale := toJSON(t, strings.Replace(apitest.Certificate("default", "web", "ss", "web.example.com"), "metadata: {", "metadata: {resourceVersion: \"999\", ", 1))
	unknown := strings.Replace(toJSON(t, apitest.Certificate("default", "new", "ss", "new.example.com")), `"secretName"`, `"secretNmae":"x","secretName"`, 1)
	invalid := toJSON(t, apitest.Certificate("default", "bad", "ss", "bad..example.com"))
	tests := []struct {
		name    string
		q       req
		code    int
		reason  string
		message string
	}{
		{"missing", req{method: "GET", path: certs + "/nope", user: admin}, 404, "NotFound", `certificates.cert-manager.io "nope" not found`},
		{"forbidden existing", req{method: "GET", path: certs + "/web", user: alice}, 403, "Forbidden", `certificates.cert-manager.io "web" is forbidden: `},
		{"forbidden missing", req{method: "GET", path: certs + "/nope", user: alice}, 403, "Forbidden", `certificates.cert-manager.io "nope" is forbidden: `},
		{"already exists", req{method: "POST", path: certs, user: admin, contentType: "application/json", body: toJSON(t, apitest.Certificate("default", "web", "ss", "web.example.com"))},
			409, "AlreadyExists", `certificates.cert-manager.io "web" already exists`},
		{"stale put", req{method: "PUT", path: certs + "/web", user: admin, contentType: "application/json", body: stale}, 409, "Conflict",
			`Operation cannot be fulfilled on certificates.cert-manager.io "web": `},
		{"put creates nothing", req{method: "PUT", path: certs + "/new", user: admin, contentType: "application/json",
			body: toJSON(t, apitest.Certificate("default", "new", "ss", "new.example.com"))}, 404, "NotFound", `certificates.cert-manager.io "new" not found`},
		{"unknown field", req{method: "POST", path: certs + "?fieldValidation=Strict", user: admin, contentType: "application/json", body: unknown}, 400, "BadRequest",
			`Certificate in version "v1" cannot be handled as a Certificate: strict decoding error: unknown field "spec.secretNmae"`},
		{"invalid", req{method: "POST", path: certs, user: admin, contentType: "application/json", body: invalid}, 422, "Invalid", `Certificate.cert-manager.io "bad" is invalid: `},
		{"watch", req{method: "GET", path: certs + "?watch=true", user: admin}, 400, "BadRequest", "watch: watching is not supported"},
		{"deletecollection", req{method: "DELETE", path: certs, user: admin}, 400, "BadRequest", "deletecollection"},
		{"json patch", req{method: "PATCH", path: certs + "/web", user: admin, contentType: "application/json-patch+json", body: "[]"}, 400, "BadRequest", "JSON patch"},
		{"server-side apply", req{method: "PATCH", path: certs + "/web?fieldManager=x&force=true", user: admin, contentType: "application/apply-patch+yaml", body: "{}"}, 400, "BadRequest", `"force"`},
		{"server-side apply body", req{method: "PATCH", path: certs + "/web?fieldManager=x", user: admin, contentType: "application/apply-patch+yaml", body: "{}"}, 400, "BadRequest", "server-side apply"},
		{"strategic patch of a custom resource", req{method: "PATCH", path: certs + "/web", user: admin, contentType: "application/strategic-merge-patch+json", body: "{}"}, 415, "UnsupportedMediaType", "merge-patch"},
		{"unknown parameter", req{method: "GET", path: certs + "?labelselector=a", user: admin}, 400, "BadRequest", `"labelselector"`},
		{"warn validation", req{method: "POST", path: certs + "?fieldValidation=Warn", user: admin, contentType: "application/json", body: "{}"}, 400, "BadRequest", "fieldValidation"},
		{"resourceVersion", req{method: "GET", path: certs + "?resourceVersion=5", user: admin}, 400, "BadRequest", "resourceVersion"},
		{"subresource", req{method: "GET", path: certs + "/web/scale", user: admin}, 400, "BadRequest", `subresource "scale"`},
		{"protobuf body", req{method: "POST", path: "/api/v1/namespaces", user: admin, contentType: "application/vnd.kubernetes.protobuf", body: "x"}, 415, "UnsupportedMediaType", "application/json"},
		{"orders are read-only", req{method: "POST", path: "/apis/acme.cert-manager.io/v1/namespaces/default/orders", user: admin, contentType: "application/json", body: "{}"}, 405, "MethodNotAllowed", "verbs: delete, get, list"},
		{"unknown resource", req{method: "GET", path: "/apis/cert-manager.io/v1/widgets", user: admin}, 404, "NotFound", "could not find"},
		{"not acceptable", req{method: "GET", path: certs, user: admin, accept: "application/vnd.kubernetes.protobuf"}, 406, "NotAcceptable", "application/json"},
		{"bad precondition", req{method: "DELETE", path: certs + "/web", user: admin, contentType: "application/json",
			body: `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"resourceVersion":"999"}}`}, 409, "Conflict", "resourceVersion"},
		{"includeObject without a Table", req{method: "GET", path: certs + "?includeObject=None", user: admin}, 400, "BadRequest", "includeObject"},
		{"orphan", req{method: "DELETE", path: certs + "/web?propagationPolicy=Orphan", user: admin}, 400, "BadRequest", "Orphan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(tt.q)
			st := r.status(t)
			if r.code != tt.code || st.Code != tt.code || st.Reason != tt.reason || st.Status != "Failure" || !strings.Contains(st.Message, tt.message) {
				t.Errorf("%d %+v, want %d %s containing %q", r.code, st, tt.code, tt.reason, tt.message)
			}
		})
	}
	// The 403s for an existing and a missing object differ only by name.
	a := strings.ReplaceAll(e.do(tests[1].q).status(t).Message, "web", "X")
	b := strings.ReplaceAll(e.do(tests[2].q).status(t).Message, "nope", "X")
	if a != b {
		t.Errorf("403 messages differ:\n%s\n%s", a, b)
	}
	// 422 names the field.
	st := e.do(tests[7].q).status(t)
	if st.Details == nil || len(st.Details.Causes) == 0 || !strings.HasPrefix(st.Details.Causes[0].Field, "spec.dnsNames") {
		t.Errorf("422 causes: %+v", st.Details)
	}
}

func TestWrites(t *testing.T) {
	e := newEnv(t)
	e.seed()
	get := func() *api.Certificate {
		t.Helper()
		o, err := e.rt.Repo.Get(context.Background(), api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"})
		if err != nil {
			t.Fatal(err)
		}
		return o.(*api.Certificate)
	}
	before := get()
	// Merge patch: labels added, the spec kept.
	e.must(200, req{method: "PATCH", path: certs + "/web", user: admin, contentType: "application/merge-patch+json", body: `{"metadata":{"labels":{"a":"b"}}}`})
	if c := get(); c.Labels["a"] != "b" || c.Spec.SecretName != "web-tls" || c.ResourceVersion == before.ResourceVersion {
		t.Errorf("after merge patch: labels %v secret %s rv %s", c.Labels, c.Spec.SecretName, c.ResourceVersion)
	}
	// null deletes.
	e.must(200, req{method: "PATCH", path: certs + "/web", user: admin, contentType: "application/merge-patch+json", body: `{"metadata":{"labels":{"a":null}}}`})
	if c := get(); len(c.Labels) != 0 {
		t.Errorf("label not removed: %v", c.Labels)
	}
	// A patch naming a stale resourceVersion is a 409, not retried.
	e.must(409, req{method: "PATCH", path: certs + "/web", user: admin, contentType: "application/merge-patch+json",
		body: `{"metadata":{"resourceVersion":"999","labels":{"x":"y"}}}`})
	// dryRun writes nothing.
	rv := get().ResourceVersion
	e.must(200, req{method: "PATCH", path: certs + "/web?dryRun=All", user: admin, contentType: "application/merge-patch+json", body: `{"spec":{"secretName":"other"}}`})
	e.must(201, req{method: "POST", path: certs + "?dryRun=All", user: admin, contentType: "application/json", body: toJSON(t, apitest.Certificate("default", "dry", "ss", "dry.example.com"))})
	e.must(200, req{method: "DELETE", path: certs + "/web?dryRun=All", user: admin})
	if c := get(); c.ResourceVersion != rv || c.Spec.SecretName != "web-tls" {
		t.Errorf("dry runs wrote: rv %s→%s secret %s", rv, c.ResourceVersion, c.Spec.SecretName)
	}
	e.must(404, req{method: "GET", path: certs + "/dry", user: admin})
	// PUT with the current resourceVersion updates.
	c := get()
	c.Spec.SecretName = "web-tls-2"
	b, _ := json.Marshal(c)
	e.must(200, req{method: "PUT", path: certs + "/web", user: admin, contentType: "application/json", body: string(b)})
	if got := get().Spec.SecretName; got != "web-tls-2" {
		t.Errorf("PUT: secretName %s", got)
	}
	// Strategic merge patches of Kubernetes' kinds: directive-free only.
	e.must(201, req{method: "POST", path: "/api/v1/namespaces", user: admin, contentType: "application/json", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}`})
	e.must(200, req{method: "PATCH", path: "/api/v1/namespaces/team", user: admin, contentType: "application/strategic-merge-patch+json", body: `{"metadata":{"labels":{"t":"1"}}}`})
	st := e.must(400, req{method: "PATCH", path: "/api/v1/namespaces/team", user: admin, contentType: "application/strategic-merge-patch+json",
		body: `{"metadata":{"$setElementOrder/finalizers":[]}}`}).status(t)
	if !strings.Contains(st.Message, `"metadata.$setElementOrder/finalizers"`) {
		t.Errorf("directive: %s", st.Message)
	}
	// Delete, then it is gone.
	r := e.must(200, req{method: "DELETE", path: certs + "/web", user: admin, contentType: "application/json", body: `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","propagationPolicy":"Background"}`})
	if st := r.status(t); st.Status != "Success" || st.Details.Name != "web" {
		t.Errorf("delete answer: %+v", st)
	}
	e.must(404, req{method: "GET", path: certs + "/web", user: admin})
}

// alice with a namespaced Role reads her namespace only, and the
// discovery documents whatever her bindings.
func TestTenant(t *testing.T) {
	e := newEnv(t)
	e.seed()
	for _, d := range strings.Split(apitest.Grant("reader", alice, "default", "cert-manager.io", []string{"certificates"}, []string{"get", "list"}), "---\n") {
		var m map[string]any
		_ = yaml.Unmarshal([]byte(d), &m)
		path := "/apis/rbac.authorization.k8s.io/v1/clusterroles"
		if m["kind"] == "RoleBinding" {
			path = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
		}
		e.must(201, req{method: "POST", path: path, user: admin, contentType: "application/json", body: toJSON(t, d)})
	}
	e.must(200, req{method: "GET", path: certs + "/web", user: alice})
	e.must(200, req{method: "GET", path: certs, user: alice})
	e.must(403, req{method: "GET", path: "/apis/cert-manager.io/v1/certificates", user: alice})
	e.must(403, req{method: "DELETE", path: certs + "/web", user: alice})
	e.must(403, req{method: "PATCH", path: certs + "/web", user: alice, contentType: "application/merge-patch+json", body: `{}`})
	e.must(200, req{method: "GET", path: "/apis", user: alice})
	e.must(200, req{method: "GET", path: "/openapi/v3", user: alice})
}

func TestKubeconfig(t *testing.T) {
	b, err := kubeapi.Kubeconfig(kubeapi.KubeconfigOptions{Server: "https://127.0.0.1:8443", CAFile: "/ca.crt", CertFile: "/c.crt", KeyFile: "/c.key", User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"server: https://127.0.0.1:8443", "certificate-authority: /ca.crt", "client-key: /c.key", "current-context: certfn", "user: alice"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("kubeconfig lacks %q:\n%s", want, b)
		}
	}
	for _, tt := range []struct {
		o    kubeapi.KubeconfigOptions
		want string
	}{
		{kubeapi.KubeconfigOptions{CAFile: "a", CertFile: "b", KeyFile: "c"}, "server: required"},
		{kubeapi.KubeconfigOptions{Server: "http://x:1", CAFile: "a", CertFile: "b", KeyFile: "c"}, "want https://"},
		{kubeapi.KubeconfigOptions{Server: "https://x:1", CertFile: "b", KeyFile: "c"}, "certificate-authority: required"},
		{kubeapi.KubeconfigOptions{Server: "https://x:1", CAFile: "a", CertFile: "b"}, "client-key: required"},
	} {
		if _, err := kubeapi.Kubeconfig(tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.o, err, tt.want)
		}
	}
}

func TestHumanDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{90 * time.Second, "90s"}, {200 * time.Second, "3m20s"}, {5 * time.Hour, "5h"}, {50 * time.Hour, "2d2h"}, {30 * 24 * time.Hour, "30d"}} {
		if got := kubeapi.HumanDuration(tt.d); got != tt.want {
			t.Errorf("%v: %s, want %s", tt.d, got, tt.want)
		}
	}
}

// Secrets are listed as summaries (keys, never values) with the API
// server's columns, and are never updated in place.
func TestSecrets(t *testing.T) {
	// Local mode's service reads and writes the secret store; the API
	// tests' role does not.
	role := apitest.Role
	role.ServiceReadsSecrets, role.ServiceWritesSecrets = true, true
	clk := clock.NewFake(apitest.T0)
	a, err := app.Build(app.Ports{Store: memory.NewStore(), Secrets: memory.NewSecrets(), Queue: memory.NewQueue(clk, time.Minute),
		Clock: clk, Logger: apitest.Discard()}, app.Settings{}, role)
	if err != nil {
		t.Fatal(err)
	}
	h, err := kubeapi.New(kubeapi.Config{Service: a.Service, Authenticate: headerAuth, Logger: apitest.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, h: h}
	secrets := "/api/v1/namespaces/default/secrets"
	e.must(201, req{method: "POST", path: secrets, user: admin, contentType: "application/json",
		body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"a":"1","b":"2"}}`})
	r := e.must(200, req{method: "GET", path: secrets, user: admin, accept: "application/json;as=Table;v=v1;g=meta.k8s.io"})
	var tbl kubeapi.Table
	if err := json.Unmarshal([]byte(r.body), &tbl); err != nil {
		t.Fatal(err)
	}
	if len(tbl.Rows) != 1 || fmt.Sprint(tbl.Rows[0].Cells[:3]) != "[s <nil> 2]" {
		t.Errorf("secret rows: %+v", tbl.Rows)
	}
	if got := e.must(200, req{method: "GET", path: secrets + "/s", user: admin}).body; strings.Contains(got, `"stringData"`) || strings.Contains(got, `"data"`) {
		t.Errorf("a secret's values were answered: %s", got)
	}
	e.must(405, req{method: "PATCH", path: secrets + "/s", user: admin, contentType: "application/merge-patch+json", body: `{}`})
	e.must(405, req{method: "PUT", path: secrets + "/s", user: admin, contentType: "application/json", body: `{}`})
	e.must(409, req{method: "POST", path: secrets, user: admin, contentType: "application/json",
		body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"a":"1"}}`})
	e.must(200, req{method: "DELETE", path: secrets + "/s", user: admin})
	e.must(404, req{method: "GET", path: secrets + "/s", user: admin})
}

// kubectl describe asks for an object's Events by involvedObject
// (kind, name, namespace, uid): the uid is the object's current one.
func TestEventsOfAnObject(t *testing.T) {
	e := newEnv(t)
	e.seed()
	key := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}
	if err := e.rt.Kernel.Direct().RecordEvent(context.Background(), key, kernel.Note{Type: "Warning", Reason: "Failed", Message: "boom"}, kernel.EventRepeat); err != nil {
		t.Fatal(err)
	}
	o, err := e.rt.Repo.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	uid := o.GetObjectMeta().UID
	events := func(selector string) string {
		t.Helper()
		var l struct{ Items []api.Event }
		r := e.must(200, req{method: "GET", path: "/api/v1/namespaces/default/events?fieldSelector=" + url.QueryEscape(selector), user: admin})
		if err := json.Unmarshal([]byte(r.body), &l); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ev := range l.Items {
			out = append(out, ev.Reason+":"+ev.InvolvedObject.Name)
		}
		return strings.Join(out, ",")
	}
	for _, tt := range []struct{ selector, want string }{
		{"involvedObject.name=web,involvedObject.namespace=default,involvedObject.kind=Certificate,involvedObject.uid=" + uid, "Failed:web"},
		{"involvedObject.name=web,involvedObject.uid=not-the-uid", ""},
		{"involvedObject.kind!=Certificate", ""},
		{"involvedObject.name=other", ""},
		{"metadata.namespace=default,involvedObject.kind=Certificate", "Failed:web"},
	} {
		if got := events(tt.selector); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.selector, got, tt.want)
		}
	}
	e.must(400, req{method: "GET", path: "/api/v1/namespaces/default/events?fieldSelector=involvedObject.fieldPath%3Dx", user: admin})
}
