package awsmode_test

import (
	"strings"
	"testing"

	"github.com/certfn/certfn/adapters/httpapi/apitest"
)

// The API's Kubernetes parameters through the api function's Function URL
// handler, events as Lambda delivers them (apitest.Semantics): the query
// string arrives as rawQueryString, a DELETE's options in the body.
func TestFunctionURLKubernetesParameters(t *testing.T) {
	e := newFnEnv(t)
	apitest.Semantics(t, "default", func(t *testing.T, method, path, ct, body string) (int, string) {
		p, q, _ := strings.Cut(path, "?")
		resp := e.invoke(req{method: method, path: p, query: q, ctype: ct, body: body, arn: adminRole})
		return resp.StatusCode, resp.Body
	})
}
