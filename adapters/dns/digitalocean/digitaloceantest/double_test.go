package digitaloceantest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

type reply struct {
	status  int
	header  http.Header
	body    map[string]json.RawMessage
	errID   string
	records []Record
}

// call makes one request with token tok ("" for none) and decodes the
// answer.
func call(t *testing.T, d *Double, tok, method, path string, body any) reply {
	t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(d.URL, "/")+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out := reply{status: res.StatusCode, header: res.Header}
	if res.StatusCode == http.StatusNoContent {
		return out
	}
	if err := json.NewDecoder(res.Body).Decode(&out.body); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if raw, ok := out.body["id"]; ok {
		_ = json.Unmarshal(raw, &out.errID)
	}
	if raw, ok := out.body["domain_records"]; ok {
		var recs []struct {
			ID               int
			Type, Name, Data string
			TTL              int
		}
		if err := json.Unmarshal(raw, &recs); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			out.records = append(out.records, Record{ID: r.ID, Type: r.Type, Name: r.Name, Data: r.Data, TTL: r.TTL})
		}
	}
	return out
}

// next returns links.pages.next ("" when absent).
func (r reply) next(t *testing.T) string {
	var links struct {
		Pages struct{ Next string } `json:"pages"`
	}
	if raw, ok := r.body["links"]; ok {
		if err := json.Unmarshal(raw, &links); err != nil {
			t.Fatal(err)
		}
	}
	return links.Pages.Next
}

func newDouble(t *testing.T) *Double {
	d := New(t)
	d.AddToken("tok", "admin")
	d.AddDomain("example.com")
	return d
}

// Authentication and the rate-limit headers every answer carries.
func TestAuthentication(t *testing.T) {
	d := newDouble(t)
	d.AddToken("scoped", "scoped")
	d.Deny("scoped")
	for _, tc := range []struct {
		tok    string
		status int
		id     string
	}{{"tok", 200, ""}, {"", 401, "Unauthorized"}, {"nope", 401, "Unauthorized"}, {"scoped", 403, "Forbidden"}} {
		r := call(t, d, tc.tok, "GET", "/v2/domains", nil)
		if r.status != tc.status || r.errID != tc.id {
			t.Errorf("token %q: %d %q, want %d %q", tc.tok, r.status, r.errID, tc.status, tc.id)
		}
		if r.header.Get("ratelimit-limit") != "5000" || r.header.Get("ratelimit-remaining") == "" || r.header.Get("ratelimit-reset") == "" {
			t.Errorf("rate-limit headers missing: %v", r.header)
		}
	}
}

// Records: create (relative, apex and fully qualified names), validation,
// list by type and name over pages following links.pages.next, delete
// and unknown IDs, OnTXT.
func TestRecords(t *testing.T) {
	d := newDouble(t)
	d.PageSize = 2
	var updates []TXTUpdate
	d.OnTXT = func(u TXTUpdate) { updates = append(updates, u) }
	base := "/v2/domains/example.com/records"
	for _, name := range []string{"_acme-challenge", "_acme-challenge.example.com.", "_ACME-challenge", "@"} {
		r := call(t, d, "tok", "POST", base, map[string]any{"type": "TXT", "name": name, "data": "v-" + name, "ttl": 60})
		if r.status != 201 {
			t.Fatalf("create %s: %d %s", name, r.status, r.errID)
		}
	}
	for _, bad := range []map[string]any{
		{"type": "TXT", "name": "x", "data": "v", "ttl": 10},
		{"type": "TXT", "name": "x", "data": strings.Repeat("L", 513), "ttl": 60},
		{"type": "TXT", "name": "x.example.org.", "data": "v", "ttl": 60},
		{"type": "TXT", "name": "x", "data": "", "ttl": 60},
	} {
		if r := call(t, d, "tok", "POST", base, bad); r.status != 422 || r.errID != "unprocessable_entity" {
			t.Errorf("create %v: %d %q, want 422 unprocessable_entity", bad, r.status, r.errID)
		}
	}
	var got []Record
	path := base + "?type=TXT&name=_acme-challenge.example.com"
	pages := 0
	for path != "" {
		r := call(t, d, "tok", "GET", path, nil)
		got = append(got, r.records...)
		pages++
		path = r.next(t)
		if path != "" {
			path = strings.TrimPrefix(path, strings.TrimSuffix(d.URL, "/"))
		}
	}
	if pages != 2 || len(got) != 3 {
		t.Fatalf("%d pages, records %+v; want 2 pages and 3 records", pages, got)
	}
	for _, r := range got {
		if r.Name != "_acme-challenge" || r.Type != "TXT" {
			t.Fatalf("listed %+v", r)
		}
	}
	if r := call(t, d, "tok", "DELETE", base+"/"+strconv.Itoa(got[0].ID), nil); r.status != 204 {
		t.Fatalf("delete: %d", r.status)
	}
	if r := call(t, d, "tok", "DELETE", base+"/"+strconv.Itoa(got[0].ID), nil); r.status != 404 || r.errID != "not_found" {
		t.Fatalf("delete again: %d %q", r.status, r.errID)
	}
	if r := call(t, d, "tok", "GET", "/v2/domains/example.org/records", nil); r.status != 404 {
		t.Fatalf("unknown domain: %d", r.status)
	}
	if txt := d.TXT("example.com."); !slices.Equal(txt, []string{"v-@"}) {
		t.Fatalf("apex TXT %q", txt)
	}
	last := updates[len(updates)-1]
	if len(updates) != 5 || last.Name != "_acme-challenge.example.com." || len(last.Texts) != 2 {
		t.Fatalf("OnTXT updates %+v", updates)
	}
}

// Injected failures and rate limits answer once, in DigitalOcean's form.
func TestInjected(t *testing.T) {
	d := newDouble(t)
	d.RateLimit("domains.list", 1, time.Minute)
	d.Fail("", 1, 503, "service_unavailable")
	r := call(t, d, "tok", "GET", "/v2/domains", nil)
	reset, _ := strconv.ParseInt(r.header.Get("ratelimit-reset"), 10, 64)
	if r.status != 429 || r.errID != "too_many_requests" || r.header.Get("ratelimit-remaining") != "0" || reset < time.Now().Unix() {
		t.Fatalf("rate limit: %d %q %v", r.status, r.errID, r.header)
	}
	if r = call(t, d, "tok", "GET", "/v2/domains", nil); r.status != 503 {
		t.Fatalf("injected 503: %d", r.status)
	}
	if r = call(t, d, "tok", "GET", "/v2/domains", nil); r.status != 200 {
		t.Fatalf("after the injected failures: %d", r.status)
	}
}
