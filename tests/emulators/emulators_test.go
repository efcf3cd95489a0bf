package emulators

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The environment's endpoints win over starting anything: the per-service
// variable first, then AWS_ENDPOINT_URL.
func TestExternal(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		svc     Service
		want    string
		wantSet bool
	}{
		{"nothing set", nil, DynamoDB, "", false},
		{"global", map[string]string{"AWS_ENDPOINT_URL": "http://localhost:4566"}, SQS, "http://localhost:4566", true},
		{"per service wins", map[string]string{"AWS_ENDPOINT_URL": "http://g", "AWS_ENDPOINT_URL_DYNAMODB": "http://d"}, DynamoDB, "http://d", true},
		{"other service's variable ignored", map[string]string{"AWS_ENDPOINT_URL_SQS": "http://q"}, SecretsManager, "", false},
		{"blank is unset", map[string]string{"AWS_ENDPOINT_URL": "  "}, SQS, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_SECRETS_MANAGER"} {
				t.Setenv(v, tc.env[v])
			}
			got, ok := External(tc.svc)
			if got != tc.want || ok != tc.wantSet {
				t.Errorf("External(%s) = %q, %v; want %q, %v", tc.svc, got, ok, tc.want, tc.wantSet)
			}
		})
	}
}

// A missing installation tells a person to run make, and CI that its build
// is broken.
func TestMissingMessage(t *testing.T) {
	t.Setenv("CI", "")
	if m := missingMessage(context.DeadlineExceeded); !strings.Contains(m, "run `make emulators`") {
		t.Errorf("local message %q does not say to run make emulators", m)
	}
	t.Setenv("CI", "true")
	if m := missingMessage(context.DeadlineExceeded); !strings.Contains(m, "missing in CI") {
		t.Errorf("CI message %q does not say the CI setup is broken", m)
	}
}

// Each emulator starts on a loopback port, answers, and is gone after stop.
func TestStartStop(t *testing.T) {
	if err := Installed(); err != nil {
		t.Fatal(missingMessage(err))
	}
	targets := map[string]string{"dynamodb": "DynamoDB_20120810.ListTables", "sqs": "AmazonSQS.ListQueues"}
	for arg, target := range targets {
		t.Run(arg, func(t *testing.T) {
			ep, stop, err := Start(arg)
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(ep)
			if err != nil || u.Hostname() != "127.0.0.1" || u.Port() == "" {
				t.Fatalf("endpoint %q: want http://127.0.0.1:PORT", ep)
			}
			req, err := http.NewRequest(http.MethodPost, ep, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-amz-json-1.0")
			req.Header.Set("X-Amz-Target", target)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("emulator not answering: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Errorf("%s answered %s", target, resp.Status)
			}
			stop()
			stop() // idempotent
			if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
				c.Close()
				t.Errorf("%s still listening after stop", ep)
			}
		})
	}
	if _, _, err := Start("bogus"); err == nil || !strings.Contains(err.Error(), "unknown service") {
		t.Errorf("Start(bogus): %v, want the launcher's unknown-service error", err)
	}
}

// Endpoint uses the external endpoint without starting anything.
func TestEndpointExternal(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	if got := Endpoint(t, SQS); got != "http://127.0.0.1:1" {
		t.Errorf("Endpoint = %q", got)
	}
}
