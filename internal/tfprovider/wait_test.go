package tfprovider

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/apiclient"
)

func TestMet(t *testing.T) {
	cond := func(typ, status string, gen int64) api.Condition {
		return api.Condition{Type: typ, Status: api.ConditionStatus(status), Reason: "R", Message: "m", ObservedGeneration: gen}
	}
	obj := func(gen int64, conds ...api.Condition) statusOf {
		var o statusOf
		o.Metadata.Generation, o.Status.Conditions = gen, conds
		return o
	}
	for _, tc := range []struct {
		name, kind string
		o          statusOf
		ok         bool
		why        string
	}{
		{"ready", "Certificate", obj(2, cond("Ready", "True", 2)), true, ""},
		{"no condition", "Certificate", obj(1), false, "no Ready condition yet"},
		{"old generation", "Certificate", obj(3, cond("Ready", "True", 2)), false, "is for generation 2, not the applied 3 yet"},
		{"not ready", "Certificate", obj(1, cond("Ready", "False", 1)), false, "Ready=False (R): m"},
		{"re-issuing", "Certificate", obj(2, cond("Ready", "True", 2), cond("Issuing", "True", 2)), false, "Issuing (R): m"},
		{"issuer issuing is no matter", "Issuer", obj(1, cond("Ready", "True", 0), cond("Issuing", "True", 0)), true, ""},
	} {
		ok, why := met(tc.kind, "Ready", tc.o)
		if ok != tc.ok || !strings.Contains(why, tc.why) {
			t.Errorf("%s: %v %q, want %v %q", tc.name, ok, why, tc.ok, tc.why)
		}
	}
}

// fakeAPI answers GET of one Certificate (never ready) and its status.
func fakeAPI(t *testing.T, rep app.Report) (*apiclient.Client, *atomic.Int32) {
	var statusCalls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/namespaces/default/certificates/web":
			_, _ = w.Write([]byte(`{"metadata":{"generation":1},"status":{"conditions":[{"type":"Ready","status":"False","reason":"Pending","message":"waiting","observedGeneration":1}]}}`))
		case "/v1/namespaces/default/certificates/web/status":
			statusCalls.Add(1)
			_ = json.NewEncoder(w).Encode(rep)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := apiclient.New(context.Background(), apiclient.Options{Server: srv.URL, Auth: apiclient.AuthNone})
	if err != nil {
		t.Fatal(err)
	}
	return c, &statusCalls
}

var webID = identity{Kind: api.KindCertificate, Namespace: "default", Name: "web", Namespaced: true}

// A permanent blocker in certfn's explanation ends the wait at once.
func TestWaitStopsOnPermanentBlocker(t *testing.T) {
	c, calls := fakeAPI(t, app.Report{Summary: `Not ready: the request web-1 was denied: no policy allows "evil.example.com"`, Permanent: true,
		Certificate: &api.Certificate{}})
	r := &manifestResource{data: &providerData{opts: Options{PollInterval: 10 * time.Millisecond}}}
	err := r.wait(context.Background(), c, webID, &waitModel{Timeout: types.StringValue("1m")})
	if err == nil || !strings.Contains(err.Error(), `Certificate/default/web will not become Ready without a change: Not ready: the request web-1 was denied`) {
		t.Fatalf("wait: %v", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("%d status calls, want 1: the first explanation ends the wait", calls.Load())
	}
}

// A timeout names the last blocker certfn explained.
func TestWaitTimeoutNamesBlocker(t *testing.T) {
	c, _ := fakeAPI(t, app.Report{Summary: `Not ready: issuer "le" is not ready: ACME account not registered`, Certificate: &api.Certificate{}})
	r := &manifestResource{data: &providerData{opts: Options{PollInterval: 10 * time.Millisecond}}}
	err := r.wait(context.Background(), c, webID, &waitModel{Timeout: types.StringValue("300ms")})
	if err == nil || !strings.Contains(err.Error(), `timed out after 300ms waiting for Ready=True; what blocks it: Not ready: issuer "le" is not ready`) {
		t.Fatalf("wait: %v", err)
	}
}
