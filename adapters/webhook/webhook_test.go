package webhook_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/certfn/certfn/adapters/aws/ebnotify"
	"github.com/certfn/certfn/adapters/webhook"
	"github.com/certfn/certfn/adapters/webhook/webhooktest"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
)

var t0 = time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC)

func newNotifier(t *testing.T, url string, mod func(*webhook.Options)) *webhook.Notifier {
	t.Helper()
	o := webhook.Options{URL: url, Secrets: [][]byte{webhooktest.Key}, Deployment: "pki", Clock: clock.NewFake(t0)}
	if mod != nil {
		mod(&o)
	}
	n, err := webhook.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The contract, through a real receiver that verifies every signature
// with the Standard Webhooks library.
func TestNotifierContract(t *testing.T) {
	porttest.NotifierSuite(t, func(t *testing.T) porttest.NotifierHarness {
		r := webhooktest.New(t)
		return porttest.NotifierHarness{Notifier: newNotifier(t, r.URL, nil),
			Delivered: func(t *testing.T, _ int) []ports.Notification { return r.Accepted() }}
	})
}

// One delivery: the Standard Webhooks headers, a body whose data is the
// EventBridge detail byte for byte, a webhook-id that stays the same for
// every attempt while the timestamp follows the clock, and one signature
// per secret (rotation), each verified by the Standard Webhooks library
// with the secret in its serialized form.
func TestDelivery(t *testing.T) {
	var got []*http.Request
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, r.ContentLength)
		_, _ = r.Body.Read(b)
		got, bodies = append(got, r), append(bodies, b)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	old := []byte("an-older-signing-key-still-accepted")
	clk := clock.NewFake(t0)
	n := newNotifier(t, srv.URL+"/hooks/certfn?token=abc", func(o *webhook.Options) { o.Secrets = [][]byte{webhooktest.Key, old}; o.Clock = clk })
	note := porttest.FullNotification(ports.NotificationFailed, "prod", "shop")
	for i := 0; i < 2; i++ {
		if err := n.Notify(context.Background(), note); err != nil {
			t.Fatal(err)
		}
		clk.Advance(90 * time.Second)
	}
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2", len(got))
	}
	for i, r := range got {
		if r.Method != "POST" || r.URL.Path != "/hooks/certfn" || r.URL.Query().Get("token") != "abc" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("request %d: %s %s %s", i, r.Method, r.URL, r.Header.Get("Content-Type"))
		}
		if id := r.Header.Get("webhook-id"); id != webhook.MessageID("pki", note) || !strings.HasPrefix(id, "msg_") || strings.Contains(id, ".") {
			t.Errorf("request %d: webhook-id %q, want %q for every attempt", i, id, webhook.MessageID("pki", note))
		}
		if ts := r.Header.Get("webhook-timestamp"); ts != itoa(t0.Unix()+int64(90*i)) {
			t.Errorf("request %d: webhook-timestamp %q, want the attempt's clock", i, ts)
		}
		if sigs := strings.Fields(r.Header.Get("webhook-signature")); len(sigs) != 2 || !strings.HasPrefix(sigs[0], "v1,") || !strings.HasPrefix(sigs[1], "v1,") {
			t.Errorf("request %d: webhook-signature %q, want two v1 signatures", i, r.Header.Get("webhook-signature"))
		}
		for _, key := range [][]byte{webhooktest.Key, old} {
			wh, err := standardwebhooks.NewWebhook(webhook.SecretPrefix + base64.StdEncoding.EncodeToString(key))
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.VerifyIgnoringTimestamp(bodies[i], r.Header); err != nil {
				t.Errorf("request %d: the Standard Webhooks library refuses the signature of key %q: %v", i, key, err)
			}
			tampered := append([]byte(nil), bodies[i]...)
			tampered[len(tampered)-2] = ' '
			if wh.VerifyIgnoringTimestamp(tampered, r.Header) == nil {
				t.Errorf("request %d: a tampered body verifies", i)
			}
		}
	}
	var p struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(bodies[0], &p); err != nil {
		t.Fatal(err)
	}
	detail, _ := json.Marshal(ebnotify.NewDetail("pki", note))
	if p.Type != "certificate.failed" || p.Timestamp != "2030-03-04T05:06:07Z" || string(p.Data) != string(detail) {
		t.Errorf("body %s; want type certificate.failed, the event's time and the EventBridge detail %s", bodies[0], detail)
	}
	back, err := webhook.ParseBody(bodies[0])
	if err != nil || back.ID() != note.ID() || back.Reason != "Denied" {
		t.Errorf("ParseBody = %v, %v", back, err)
	}
	if webhook.MessageID("other", note) == webhook.MessageID("pki", note) {
		t.Error("two deployments share a webhook-id for the same event")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Each answer is classified as Standard Webhooks suggests: 2xx success;
// redirects not followed and permanent; 410 and other 4xx permanent; 408,
// 425, 429 and 5xx transient, with Retry-After as the suggested delay.
func TestAnswersAreClassified(t *testing.T) {
	followed := false
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { followed = true }))
	defer target.Close()
	for _, tc := range []struct {
		status     int
		retryAfter string
		ok         bool
		permanent  bool
		delay      time.Duration // suggested; 0: none
	}{
		{status: 200, ok: true},
		{status: 202, ok: true},
		{status: 204, ok: true},
		{status: 301, permanent: true},
		{status: 307, permanent: true},
		{status: 400, permanent: true},
		{status: 401, permanent: true},
		{status: 404, permanent: true},
		{status: 410, permanent: true},
		{status: 413, permanent: true},
		{status: 408},
		{status: 425},
		{status: 429, retryAfter: "120", delay: 2 * time.Minute},
		{status: 500},
		{status: 502},
		{status: 503, retryAfter: t0.Add(30 * time.Second).Format(http.TimeFormat), delay: 30 * time.Second},
		{status: 503, retryAfter: "86400", delay: webhook.MaxRetryAfter},
		{status: 504, retryAfter: "soon"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if tc.status >= 300 && tc.status < 400 {
				w.Header().Set("Location", target.URL)
			}
			if tc.retryAfter != "" {
				w.Header().Set("Retry-After", tc.retryAfter)
			}
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte("answer\nof the receiver"))
		}))
		err := newNotifier(t, srv.URL, nil).Notify(context.Background(), porttest.FullNotification(ports.NotificationRenewed, "prod", "shop"))
		srv.Close()
		if tc.ok {
			if err != nil {
				t.Errorf("%d: Notify = %v, want success", tc.status, err)
			}
			continue
		}
		d, hasDelay := errs.SuggestedDelay(err)
		if err == nil || errs.IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), itoa(int64(tc.status))) ||
			!strings.Contains(err.Error(), "Renewed Certificate/prod/shop") || !strings.Contains(err.Error(), "answer of the receiver") ||
			(tc.delay != 0) != hasDelay || d != tc.delay {
			t.Errorf("%d %s: Notify = %v (delay %v %v); want an error naming the status, event and answer, permanent %v, delay %v",
				tc.status, tc.retryAfter, err, d, hasDelay, tc.permanent, tc.delay)
		}
	}
	if followed {
		t.Error("a redirect was followed")
	}
}

