package pubsubq

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// pushBody is a push request as Pub/Sub sends it (both spellings of the
// message fields, as the service does).
func pushBody(data string, attrs string, attempt string) string {
	b := `{"message":{"attributes":` + attrs + `,"data":"` + data + `","messageId":"2070443601311540","message_id":"2070443601311540",` +
		`"publishTime":"2026-11-25T10:00:00.123Z","publish_time":"2026-11-25T10:00:00.123Z"},` +
		`"subscription":"projects/demo-certfn/subscriptions/worker"`
	if attempt != "" {
		b += `,"deliveryAttempt":` + attempt
	}
	return b + "}"
}

func TestDecodePush(t *testing.T) {
	web := b64("Certificate/default/web")
	format := `{"certfn-format":"1"}`
	tests := []struct {
		name        string
		method      string
		body        string
		max         int64
		wantKey     api.Key
		wantAttempt int
		err         string
	}{
		{"push", "", pushBody(web, format, "3"), 0, cert("default", "web"), 3, ""},
		{"no deliveryAttempt", "", pushBody(web, format, ""), 0, cert("default", "web"), 1, ""},
		{"deliveryAttempt 0 (emulator)", "", pushBody(web, format, "0"), 0, cert("default", "web"), 1, ""},
		{"no attributes", "", pushBody(web, "null", "1"), 0, cert("default", "web"), 1, ""},
		{"other attributes", "", pushBody(b64("ClusterIssuer/ca"), `{"googclient_schemaencoding":"JSON","x":"y"}`, "1"), 0,
			api.Key{Kind: api.KindClusterIssuer, Name: "ca"}, 1, ""},
		{"minimal", "", `{"message":{"data":"` + web + `"}}`, 0, cert("default", "web"), 1, ""},
		{"trailing newline in data", "", pushBody(b64("Certificate/default/web\n"), format, "1"), 0, cert("default", "web"), 1, ""},

		{"GET", http.MethodGet, "", 0, api.Key{}, 0, "push: method GET: want POST"},
		{"too large", "", pushBody(web, `{"pad":"`+strings.Repeat("x", 200)+`"}`, "1"), 128, api.Key{}, 0, "push: body: larger than 128 bytes"},
		{"empty body", "", "", 0, api.Key{}, 0, "push: body: malformed JSON"},
		{"not JSON", "", "Certificate/default/web", 0, api.Key{}, 0, "push: body: malformed JSON"},
		{"truncated", "", pushBody(web, format, "1")[:40], 0, api.Key{}, 0, "push: body: malformed JSON"},
		{"two objects", "", pushBody(web, format, "1") + "{}", 0, api.Key{}, 0, "push: body: malformed JSON: data after the object"},
		{"array", "", "[]", 0, api.Key{}, 0, "push: body: malformed JSON"},
		{"attribute not a string", "", pushBody(web, `{"certfn-format":1}`, "1"), 0, api.Key{}, 0, "push: body: malformed JSON"},
		{"no message", "", `{"subscription":"projects/p/subscriptions/s"}`, 0, api.Key{}, 0, "push: message: missing"},
		{"message null", "", `{"message":null}`, 0, api.Key{}, 0, "push: message: missing"},
		{"no data", "", `{"message":{"attributes":{"certfn-format":"1"}}}`, 0, api.Key{}, 0, "push: message.data: missing"},
		{"data not base64", "", pushBody("Certificate/default/web", format, "1"), 0, api.Key{}, 0, "push: message.data: not base64"},
		{"data URL-safe base64", "", pushBody(base64.URLEncoding.EncodeToString([]byte("Certificate/default/web?>")), format, "1"), 0, api.Key{}, 0, "push: message.data: not base64"},
		{"data not a key", "", pushBody(b64("hello"), format, "1"), 0, api.Key{}, 0, "push: message.data: not a reconcile key"},
		{"unknown kind", "", pushBody(b64("Pod/default/web"), format, "1"), 0, api.Key{}, 0, `push: message.data: not a reconcile key: key "Pod/default/web": unknown kind "Pod"`},
		{"JSON data", "", pushBody(b64(`{"key":"Certificate/default/web"}`), format, "1"), 0, api.Key{}, 0, "push: message.data: not a reconcile key"},
		{"future format", "", pushBody(web, `{"certfn-format":"2"}`, "1"), 0, api.Key{}, 0, `push: message.attributes.certfn-format: format "2" is not supported`},
		{"negative attempt", "", pushBody(web, format, "-1"), 0, api.Key{}, 0, "push: deliveryAttempt: must be >= 0, got -1"},
		{"attempt not a number", "", pushBody(web, format, `"3"`), 0, api.Key{}, 0, "push: body: malformed JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			r := httptest.NewRequest(method, "/push", strings.NewReader(tc.body))
			key, attempt, err := DecodePush(r, tc.max)
			if tc.err == "" {
				if err != nil || key != tc.wantKey || attempt != tc.wantAttempt {
					t.Errorf("DecodePush = %v, %d, %v; want %v, %d", key, attempt, err, tc.wantKey, tc.wantAttempt)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("DecodePush error %v, want one containing %q", err, tc.err)
			}
			if !errs.IsPermanent(err) {
				t.Errorf("error %v is not permanent", err)
			}
			if !key.IsZero() || attempt != 0 {
				t.Errorf("DecodePush returned %v, %d with an error", key, attempt)
			}
		})
	}
}

