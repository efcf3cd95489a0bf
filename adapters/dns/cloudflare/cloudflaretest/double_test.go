package cloudflaretest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// response is Cloudflare's envelope as a client reads it.
type response struct {
	Success bool `json:"success"`
	Errors  []struct {
		Code       int    `json:"code"`
		Message    string `json:"message"`
		ErrorChain []struct {
			Code int `json:"code"`
		} `json:"error_chain"`
	} `json:"errors"`
	Result     json.RawMessage `json:"result"`
	ResultInfo struct {
		Page       int `json:"page"`
		PerPage    int `json:"per_page"`
		Count      int `json:"count"`
		TotalCount int `json:"total_count"`
		TotalPages int `json:"total_pages"`
	} `json:"result_info"`
	status int
	header http.Header
}

// call makes one request with headers h ("Authorization: Bearer tok" by
// default) and decodes the envelope.
func call(t *testing.T, d *Double, method, path string, body any, h map[string]string) response {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(d.URL, "/")+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if h == nil {
		h = map[string]string{"Authorization": "Bearer tok"}
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out response
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	out.status, out.header = res.StatusCode, res.Header
	return out
}

// code returns the first error code and its first chained code.
func (r response) code() (int, int) {
	if len(r.Errors) == 0 {
		return 0, 0
	}
	chain := 0
	if len(r.Errors[0].ErrorChain) > 0 {
		chain = r.Errors[0].ErrorChain[0].Code
	}
	return r.Errors[0].Code, chain
}

func newDouble(t *testing.T) (*Double, string) {
	d := New(t)
	d.AddToken("tok", "admin")
	d.AddKey("a@example.com", "global-key")
	return d, d.AddZone("example.com")
}

// Authentication: bearer token or X-Auth-Email + X-Auth-Key; each
// rejection with the status and code the reference documents.
func TestAuthentication(t *testing.T) {
	d, _ := newDouble(t)
	d.AddToken("denied", "denied")
	d.Deny("token:denied")
	for _, tc := range []struct {
		name         string
		h            map[string]string
		status, code int
		chain        int
	}{
		{"token", map[string]string{"Authorization": "Bearer tok"}, 200, 0, 0},
		{"global key", map[string]string{"X-Auth-Email": "a@example.com", "X-Auth-Key": "global-key"}, 200, 0, 0},
		{"no credentials", map[string]string{}, 400, 9106, 0},
		{"malformed authorization", map[string]string{"Authorization": "Basic abc"}, 400, 6003, 6111},
		{"unknown token", map[string]string{"Authorization": "Bearer nope"}, 401, 10000, 0},
		{"wrong key", map[string]string{"X-Auth-Email": "a@example.com", "X-Auth-Key": "other"}, 401, 10000, 0},
		{"key without email", map[string]string{"X-Auth-Key": "global-key"}, 400, 6003, 6102},
		{"denied token", map[string]string{"Authorization": "Bearer denied"}, 403, 10000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, d, "GET", "/zones", nil, tc.h)
			code, chain := r.code()
			if r.status != tc.status || code != tc.code || chain != tc.chain || r.Success != (tc.status == 200) {
				t.Fatalf("status %d codes %d/%d success %v; want %d %d/%d", r.status, code, chain, r.Success, tc.status, tc.code, tc.chain)
			}
		})
	}
	if c := d.Calls(); c[0].Credential != "token:admin" || c[1].Credential != "key:a@example.com" || c[2].Credential != "" {
		t.Fatalf("calls %+v", c[:3])
	}
}

