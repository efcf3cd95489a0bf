package httpapi_test

import (
	"net/http"
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