// An oversized body is an *http.MaxBytesError (413 for a non-Pub/Sub
// caller); a broken connection is not permanent.
func TestDecodePushBodyErrors(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/push", strings.NewReader(strings.Repeat("x", DefaultMaxPushBody+1)))
	_, _, err := DecodePush(r, 0)
	var tooLarge *http.MaxBytesError
	if !errors.As(err, &tooLarge) || !errs.IsPermanent(err) {
		t.Errorf("oversized body with the default limit: %v", err)
	}
	r = httptest.NewRequest(http.MethodPost, "/push", iotest.ErrReader(errors.New("connection reset")))
	if _, _, err := DecodePush(r, 0); err == nil || errs.IsPermanent(err) || !strings.Contains(err.Error(), "push: body: read: connection reset") {
		t.Errorf("broken body: %v, want a transient error", err)
	}
	p, err := ReadPush(httptest.NewRequest(http.MethodPost, "/push", strings.NewReader(pushBody(b64("Certificate/default/web"), "{}", "2"))), 0)
	if err != nil || p.MessageID != "2070443601311540" || p.PublishTime != "2026-11-25T10:00:00.123Z" ||
		p.Subscription != "projects/demo-certfn/subscriptions/worker" || p.Attempt != 2 {
		t.Errorf("ReadPush = %+v, %v", p, err)
	}
}

// What the queue publishes, DecodeData reads back; the REST body a task
// sends carries the same message.
func TestDecodeDataRoundTrip(t *testing.T) {
	for _, k := range []api.Key{cert("default", "web"), {Kind: api.KindClusterIssuer, Name: "ca"}, {Kind: api.KindChallenge, Namespace: "x", Name: "web-1-2-3"}} {
		got, err := DecodeData([]byte(k.String()), formatAttrs())
		if err != nil || got != k {
			t.Errorf("DecodeData(%s) = %v, %v", k, got, err)
		}
		body := string(PublishBody(k))
		if want := `{"messages":[{"data":"` + b64(k.String()) + `","attributes":{"certfn-format":"1"}}]}`; body != want {
			t.Errorf("PublishBody(%s) = %s, want %s", k, body, want)
		}
	}
}

// Whatever the body, ParsePush returns a key that round-trips and an
// attempt >= 1, or a permanent error naming a field; it never panics.
func FuzzParsePush(f *testing.F) {
	web := b64("Certificate/default/web")
	for _, s := range []string{
		pushBody(web, `{"certfn-format":"1"}`, "3"),
		pushBody(web, "null", ""),
		pushBody(b64("ClusterIssuer/ca"), `{"certfn-format":"2"}`, "1"),
		pushBody(b64("Order/a/web-1-123"), `{}`, "-1"),
		pushBody("not base64!", `{}`, "1"),
		pushBody(b64("Pod/x/y"), `{}`, "1"),
		`{"message":{"data":"` + web + `"}}`,
		`{"message":{}}`, `{"message":null}`, `{}`, `[]`, `null`, "", "\x00\xff", `{"message":{"data":"` + web + `"}}{}`,
		`{"message":{"data":"` + b64(strings.Repeat("a/", 300)) + `"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := ParsePush(body)
		if err != nil {
			if !errs.IsPermanent(err) || !strings.HasPrefix(err.Error(), "push: ") {
				t.Fatalf("error %q: not permanent or not naming the push", err)
			}
			return
		}
		back, err := api.ParseKey(p.Key.String())
		if err != nil || back != p.Key {
			t.Fatalf("key %v does not round-trip: %v, %v", p.Key, back, err)
		}
		if p.Attempt < 1 {
			t.Fatalf("attempt %d", p.Attempt)
		}
		// The same body through DecodePush gives the same answer.
		k, attempt, err := DecodePush(httptest.NewRequest(http.MethodPost, "/push", strings.NewReader(string(body))), int64(len(body))+1)
		if err != nil || k != p.Key || attempt != p.Attempt {
			t.Fatalf("DecodePush = %v, %d, %v; ParsePush %v, %d", k, attempt, err, p.Key, p.Attempt)
		}
	})
}
