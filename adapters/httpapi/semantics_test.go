package httpapi_test

import (
	"testing"

	"github.com/certfn/certfn/adapters/httpapi/apitest"
)

// The API's Kubernetes parameters, in process: see apitest.Semantics.
func TestKubernetesParameters(t *testing.T) {
	e := newEnv(t, 0)
	apitest.Semantics(t, "default", func(t *testing.T, method, path, ct, body string) (int, string) {
		r := e.do(method, path, admin, ct, body)
		return r.code, r.body
	})
}