// Network errors and timeouts are transient; no error names more of the
// URL than scheme and host (a path or query may hold a token), nor a
// secret.
func TestNetworkErrorsAndRedaction(t *testing.T) {
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }))
	defer slow.Close()
	defer close(hang)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for name, url := range map[string]string{"timeout": slow.URL, "refused": closed.URL} {
		n := newNotifier(t, url+"/T0K3N/path?sig=S3CR3T", func(o *webhook.Options) { o.Timeout = 200 * time.Millisecond })
		err := n.Notify(context.Background(), porttest.FullNotification(ports.NotificationIssued, "prod", "shop"))
		if err == nil || errs.IsPermanent(err) {
			t.Errorf("%s: Notify = %v, want a transient error", name, err)
			continue
		}
		for _, leak := range []string{"T0K3N", "S3CR3T", string(webhooktest.Key), base64.StdEncoding.EncodeToString(webhooktest.Key)} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("%s: the error %q holds %q", name, err, leak)
			}
		}
		if !strings.Contains(err.Error(), n.Target()) {
			t.Errorf("%s: the error %q does not name the receiver %s", name, err, n.Target())
		}
	}
}

func TestNew(t *testing.T) {
	good := webhook.Options{URL: "https://hooks.example.com/certfn", Secrets: [][]byte{webhooktest.Key}, Deployment: "pki"}
	for _, tc := range []struct {
		name string
		edit func(*webhook.Options)
		says string
	}{
		{"no URL", func(o *webhook.Options) { o.URL = "" }, "url"},
		{"relative URL", func(o *webhook.Options) { o.URL = "/hooks" }, "absolute"},
		{"plain http to another host", func(o *webhook.Options) { o.URL = "http://hooks.example.com/x" }, "loopback"},
		{"other scheme", func(o *webhook.Options) { o.URL = "ftp://hooks.example.com/x" }, "scheme"},
		{"no secret", func(o *webhook.Options) { o.Secrets = nil }, "secret"},
		{"short secret", func(o *webhook.Options) { o.Secrets = [][]byte{[]byte("short")} }, "secrets[0]: 5 bytes"},
		{"no deployment", func(o *webhook.Options) { o.Deployment = "" }, "deployment"},
		{"negative timeout", func(o *webhook.Options) { o.Timeout = -1 }, "timeout"},
	} {
		o := good
		tc.edit(&o)
		if _, err := webhook.New(o); !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: New = %v, want a permanent error naming %s", tc.name, err, tc.says)
		}
	}
	for _, u := range []string{"http://127.0.0.1:8080/x", "http://localhost/x", "http://[::1]:9/x", "https://hooks.example.com/x?token=1"} {
		o := good
		o.URL = u
		if _, err := webhook.New(o); err != nil {
			t.Errorf("New(%s) = %v", u, err)
		}
	}
}

func TestParseSecrets(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	keys, err := webhook.ParseSecrets("# current\n" + webhooktest.Secret + "\n\n  " + b64([]byte("an-older-signing-key-still-accepted")) + "  \n")
	if err != nil || len(keys) != 2 || string(keys[0]) != string(webhooktest.Key) || string(keys[1]) != "an-older-signing-key-still-accepted" {
		t.Fatalf("ParseSecrets = %q, %v", keys, err)
	}
	for _, tc := range []struct{ text, says string }{
		{"", "no signing secret"},
		{"# only a comment\n", "no signing secret"},
		{webhooktest.Secret + "\nwhsec_not*base64", "line 2: not a signing secret"},
		{"whsec_" + b64([]byte("too short")), "line 1: a key of 9 bytes"},
		{"whsec_" + b64(make([]byte, 65)), "line 1: a key of 65 bytes"},
	} {
		_, err := webhook.ParseSecrets(tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ParseSecrets(%q) = %v, want %q", tc.text, err, tc.says)
		}
		if err != nil && strings.Contains(err.Error(), "not*base64") {
			t.Errorf("the error %q quotes the secret", err)
		}
	}
}
