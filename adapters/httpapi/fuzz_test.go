package httpapi_test

import (
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/certfn/certfn/adapters/httpapi/apitest"
)

// Whatever the body, apply answers a JSON error or success, never a 5xx.
func FuzzApplyBody(f *testing.F) {
	for _, s := range []string{apitest.Issuer("default", "ss"), apitest.Certificate("default", "web", "ss", "web.example.com"),
		`{"apiVersion":"cert-manager.io/v1","kind":"Certificate"}`, `[{"kind":"List","items":[]}]`, "---\n---\n", "kind: [", "\x00\xff"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	e := newEnv(f, 4<<10)
	f.Fuzz(func(t *testing.T, body string, yaml bool) {
		e.t = t
		ct := "application/json"
		if yaml {
			ct = "application/yaml"
		}
		r := e.do(http.MethodPost, "/v1/apply", admin, ct, body)
		switch r.code {
		case 200, 400, 413, 422:
		default:
			t.Fatalf("%d %s for %q", r.code, r.body, body)
		}
		if r.code != 200 && !strings.Contains(r.body, `"error":`) {
			t.Fatalf("error without a message: %s", r.body)
		}
	})
}

// Whatever the body and the names in the path, the approval and the
// per-object routes answer a JSON error or success, never a 5xx: a name
// that is not a valid object name (escaped slashes, control characters,
// thousands of bytes) is the caller's mistake.
func FuzzApprovalAndObjectPaths(f *testing.F) {
	for _, s := range []struct{ ns, name, body string }{
		{"default", "req", `{"approve": true}`},
		{"default", "req", `{"approve": false, "reason": "no", "message": "denied"}`},
		{"default", "missing", `{"approve": true}`},
		{"default", "req", `{"approve": "yes"}`},
		{"default", "req", `{"approve": true, "extra": 1}`},
		{"default", "req", `{} {}`},
		{"a%2Fb", "c%2Fd", `{"approve": true}`},
		{"default", "%00", "\x00\xff"},
		{"default", strings.Repeat("x", 3000), `{"approve": true}`},
		{"..", ".", `null`},
	} {
		f.Add(s.ns, s.name, s.body)
	}
	e := newEnv(f, 4<<10)
	f.Fuzz(func(t *testing.T, ns, name, body string) {
		e.t = t
		ns, name = url.PathEscape(ns), url.PathEscape(name)
		for _, rq := range []struct{ method, path, body string }{
			{http.MethodPost, "/v1/namespaces/" + ns + "/certificaterequests/" + name + "/approval", body},
			{http.MethodPost, "/v1/namespaces/" + ns + "/certificates/" + name + "/renew", ""},
			{http.MethodGet, "/v1/namespaces/" + ns + "/certificates/" + name + "/status", ""},
			{http.MethodGet, "/v1/namespaces/" + ns + "/certificates/" + name, ""},
			{http.MethodDelete, "/v1/namespaces/" + ns + "/certificaterequests/" + name, ""},
		} {
			if _, err := url.ParseRequestURI(rq.path); err != nil {
				return // not a request a client can send
			}
			if u, _ := url.Parse(rq.path); path.Clean(u.Path) != u.Path {
				return // "." and ".." segments: net/http redirects to the clean path (301) before certfn sees it
			}
			r := e.do(rq.method, rq.path, admin, "application/json", rq.body)
			if r.code >= 500 {
				t.Fatalf("%s %s %q: %d %s", rq.method, rq.path, rq.body, r.code, r.body)
			}
			if r.code >= 300 && !strings.Contains(r.body, `"error":`) {
				t.Fatalf("%s %s: error without a message: %s", rq.method, rq.path, r.body)
			}
		}
	})
}