// Records: create (full, relative and apex names), identical records
// refused, list filtered by type and name in pages with result_info,
// delete and unknown IDs, OnTXT with decoded values.
func TestRecords(t *testing.T) {
	d, zid := newDouble(t)
	d.PageSize = 2
	var updates []TXTUpdate
	d.OnTXT = func(u TXTUpdate) { updates = append(updates, u) }
	base := "/zones/" + zid + "/dns_records"
	create := func(name, content string, ttl int) response {
		return call(t, d, "POST", base, map[string]any{"type": "TXT", "name": name, "content": content, "ttl": ttl}, nil)
	}
	for _, c := range []struct{ name, content string }{
		{"_acme-challenge.example.com", `"a"`},
		{"_acme-challenge", `"b" "c"`},
		{"_ACME-challenge.example.com", "unquoted text"},
		{"@", `"apex"`},
	} {
		if r := create(c.name, c.content, 60); r.status != 200 || !r.Success {
			t.Fatalf("create %s %s: %d %+v", c.name, c.content, r.status, r.Errors)
		}
	}
	if r := create("_acme-challenge.example.com", `"a"`, 60); r.status != 400 || r.Errors[0].Code != 81058 {
		t.Fatalf("identical record: %d %+v, want 400 81058", r.status, r.Errors)
	}
	if r := create("x", `"a"`, 30); r.status != 400 || r.Errors[0].ErrorChain[0].Code != 9021 {
		t.Fatalf("TTL 30: %d %+v, want 400 1004/9021", r.status, r.Errors)
	}
	if r := create("x", `"`+strings.Repeat("L", 256)+`"`, 60); r.status != 400 || r.Errors[0].ErrorChain[0].Code != 9005 {
		t.Fatalf("a 256-octet string: %d %+v, want 400 1004/9005", r.status, r.Errors)
	}
	if got := d.TXT("_acme-challenge.example.com."); !slices.Equal(got, []string{"a", "bc", "unquoted text"}) {
		t.Fatalf("TXT = %q", got)
	}
	var ids []string
	for page := 1; ; page++ {
		r := call(t, d, "GET", base+"?type=TXT&name.exact=_acme-challenge.example.com&per_page=100&page="+strconv.Itoa(page), nil, nil)
		var recs []struct{ ID, Name, Type, Content string }
		if err := json.Unmarshal(r.Result, &recs); err != nil {
			t.Fatal(err)
		}
		if r.ResultInfo.Page != page || r.ResultInfo.PerPage != 2 || r.ResultInfo.TotalCount != 3 || r.ResultInfo.TotalPages != 2 || r.ResultInfo.Count != len(recs) {
			t.Fatalf("page %d result_info %+v", page, r.ResultInfo)
		}
		for _, rec := range recs {
			if rec.Name != "_acme-challenge.example.com" || rec.Type != "TXT" {
				t.Fatalf("listed %+v", rec)
			}
			ids = append(ids, rec.ID)
		}
		if page == r.ResultInfo.TotalPages {
			break
		}
	}
	if len(ids) != 3 {
		t.Fatalf("listed %d records over the pages, want 3", len(ids))
	}
	if r := call(t, d, "DELETE", base+"/"+ids[0], nil, nil); r.status != 200 {
		t.Fatalf("delete: %d %+v", r.status, r.Errors)
	}
	if r := call(t, d, "DELETE", base+"/"+ids[0], nil, nil); r.status != 404 || r.Errors[0].Code != 81044 {
		t.Fatalf("delete again: %d %+v, want 404 81044", r.status, r.Errors)
	}
	if r := call(t, d, "GET", "/zones/nope/dns_records", nil, nil); r.status != 404 || r.Errors[0].Code != 7003 {
		t.Fatalf("unknown zone: %d %+v, want 404 7003", r.status, r.Errors)
	}
	last := updates[len(updates)-1]
	if len(updates) != 5 || last.Name != "_acme-challenge.example.com." || len(last.Texts) != 2 {
		t.Fatalf("OnTXT updates %+v", updates)
	}
}

// Zones: exact name filter, status, pages.
func TestZones(t *testing.T) {
	d, _ := newDouble(t)
	d.AddZoneStatus("example.com", "pending")
	d.AddZone("example.org")
	d.PageSize = 1
	r := call(t, d, "GET", "/zones?name=example.com&page=2", nil, nil)
	var zones []struct{ ID, Name, Status string }
	if err := json.Unmarshal(r.Result, &zones); err != nil {
		t.Fatal(err)
	}
	if len(zones) != 1 || zones[0].Status != "pending" || r.ResultInfo.TotalCount != 2 || r.ResultInfo.TotalPages != 2 {
		t.Fatalf("page 2 of example.com: %+v %+v", zones, r.ResultInfo)
	}
	r = call(t, d, "GET", "/zones?name=example.com&status=active", nil, nil)
	if err := json.Unmarshal(r.Result, &zones); err != nil || len(zones) != 1 || zones[0].Status != "active" {
		t.Fatalf("active example.com: %+v %v", zones, err)
	}
}

// Injected failures and rate limits answer once, in Cloudflare's form.
func TestInjected(t *testing.T) {
	d, _ := newDouble(t)
	d.RateLimit("zones.list", 1, "12")
	d.Fail("", 1, 503, 10001)
	r := call(t, d, "GET", "/zones", nil, nil)
	if r.status != 429 || r.Errors[0].Code != 971 || r.header.Get("Retry-After") != "12" {
		t.Fatalf("rate limit: %d %+v %v", r.status, r.Errors, r.header)
	}
	if r = call(t, d, "GET", "/zones", nil, nil); r.status != 503 {
		t.Fatalf("injected 503: %d", r.status)
	}
	if r = call(t, d, "GET", "/zones", nil, nil); r.status != 200 {
		t.Fatalf("after the injected failures: %d", r.status)
	}
}
